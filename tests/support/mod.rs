//! Helpers the CLI and render integration tests share: where the workspace
//! is, running the `attache` that cargo built for this test run, scratch
//! directories, and finding Envoy and the filter for tests that start one.
//! (The e2e suite has its own harness: it never skips.)

// Each test crate uses its own subset.
#![allow(dead_code)]

pub mod diff;
pub mod envoy;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn fixture(name: &str) -> PathBuf {
    workspace().join("tests/fixtures/cli").join(name)
}

/// Runs the CLI from the workspace root, whatever its exit code.
pub fn attache(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_attache"))
        .current_dir(workspace())
        .args(args)
        .output()
        .expect("run attache")
}

/// Runs the CLI and fails the test, with its stderr, unless it succeeds.
pub fn attache_ok(args: &[&str]) -> Output {
    let output = attache(args);
    assert!(
        output.status.success(),
        "attache {} failed:\n{}",
        args.join(" "),
        text(&output.stderr)
    );
    output
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// An empty directory of this test process's own.
pub fn scratch(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("attache-test-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Envoy and the filter `.wasm` for a test that runs Envoy. `None` when
/// ATTACHE_SKIP_ENVOY=1 (then `skipped` says what went unchecked); fails
/// naming what is missing otherwise, so that no check passes silently.
pub fn envoy_and_wasm(skipped: &str) -> Option<(PathBuf, PathBuf)> {
    if std::env::var_os("ATTACHE_SKIP_ENVOY").is_some_and(|v| v == "1") {
        eprintln!("ATTACHE_SKIP_ENVOY=1: {skipped}");
        return None;
    }
    let envoy = std::env::var_os("ENVOY_BIN")
        .map_or_else(|| workspace().join(".venv/bin/envoy"), PathBuf::from);
    assert!(
        envoy.is_file(),
        "no Envoy at {}: run scripts/setup.sh, or set ENVOY_BIN, or set ATTACHE_SKIP_ENVOY=1 to skip this check",
        envoy.display()
    );
    Some((envoy, filter_wasm()))
}

/// The filter `.wasm` scripts/setup.sh builds (or ATTACHE_WASM); fails
/// naming where it looked.
pub fn filter_wasm() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| workspace().join("target"), PathBuf::from);
    let candidates: Vec<PathBuf> = match std::env::var_os("ATTACHE_WASM") {
        Some(wasm) => vec![PathBuf::from(wasm)],
        None => [target, workspace().join("target")]
            .iter()
            .map(|t| t.join("wasm32-wasip1/release/attache_filter.wasm"))
            .collect(),
    };
    candidates.iter().find(|w| w.is_file()).cloned().unwrap_or_else(|| {
        panic!(
            "no filter .wasm at {candidates:?}: run scripts/setup.sh or `cargo build --release --target wasm32-wasip1 -p attache-filter`, set ATTACHE_WASM, or set ATTACHE_SKIP_ENVOY=1 to skip the checks that need Envoy"
        )
    })
}

/// The dynamic module scripts/setup.sh builds (or ATTACHE_MODULE); fails
/// naming where it looked.
pub fn filter_module() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| workspace().join("target"), PathBuf::from);
    let candidates: Vec<PathBuf> = match std::env::var_os("ATTACHE_MODULE") {
        Some(module) => vec![PathBuf::from(module)],
        None => [target, workspace().join("target")]
            .iter()
            .map(|t| t.join("release/libattache_module.so"))
            .collect(),
    };
    candidates.iter().find(|m| m.is_file()).cloned().unwrap_or_else(|| {
        panic!(
            "no dynamic module at {candidates:?}: run scripts/setup.sh or `cargo build --release -p attache-module`, set ATTACHE_MODULE, or set ATTACHE_SKIP_ENVOY=1 to skip the checks that need Envoy"
        )
    })
}

/// Copies the files of one directory (not recursive) into `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// A Gateway `a/gw` with `routes` HTTPRoutes, each with a RoutePolicy of
/// its own: input whose ECDS file is tens of KB per 500 routes.
pub fn routes_with_policies(routes: usize) -> String {
    let mut yaml = String::from(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: gc}\n\
         spec: {controllerName: policy.attache.dev/attache}\n---\n\
         apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw, namespace: a}\n\
         spec:\n  gatewayClassName: gc\n  listeners: [{name: http, port: 80, protocol: HTTP}]\n",
    );
    for i in 0..routes {
        yaml.push_str(&format!(
            "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\n\
             metadata: {{name: r{i}, namespace: a}}\nspec:\n  parentRefs: [{{name: gw}}]\n  \
             rules: [{{matches: [{{path: {{type: PathPrefix, value: /r{i}}}}}]}}]\n\
             ---\napiVersion: policy.attache.dev/v1alpha1\nkind: RoutePolicy\n\
             metadata: {{name: p{i}, namespace: a}}\nspec:\n  \
             targetRefs: [{{group: gateway.networking.k8s.io, kind: HTTPRoute, name: r{i}}}]\n  \
             defaults: {{timeouts: {{request: {}ms}}}}\n",
            1000 + i
        ));
    }
    yaml
}
