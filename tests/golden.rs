//! Golden renders: for every example and every held-in test input, what
//! `attache render envoy`, `render xds`, `render ecds` and `render
//! wasmplugin` write is committed under tests/golden/<case>/, so a change
//! to the rendered configuration is a visible diff in review.
//!
//! `ATTACHE_BLESS=1 cargo test --test golden` rewrites the files from the
//! current renderer (then review the diff). Paths the outputs name are
//! fixed (`/golden/...`), so the files do not depend on where the test runs.
//!
//! Every golden Envoy configuration (the static bootstrap, and the xDS
//! layout's bootstrap with its listeners, routes and clusters put inline)
//! must also pass Envoy's own `--mode validate`, as tests/render_envoy.rs
//! says for Envoy and the filter (ATTACHE_SKIP_ENVOY=1 skips it knowingly).

// A test crate: its helpers fail the test by panicking, like its #[test]s.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod support;
use support::envoy::{inline_bootstrap, validate};
use support::{attache_ok, envoy_and_wasm, scratch, workspace};

/// The directory the outputs name in place of a real one.
const GOLDEN_ROOT: &str = "/golden";
/// Where the xDS layout's bootstrap expects the ECDS file (`--xds-dir`
/// implies it); the static bootstrap is given the same path.
const ECDS: &str = "/golden/xds/ecds/attache-ecds.json";
const WASM: &str = "/golden/attache_filter.wasm";
const XDS_DIR: &str = "/golden/xds";
/// The dynamic module's renders (`--filter dynamic-module`), for one case:
/// the same documents as the `.wasm`'s, in the other filter's configuration.
const MODULE: &str = "/golden/libattache_module.so";
const MODULE_ECDS: &str = "/golden/module/ecds.json";
const MODULE_CASE: &str = "e2e-basics";

/// (case, input, Gateway, with the xDS layout): every example and every
/// held-in input that renders a Gateway. `render xds` refuses an HTTPS
/// listener whose Secret is not in the input (the HTTPS examples make it
/// with their make-secret.sh), so those cases have no xDS files.
const CASES: &[(&str, &str, &str, bool)] = &[
    ("examples-shop", "examples/shop", "infra/edge", true),
    ("examples-grpc", "examples/grpc", "infra/grpc-edge", false),
    ("examples-https", "examples/https", "infra/edge", false),
    (
        "examples-strategies",
        "examples/strategies",
        "infra/edge",
        true,
    ),
    (
        "examples-peers-envoy-gateway",
        "examples/peers/envoy-gateway",
        "apps/eg",
        true,
    ),
    (
        "examples-peers-kgateway",
        "examples/peers/kgateway",
        "shop/edge",
        true,
    ),
    (
        "e2e-basics",
        "tests/fixtures/e2e/basics",
        "infra/edge",
        true,
    ),
    (
        "e2e-gep1731",
        "tests/fixtures/e2e/gep1731",
        "infra/edge",
        true,
    ),
    ("e2e-grpc", "tests/fixtures/e2e/grpc", "infra/edge", true),
    (
        "e2e-listener-sets",
        "tests/fixtures/e2e/listener_sets",
        "infra/edge",
        true,
    ),
    (
        "e2e-matching",
        "tests/fixtures/e2e/matching",
        "infra/edge",
        true,
    ),
    (
        "e2e-precedence",
        "tests/fixtures/e2e/precedence",
        "infra/edge",
        true,
    ),
    (
        "e2e-reload",
        "tests/fixtures/e2e/reload",
        "infra/edge",
        true,
    ),
    ("e2e-xds", "tests/fixtures/e2e/xds", "infra/edge", true),
    (
        "cli-shop",
        "tests/fixtures/cli/shop.yaml",
        "infra/edge",
        true,
    ),
];

fn golden_dir(case: &str) -> PathBuf {
    workspace().join("tests/golden").join(case)
}

/// Every file one case renders: relative path -> bytes.
fn render(
    input: &str,
    gateway: &str,
    xds_layout: bool,
    scratch_dir: &Path,
) -> BTreeMap<String, Vec<u8>> {
    let common = ["-f", input, "--gateway", gateway];
    let backend = ["--backend", "*=127.0.0.1:9000"];
    let run = |args: &[&str]| -> Vec<u8> {
        let all: Vec<&str> = args.iter().chain(&common).copied().collect();
        attache_ok(&all).stdout
    };
    let mut files = BTreeMap::new();
    let envoy = [
        &["render", "envoy", "--ecds", ECDS, "--wasm", WASM][..],
        &backend,
    ]
    .concat();
    files.insert("envoy.yaml".into(), run(&envoy));
    // Written as a user writes it, to a file: its name picks JSON, which
    // Envoy reads several times cheaper than YAML (docs/envoy.md).
    let ecds = scratch_dir.with_extension("ecds.json");
    run(&[
        "render",
        "ecds",
        "--wasm",
        WASM,
        "-o",
        &ecds.to_string_lossy(),
    ]);
    files.insert("ecds.json".into(), std::fs::read(&ecds).unwrap());
    std::fs::remove_file(&ecds).unwrap();
    files.insert("wasmplugin.yaml".into(), run(&["render", "wasmplugin"]));
    if !xds_layout {
        return files;
    }
    files.insert(
        "xds/envoy.yaml".into(),
        run(&["render", "envoy", "--xds-dir", XDS_DIR]),
    );
    let out = scratch_dir.to_string_lossy().into_owned();
    let xds = [
        &[
            "render",
            "xds",
            "--ecds",
            ECDS,
            "--xds-dir",
            XDS_DIR,
            "--output-dir",
            &out,
        ][..],
        &backend,
    ]
    .concat();
    run(&xds);
    for path in files_under(scratch_dir) {
        let rel = path
            .strip_prefix(scratch_dir)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        files.insert(format!("xds/{rel}"), std::fs::read(&path).unwrap());
    }
    files
}

