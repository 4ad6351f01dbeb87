//! Which build of the filter the suite runs against: the `.wasm` (the
//! default) or the dynamic module `.so`, chosen by `ATTACHE_FILTER=wasm|
//! dynamic-module` (scripts/test.sh runs the suite once with each). The
//! tests pass the `.wasm`'s path as before; the harness turns it into the
//! flags of the chosen build, so every test runs against both unchanged.
//! Tests whose subject is the `.wasm` itself (its exports, Istio's
//! WasmPlugin) run under `wasm` only ([`wasm_only`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Build {
    Wasm,
    DynamicModule,
}

pub fn build() -> Build {
    match std::env::var("ATTACHE_FILTER").as_deref() {
        Ok("dynamic-module") => Build::DynamicModule,
        Ok("wasm") | Err(_) => Build::Wasm,
        Ok(other) => panic!("ATTACHE_FILTER={other}: expected wasm or dynamic-module"),
    }
}

/// The module, built by `cargo build --release -p attache-module`.
pub fn module() -> PathBuf {
    let path = std::env::var_os("ATTACHE_MODULE").map_or_else(
        || super::paths::target_dir().join("release/libattache_module.so"),
        PathBuf::from,
    );
    assert!(
        path.is_file(),
        "the dynamic module not found at {} (set ATTACHE_MODULE, or run scripts/setup.sh first)",
        path.display()
    );
    path
}

/// The CLI flags that name the filter for `render ecds|envoy` and `watch`:
/// `--wasm WASM`, or the module's pair.
pub fn flags(wasm: &Path) -> Vec<OsString> {
    match build() {
        Build::Wasm => vec!["--wasm".into(), wasm.into()],
        Build::DynamicModule => vec![
            "--filter".into(),
            "dynamic-module".into(),
            "--module".into(),
            module().into(),
        ],
    }
}

/// The name Envoy's admin shows for the filter's counter `name`
/// (`attache.requests.matched_by_name`): the Wasm filter's stats scope is
/// `wasmcustom.`, the dynamic-modules filter's `dynamicmodulescustom.`.
pub fn stat(name: &str) -> String {
    match build() {
        Build::Wasm => format!("wasmcustom.{name}"),
        Build::DynamicModule => format!("dynamicmodulescustom.{name}"),
    }
}

/// True (and says so on stderr) when the run is the module's: the caller
/// is a test of the `.wasm` itself and returns.
pub fn wasm_only(test: &str) -> bool {
    let skip = build() != Build::Wasm;
    if skip {
        eprintln!("{test}: about the .wasm itself; not run under ATTACHE_FILTER=dynamic-module");
    }
    skip
}
