//! The committed Envoy configuration (envoy/: the file-based xDS bootstrap,
//! the LDS, RDS and CDS files, the ECDS file) is what the generator renders
//! from examples/shop, byte for byte, and Envoy's own `--mode validate`
//! accepts every bootstrap the generator renders, static or file-based, and
//! the listeners, routes and clusters of the xDS files.
//!
//! Validation needs an Envoy (ENVOY_BIN, or .venv/bin/envoy as
//! scripts/setup.sh installs it) and the filter's .wasm (ATTACHE_WASM, or the
//! release build under the target directory): Envoy loads the module and
//! hands it the document even in validate mode. Without them the test fails
//! and says so; set ATTACHE_SKIP_ENVOY=1 to skip it knowingly.

// A test crate: its helpers fail the test by panicking, like its #[test]s.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::path::{Path, PathBuf};

mod support;
use support::envoy::{inline_bootstrap, json_file, validate};
use support::{attache_ok as attache, envoy_and_wasm, scratch, workspace};

const GATEWAY: &str = "infra/edge";
/// Container paths of docker-compose.yml, as envoy/README.md documents.
const COMPOSE_XDS: &str = "/var/run/attache";
const COMPOSE_ECDS: &str = "/var/run/attache/ecds/attache-ecds.json";
const COMPOSE_WASM: &str = "/opt/attache/attache_filter.wasm";
/// The xDS files envoy/xds holds, relative to the xDS directory.
const XDS_FILES: [&str; 4] = [
    "lds/listeners.json",
    "cds/clusters.json",
    "rds/http+deals~deals-edge~http/routes.json",
    "rds/admin/routes.json",
];

/// The exact commands envoy/README.md gives for regenerating envoy/.
fn compose_bootstrap() -> Vec<u8> {
    attache(&[
        "render",
        "envoy",
        "-f",
        "examples/shop",
        "--gateway",
        GATEWAY,
        "--xds-dir",
        COMPOSE_XDS,
        "--admin-address",
        "0.0.0.0",
    ])
    .stdout
}

/// `attache render xds` for the compose paths, written into `dir`.
fn compose_xds(dir: &Path) {
    attache(&[
        "render",
        "xds",
        "-f",
        "examples/shop",
        "--gateway",
        GATEWAY,
        "--xds-dir",
        COMPOSE_XDS,
        "--ecds",
        COMPOSE_ECDS,
        "--listener-port",
        "http=8080",
        "--output-dir",
        &dir.to_string_lossy(),
    ]);
}

/// The ECDS file as envoy/README.md renders it: to a `.json` file, so JSON.
/// `label` keeps two tests running at once out of each other's directory.
fn compose_ecds(label: &str) -> Vec<u8> {
    let dir = scratch(label);
    let path = dir.join("attache-ecds.json");
    attache(&[
        "render",
        "ecds",
        "-f",
        "examples/shop",
        "--gateway",
        GATEWAY,
        "--wasm",
        COMPOSE_WASM,
        "-o",
        &path.to_string_lossy(),
    ]);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let _ = std::fs::remove_dir_all(&dir);
    bytes
}

fn assert_same(committed: &str, rendered: &[u8]) {
    let path = workspace().join(committed);
    let on_disk = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        on_disk == rendered,
        "{committed} differs from what the generator renders now; regenerate it with the commands in envoy/README.md\n--- rendered ---\n{}",
        String::from_utf8_lossy(rendered)
    );
}

#[test]
fn committed_bootstrap_is_what_the_generator_renders() {
    assert_same("envoy/envoy.yaml", &compose_bootstrap());
}

#[test]
fn committed_ecds_file_is_what_the_generator_renders() {
    assert_same(
        "envoy/xds/ecds/attache-ecds.json",
        &compose_ecds("compose-ecds"),
    );
}

