//! Golden renders: for every example and every held-in test input, what
//! `attache render envoy`, `render xds`, `render ecds`, `render
//! wasmplugin` and `render trafficextension` write (and, for one case, the
//! dynamic module's renders) is committed under
//! tests/golden/<case>/, so a change to the rendered configuration is a
//! visible diff in review. The cases are the directories there: each says
//! its input and Gateway in a `case.json`, so a new case is a new directory.
//!
//! A render that differs fails with a unified diff of each file that moved.
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
use support::diff::unified;
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

/// What each case directory holds besides the renders: its input and
/// Gateway, read by the test so that a new case is a new directory.
const CASE_FILE: &str = "case.json";

/// One case's `case.json`. `xds: false` leaves out the xDS layout: `render
/// xds` refuses an HTTPS listener whose Secret is not in the input (the
/// HTTPS examples make it with their make-secret.sh); `why` says so there.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    #[serde(skip)]
    name: String,
    input: String,
    gateway: String,
    xds: bool,
    #[serde(default, rename = "why")]
    _why: Option<String>,
}

/// Every case under `root`, by directory name; an error names each
/// directory whose description is missing or unreadable.
fn read_cases(root: &Path) -> Result<Vec<Case>, String> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .map_err(|e| format!("{}: {e}", root.display()))?
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .collect();
    dirs.sort();
    let mut cases = Vec::new();
    let mut problems = Vec::new();
    for dir in dirs {
        let file = dir.join(CASE_FILE);
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let parsed = std::fs::read_to_string(&file)
            .map_err(|e| e.to_string())
            .and_then(|text| serde_json::from_str::<Case>(&text).map_err(|e| e.to_string()));
        match parsed {
            Ok(case) => cases.push(Case { name, ..case }),
            Err(e) => problems.push(format!(
                "{}: {e}; each case directory describes itself, e.g. \
                 {{\"input\": \"examples/shop\", \"gateway\": \"infra/edge\", \"xds\": true}}",
                file.display()
            )),
        }
    }
    if problems.is_empty() {
        Ok(cases)
    } else {
        Err(problems.join("\n"))
    }
}

fn cases() -> Vec<Case> {
    read_cases(&workspace().join("tests/golden")).unwrap_or_else(|e| panic!("{e}"))
}

fn golden_dir(case: &str) -> PathBuf {
    workspace().join("tests/golden").join(case)
}