/// `render envoy` and `render ecds` with the dynamic module, under `module/`.
fn render_module(input: &str, gateway: &str, scratch_dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let flags = ["--filter", "dynamic-module", "--module", MODULE];
    let common = ["-f", input, "--gateway", gateway];
    let ecds = scratch_dir.with_extension("module-ecds.json");
    let ecds_out = ecds.to_string_lossy().into_owned();
    let envoy = [
        &[
            "render",
            "envoy",
            "--ecds",
            MODULE_ECDS,
            "--backend",
            "*=127.0.0.1:9000",
        ][..],
        &flags,
        &common,
    ]
    .concat();
    let mut files = BTreeMap::new();
    files.insert("module/envoy.yaml".into(), attache_ok(&envoy).stdout);
    attache_ok(&[&["render", "ecds", "-o", &ecds_out][..], &flags, &common].concat());
    files.insert("module/ecds.json".into(), std::fs::read(&ecds).unwrap());
    std::fs::remove_file(&ecds).unwrap();
    files
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out.sort();
    out
}

#[test]
fn renders_match_the_golden_files() {
    let bless = std::env::var_os("ATTACHE_BLESS").is_some_and(|v| v == "1");
    let root = scratch("golden");
    let mut problems = Vec::new();
    for (i, (case, input, gateway, xds)) in CASES.iter().enumerate() {
        let mut rendered = render(input, gateway, *xds, &root.join(i.to_string()));
        if *case == MODULE_CASE {
            rendered.extend(render_module(input, gateway, &root.join(i.to_string())));
        }
        let dir = golden_dir(case);
        if bless {
            let _ = std::fs::remove_dir_all(&dir);
            for (rel, bytes) in &rendered {
                let path = dir.join(rel);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, bytes).unwrap();
            }
            continue;
        }
        let committed: Vec<String> = files_under(&dir)
            .iter()
            .map(|p| p.strip_prefix(&dir).unwrap().to_string_lossy().into_owned())
            .collect();
        for rel in &committed {
            if !rendered.contains_key(rel) {
                problems.push(format!("tests/golden/{case}/{rel}: no longer rendered"));
            }
        }
        for (rel, bytes) in &rendered {
            match std::fs::read(dir.join(rel)) {
                Ok(golden) if &golden == bytes => {}
                Ok(_) => problems.push(format!("tests/golden/{case}/{rel}: the render differs")),
                Err(_) => problems.push(format!("tests/golden/{case}/{rel}: not committed")),
            }
        }
    }
    let _ = std::fs::remove_dir_all(&root);
    assert!(
        problems.is_empty(),
        "{}\nif the change is intended, run ATTACHE_BLESS=1 cargo test --test golden and review the diff",
        problems.join("\n")
    );
}

#[test]
fn every_golden_envoy_configuration_is_valid() {
    let Some((envoy, wasm)) = envoy_and_wasm("golden Envoy configurations not validated") else {
        return;
    };
    let module = support::filter_module();
    let root = scratch("golden-validate");
    for (case, _, _, xds_layout) in CASES {
        // The committed files with /golden standing for a real directory
        // that holds them, and the real filter.
        let dir = root.join(case);
        let here = dir.to_string_lossy().into_owned();
        let golden = golden_dir(case);
        for path in files_under(&golden) {
            let rel = path.strip_prefix(&golden).unwrap();
            let text = std::fs::read_to_string(&path).unwrap();
            let text = text
                .replace(WASM, &wasm.to_string_lossy())
                .replace(MODULE, &module.to_string_lossy())
                .replace(GOLDEN_ROOT, &here);
            let at = dir.join(rel);
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::fs::write(at, text).unwrap();
        }
        // Both bootstraps read the ECDS file from the xDS layout's place.
        std::fs::create_dir_all(dir.join("xds/ecds")).unwrap();
        std::fs::copy(
            dir.join("ecds.json"),
            dir.join("xds/ecds/attache-ecds.json"),
        )
        .unwrap();
        validate(&envoy, &dir.join("envoy.yaml"));
        if *case == MODULE_CASE {
            validate(&envoy, &dir.join("module/envoy.yaml"));
        }
        if !xds_layout {
            continue;
        }
        validate(&envoy, &dir.join("xds/envoy.yaml"));
        let inline = dir.join("xds/inline.json");
        std::fs::write(&inline, inline_bootstrap(&dir.join("xds")).to_string()).unwrap();
        validate(&envoy, &inline);
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_changed_render_is_caught() {
    // The comparison can fail: a golden file with one byte changed differs.
    let (case, input, gateway, xds) = CASES[0];
    let rendered = render(input, gateway, xds, &scratch("golden-changed"));
    let golden = std::fs::read(golden_dir(case).join("envoy.yaml")).unwrap();
    assert_eq!(rendered["envoy.yaml"], golden);
    let mut changed = golden.clone();
    changed[0] ^= 1;
    assert_ne!(rendered["envoy.yaml"], changed);
}