#[test]
fn committed_xds_files_are_what_the_generator_renders() {
    let dir = scratch("compose-xds");
    compose_xds(&dir);
    for file in XDS_FILES {
        let rendered = std::fs::read(dir.join(file)).expect("rendered xds file");
        assert_same(&format!("envoy/xds/{file}"), &rendered);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The resources of a committed `DiscoveryResponse` file under envoy/xds.
fn committed_resources(file: &str) -> Vec<serde_json::Value> {
    json_file(&workspace().join("envoy/xds").join(file))["resources"]
        .as_array()
        .expect("resources")
        .clone()
}

#[test]
fn committed_configuration_serves_the_compose_ports_and_dns_backend() {
    let bootstrap: serde_json::Value =
        serde_yaml_ng::from_slice(&compose_bootstrap()).expect("YAML");
    assert!(bootstrap.get("static_resources").is_none());
    assert_eq!(
        bootstrap["dynamic_resources"]["lds_config"]["path_config_source"]["path"],
        "/var/run/attache/lds/listeners.json"
    );
    let listeners = committed_resources("lds/listeners.json");
    let ports: Vec<(&str, u64)> = listeners
        .iter()
        .filter_map(|l| {
            let port = l["address"]["socket_address"]["port_value"].as_u64()?;
            Some((l["name"].as_str()?, port))
        })
        .collect();
    assert_eq!(
        ports,
        [("admin", 8081), ("http+deals~deals-edge~http", 8080)],
        "http moved to 8080 with the deals ListenerSet's listener on its port; admin keeps its own"
    );
    assert_eq!(
        bootstrap["admin"]["address"]["socket_address"]["port_value"],
        9901
    );
    for cluster in committed_resources("cds/clusters.json") {
        assert_eq!(cluster["type"], "STRICT_DNS", "{cluster}");
        let address = &cluster["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]
            ["address"]["socket_address"];
        assert_eq!(
            (address["address"].as_str(), address["port_value"].as_u64()),
            (Some("backend"), Some(9000))
        );
    }
}

/// Renders ECDS and bootstrap for `input` into `dir` with local paths.
fn render_local(input: &Path, wasm: &Path, dir: &Path) -> PathBuf {
    let ecds = dir.join("attache-ecds.json");
    let bootstrap = dir.join("envoy.yaml");
    let (input, wasm, ecds_text) = (
        input.to_string_lossy(),
        wasm.to_string_lossy(),
        ecds.to_string_lossy(),
    );
    attache(&[
        "render",
        "ecds",
        "-f",
        &input,
        "--gateway",
        GATEWAY,
        "--wasm",
        &wasm,
        "-o",
        &ecds_text,
    ]);
    attache(&[
        "render",
        "envoy",
        "-f",
        &input,
        "--gateway",
        GATEWAY,
        "--ecds",
        &ecds_text,
        "--wasm",
        &wasm,
        "--backend",
        "*=127.0.0.1:9000",
        "--listener-port",
        "http=18080",
        "--admin-port",
        "19901",
        "-o",
        &bootstrap.to_string_lossy(),
    ]);
    bootstrap
}

#[test]
fn envoy_validates_every_rendered_bootstrap() {
    let Some((envoy, wasm)) = envoy_and_wasm("Envoy validation skipped") else {
        return;
    };
    let root = scratch("validate");
    let mut inputs = vec![workspace().join("examples/shop")];
    if let Ok(fixtures) = std::fs::read_dir(workspace().join("tests/fixtures/e2e")) {
        let mut dirs: Vec<PathBuf> = fixtures
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        inputs.extend(dirs);
    }
    for (i, input) in inputs.iter().enumerate() {
        let dir = root.join(i.to_string());
        std::fs::create_dir_all(&dir).expect("dir");
        validate(&envoy, &render_local(input, &wasm, &dir));
    }

    // The committed compose configuration itself, with only its container
    // paths swapped for local ones (the paths must exist for Envoy to
    // validate): the file-based bootstrap, and its listeners, routes and
    // clusters put inline, which Envoy validates as thoroughly as it would
    // load them (validate mode does not read xDS files).
    let dir = root.join("compose");
    let local = |text: &str| text.replace(COMPOSE_XDS, &dir.to_string_lossy());
    for file in XDS_FILES.iter().chain(&["../envoy.yaml"]) {
        let text = std::fs::read_to_string(workspace().join("envoy/xds").join(file))
            .unwrap_or_else(|e| panic!("envoy/xds/{file}: {e}"));
        let path = dir.join(file.trim_start_matches("../"));
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        std::fs::write(&path, local(&text)).expect("write");
    }
    let committed = std::fs::read_to_string(dir.join("envoy.yaml")).expect("bootstrap");
    assert!(committed.contains(&*dir.to_string_lossy()), "{committed}");
    let ecds = String::from_utf8(compose_ecds("compose-ecds-validate"))
        .expect("utf-8")
        .replace(COMPOSE_WASM, &wasm.to_string_lossy());
    std::fs::create_dir_all(dir.join("ecds")).expect("dir");
    std::fs::write(dir.join("ecds/attache-ecds.json"), ecds).expect("write ecds");
    assert!(COMPOSE_ECDS.ends_with("/ecds/attache-ecds.json"));
    validate(&envoy, &dir.join("envoy.yaml"));
    let inline = dir.join("inline.json");
    std::fs::write(&inline, inline_bootstrap(&dir).to_string()).expect("write");
    validate(&envoy, &inline);
    let _ = std::fs::remove_dir_all(&root);
}