/// Every file one case renders: relative path -> bytes.
fn render(case: &Case, scratch_dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let common = ["-f", &case.input, "--gateway", &case.gateway];
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
    files.insert(
        "trafficextension.yaml".into(),
        run(&["render", "trafficextension"]),
    );
    if !case.xds {
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

/// `render envoy`, `render ecds`, `render envoyextensionpolicy` and `render
/// envoyfilter` with the dynamic module, under `module/`.
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
    // The objects that deliver the module on Envoy Gateway and on Istio
    // (tests/render_module_objects.rs checks them against their schemas).
    let module = ["--module", MODULE];
    let eg = [
        &[
            "render",
            "envoyextensionpolicy",
            "--envoy-proxy",
            "envoy-gateway-system/proxy",
        ][..],
        &module,
        &common,
    ]
    .concat();
    files.insert(
        "module/envoyextensionpolicy.yaml".into(),
        attache_ok(&eg).stdout,
    );
    let istio = [&["render", "envoyfilter"][..], &module, &common].concat();
    files.insert("module/envoyfilter.yaml".into(), attache_ok(&istio).stdout);
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

/// Lines of one file's diff shown before the rest is cut (blessing and
/// `git diff` show all of it); a renderer change can touch every case.
const MAX_DIFF_LINES: usize = 120;

/// What is wrong with one case's committed files against `rendered`: a
/// unified diff per file that differs, and the files gained or lost.
fn compare(case: &str, dir: &Path, rendered: &BTreeMap<String, Vec<u8>>) -> Vec<String> {
    let mut problems = Vec::new();
    for path in files_under(dir) {
        let rel = path
            .strip_prefix(dir)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if rel != CASE_FILE && !rendered.contains_key(&rel) {
            problems.push(format!("tests/golden/{case}/{rel}: no longer rendered"));
        }
    }
    for (rel, bytes) in rendered {
        let name = format!("tests/golden/{case}/{rel}");
        match std::fs::read(dir.join(rel)) {
            Ok(golden) if &golden == bytes => {}
            Ok(golden) => {
                let diff = unified(
                    &String::from_utf8_lossy(&golden),
                    &String::from_utf8_lossy(bytes),
                    &name,
                    &format!("{name} (rendered)"),
                );
                let lines: Vec<&str> = diff.lines().collect();
                let mut shown = lines[..lines.len().min(MAX_DIFF_LINES)].join("\n");
                if lines.len() > MAX_DIFF_LINES {
                    let more = lines.len() - MAX_DIFF_LINES;
                    shown.push_str(&format!("\n... {more} more lines of diff"));
                }
                problems.push(format!("{name}: the render differs\n{shown}"));
            }
            Err(_) => problems.push(format!("{name}: not committed")),
        }
    }
    problems
}

/// Rewrites one case's renders, keeping its description.
fn bless(dir: &Path, rendered: &BTreeMap<String, Vec<u8>>) {
    for path in files_under(dir) {
        if path != dir.join(CASE_FILE) {
            std::fs::remove_file(path).unwrap();
        }
    }
    for (rel, bytes) in rendered {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
    }
}

#[test]
fn renders_match_the_golden_files() {
    let bless_them = std::env::var_os("ATTACHE_BLESS").is_some_and(|v| v == "1");
    let root = scratch("golden");
    let mut problems = Vec::new();
    for (i, case) in cases().iter().enumerate() {
        let mut rendered = render(case, &root.join(i.to_string()));
        if case.name == MODULE_CASE {
            rendered.extend(render_module(
                &case.input,
                &case.gateway,
                &root.join(i.to_string()),
            ));
        }
        let dir = golden_dir(&case.name);
        if bless_them {
            bless(&dir, &rendered);
        } else {
            problems.extend(compare(&case.name, &dir, &rendered));
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
    for case in cases() {
        // The committed files with /golden standing for a real directory
        // that holds them, and the real filter.
        let dir = root.join(&case.name);
        let here = dir.to_string_lossy().into_owned();
        let golden = golden_dir(&case.name);
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
        if case.name == MODULE_CASE {
            validate(&envoy, &dir.join("module/envoy.yaml"));
        }
        if !case.xds {
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
fn a_changed_render_is_caught_with_a_diff() {
    // The comparison can fail, and says where: one changed line of a
    // committed file is reported as that line removed and its render added.
    let cases = cases();
    let case = &cases[0];
    let rendered = render(case, &scratch("golden-changed"));
    let dir = golden_dir(&case.name);
    assert_eq!(compare(&case.name, &dir, &rendered), Vec::<String>::new());
    let copy = scratch("golden-changed-copy");
    for path in files_under(&dir) {
        let at = copy.join(path.strip_prefix(&dir).unwrap());
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::copy(&path, at).unwrap();
    }
    let text = std::fs::read_to_string(copy.join("envoy.yaml")).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let line = lines[10].clone();
    lines[10].push_str(" # changed");
    std::fs::write(copy.join("envoy.yaml"), lines.join("\n") + "\n").unwrap();
    std::fs::remove_file(copy.join("wasmplugin.yaml")).unwrap();
    let problems = compare(&case.name, &copy, &rendered);
    let _ = std::fs::remove_dir_all(&copy);
    assert_eq!(problems.len(), 2, "{problems:#?}");
    let diff = &problems[0];
    assert!(diff.contains("envoy.yaml: the render differs"), "{diff}");
    assert!(
        diff.contains(&format!("\n-{line} # changed\n+{line}\n")),
        "{diff}"
    );
    assert!(diff.contains("@@ -8,7 +8,7 @@"), "{diff}");
    assert!(problems[1].ends_with("wasmplugin.yaml: not committed"));
}

#[test]
fn a_case_directory_without_its_description_is_refused() {
    let root = scratch("golden-cases");
    std::fs::create_dir_all(root.join("good")).unwrap();
    std::fs::write(
        root.join("good").join(CASE_FILE),
        r#"{"input": "examples/shop", "gateway": "infra/edge", "xds": true}"#,
    )
    .unwrap();
    let good = read_cases(&root).unwrap();
    assert_eq!(good.len(), 1);
    assert_eq!((good[0].name.as_str(), good[0].xds), ("good", true));
    std::fs::create_dir_all(root.join("bare")).unwrap();
    std::fs::create_dir_all(root.join("typo")).unwrap();
    std::fs::write(
        root.join("typo").join(CASE_FILE),
        r#"{"input": "x", "gatway": "a/b", "xds": true}"#,
    )
    .unwrap();
    let err = read_cases(&root).unwrap_err();
    let _ = std::fs::remove_dir_all(&root);
    assert!(err.contains("bare/case.json: "), "{err}");
    assert!(err.contains("unknown field `gatway`"), "{err}");
    assert!(
        err.contains("each case directory describes itself"),
        "{err}"
    );
}

#[test]
fn the_diff_aligns_lines_and_marks_a_missing_final_newline() {
    assert_eq!(unified("a\n", "a\n", "x", "y"), "");
    let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n";
    let new = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n11\n12\n13";
    assert_eq!(
        unified(old, new, "old", "new"),
        "--- old\n+++ new\n\
         @@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n\
         @@ -10,3 +10,4 @@\n 10\n 11\n 12\n+13\n\\ No newline at end of file\n"
    );
    // Only added lines: the empty old range names the line before it.
    assert_eq!(
        unified("a\n", "a\nb\n", "o", "n"),
        "--- o\n+++ n\n@@ -1 +1,2 @@\n a\n+b\n"
    );
}
