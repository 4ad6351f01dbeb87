//! Where the artifacts under test are. scripts/test.sh passes them by
//! environment; the fallbacks are where scripts/setup.sh builds them.

use std::net::TcpListener;
use std::path::PathBuf;

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => workspace().join(dir),
        None => workspace().join("target"),
    }
}

fn existing(what: &str, var: &str, path: PathBuf) -> PathBuf {
    assert!(
        path.is_file(),
        "{what} not found at {} (set {var}, or run scripts/setup.sh first)",
        path.display()
    );
    path
}

fn from_env_or(var: &str, fallback: PathBuf) -> PathBuf {
    std::env::var_os(var).map_or(fallback, PathBuf::from)
}

pub fn envoy() -> PathBuf {
    let path = from_env_or("ENVOY_BIN", workspace().join(".venv/bin/envoy"));
    existing("Envoy", "ENVOY_BIN", path)
}

/// The filter under test, built by `cargo build --release --target wasm32-wasip1 -p attache-filter`.
pub fn wasm() -> PathBuf {
    let path = from_env_or(
        "ATTACHE_WASM",
        target_dir().join("wasm32-wasip1/release/attache_filter.wasm"),
    );
    existing("the filter .wasm", "ATTACHE_WASM", path)
}

pub fn testbackend() -> PathBuf {
    let path = from_env_or(
        "ATTACHE_TESTBACKEND_BIN",
        target_dir().join("release/attache-testbackend"),
    );
    existing("attache-testbackend", "ATTACHE_TESTBACKEND_BIN", path)
}

/// The CLI that cargo built for this very test run.
pub fn attache() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_attache"))
}

pub fn fixture(name: &str) -> PathBuf {
    let path = workspace().join("tests/fixtures/e2e").join(name);
    assert!(path.is_dir(), "fixture {} is missing", path.display());
    path
}

pub fn example(name: &str) -> PathBuf {
    workspace().join("examples").join(name)
}

/// A port that was free a moment ago. Envoy cannot be told to bind port 0
/// and report it back through a bootstrap we render, so ports are picked
/// here; the tiny race with other processes is retried by `stack`.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("local address").port()
}
