//! The committed Envoy configuration (envoy/) is what the generator renders
//! from examples/shop, byte for byte, and Envoy's own `--mode validate`
//! accepts every bootstrap the generator renders.
//!
//! Validation needs an Envoy (ENVOY_BIN, or .venv/bin/envoy as
//! scripts/setup.sh installs it) and the filter's .wasm (ATTACHE_WASM, or the
//! release build under the target directory): Envoy loads the module and
//! hands it the document even in validate mode. Without them the test fails
//! and says so; set ATTACHE_SKIP_ENVOY=1 to skip it knowingly.

// A test crate: its helpers fail the test by panicking, like its #[test]s.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

mod support;
use support::{attache_ok as attache, envoy_and_wasm, scratch, workspace};

const GATEWAY: &str = "infra/edge";
/// Container paths of docker-compose.yml, as envoy/README.md documents.
const COMPOSE_ECDS: &str = "/var/run/attache/attache-ecds.yaml";
const COMPOSE_WASM: &str = "/opt/attache/attache_filter.wasm";

/// The exact commands envoy/README.md gives for regenerating envoy/.
fn compose_bootstrap() -> Vec<u8> {
    attache(&[
        "render",
        "envoy",
        "-f",
        "examples/shop",
        "--gateway",
        GATEWAY,
        "--ecds",
        COMPOSE_ECDS,
        "--wasm",
        COMPOSE_WASM,
        "--listener-port",
        "http=8080",
        "--admin-address",
        "0.0.0.0",
    ])
    .stdout
}

fn compose_ecds() -> Vec<u8> {
    attache(&[
        "render",
        "ecds",
        "-f",
        "examples/shop",
        "--gateway",
        GATEWAY,
        "--wasm",
        COMPOSE_WASM,
    ])
    .stdout
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
    assert_same("envoy/attache-ecds.yaml", &compose_ecds());
}

#[test]
fn committed_bootstrap_serves_the_compose_ports_and_dns_backend() {
    let bootstrap: serde_json::Value =
        serde_yaml_ng::from_slice(&compose_bootstrap()).expect("YAML");
    let listeners = bootstrap["static_resources"]["listeners"]
        .as_array()
        .expect("listeners");
    let ports: Vec<u64> = listeners
        .iter()
        .filter_map(|l| l["address"]["socket_address"]["port_value"].as_u64())
        .collect();
    assert_eq!(
        ports,
        [8080, 8081],
        "http moved to 8080, admin keeps its own port"
    );
    assert_eq!(
        bootstrap["admin"]["address"]["socket_address"]["port_value"],
        9901
    );
    for cluster in bootstrap["static_resources"]["clusters"]
        .as_array()
        .expect("clusters")
    {
        assert_eq!(cluster["type"], "STRICT_DNS", "{cluster}");
        let address = &cluster["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]
            ["address"]["socket_address"];
        assert_eq!(
            (address["address"].as_str(), address["port_value"].as_u64()),
            (Some("backend"), Some(9000))
        );
    }
}

fn validate(envoy: &Path, bootstrap: &Path) {
    let output = Command::new(envoy)
        .args(["--mode", "validate", "--log-level", "warn", "-c"])
        .arg(bootstrap)
        .output()
        .expect("run envoy");
    assert!(
        output.status.success(),
        "envoy --mode validate rejected {}:\n{}{}",
        bootstrap.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Renders ECDS and bootstrap for `input` into `dir` with local paths.
fn render_local(input: &Path, wasm: &Path, dir: &Path) -> PathBuf {
    let ecds = dir.join("attache-ecds.yaml");
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

    // The committed compose bootstrap itself, with only its container paths
    // swapped for local ones (the paths must exist for Envoy to validate).
    let dir = root.join("compose");
    std::fs::create_dir_all(&dir).expect("dir");
    let local_ecds = dir.join("attache-ecds.yaml");
    let wasm_text = wasm.to_string_lossy();
    let ecds = String::from_utf8(compose_ecds())
        .expect("utf-8")
        .replace(COMPOSE_WASM, &wasm_text);
    std::fs::write(&local_ecds, ecds).expect("write ecds");
    let committed =
        std::fs::read_to_string(workspace().join("envoy/envoy.yaml")).expect("envoy/envoy.yaml");
    assert!(committed.contains(COMPOSE_ECDS) && committed.contains(COMPOSE_WASM));
    let local = committed
        .replace(COMPOSE_ECDS, &local_ecds.to_string_lossy())
        .replace(
            "path: /var/run/attache\n",
            &format!("path: {}\n", dir.display()),
        )
        .replace(COMPOSE_WASM, &wasm_text);
    let bootstrap = dir.join("envoy.yaml");
    std::fs::write(&bootstrap, local).expect("write bootstrap");
    validate(&envoy, &bootstrap);
    let _ = std::fs::remove_dir_all(&root);
}
