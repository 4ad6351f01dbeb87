//! Where the artifacts under test are. scripts/test.sh passes them by
//! environment; the fallbacks are where scripts/setup.sh builds them.

use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU16, Ordering};

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

/// Ports handed out by [`free_port`]: below the kernel's ephemeral range
/// (Linux's default starts at 32768), so that neither a port the kernel
/// gives another socket nor a client connection's source port can take one
/// between picking it and Envoy binding it. Fixed ports elsewhere in the
/// tests and the demos (18080, 199xx, 28xxx, 29xxx) are outside it.
const PORT_BASE: u16 = 20_000;
const PORT_SPAN: u16 = 8_000;

/// A port no other caller in this process was given and that was free a
/// moment ago. Envoy cannot be told to bind port 0 and
/// report it back through a bootstrap we render, so ports are picked here.
/// Before, an ephemeral port picked at a test's start was taken by another
/// test's connection during a 10,000-route setup ("Address already in
/// use"); `stack` still retries the rare clash with another process.
pub fn free_port() -> u16 {
    static NEXT: AtomicU16 = AtomicU16::new(0);
    // Where this process starts in the range: two test runs at once begin
    // apart. Within the process, each caller gets the next port.
    let offset = u16::try_from(std::process::id() % u32::from(PORT_SPAN)).unwrap_or(0);
    for _ in 0..PORT_SPAN {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = PORT_BASE + (offset.wrapping_add(n) % PORT_SPAN);
        // 0.0.0.0 clashes with a socket on any address of the port.
        let free = TcpListener::bind(("0.0.0.0", port)).is_ok();
        if free {
            return port;
        }
    }
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("local address").port()
}
