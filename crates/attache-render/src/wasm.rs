//! The Envoy HTTP filter configuration that carries the schema-1 document
//! to the Attaché filter: the Wasm filter with the `.wasm` (the default), or
//! the dynamic-modules filter with the `.so` ([`crate::module`]). The ECDS
//! file and the bootstrap's default both use it, so they cannot differ in
//! anything but the document.

use attache_contract::Document;
use serde_json::{json, Value};

/// HTTP filter name in the bootstrap and ECDS resource name: Envoy matches
/// the two by this string.
pub const FILTER_NAME: &str = "attache";
pub const WASM_TYPE_URL: &str = "type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm";
pub const STRING_VALUE_TYPE_URL: &str = "type.googleapis.com/google.protobuf.StringValue";

/// Which build of the filter Envoy loads, and the file (as Envoy sees it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilterBinary {
    /// The proxy-wasm `.wasm`, run by Envoy's Wasm filter in V8: the
    /// default, sandboxed.
    Wasm(String),
    /// The dynamic module `.so`, loaded into Envoy 1.40's address space by
    /// its dynamic-modules filter (docs/security.md says what that trades).
    DynamicModule(String),
}

impl FilterBinary {
    /// The filter configuration's type, which ECDS's `type_urls` names.
    pub fn type_url(&self) -> &'static str {
        match self {
            FilterBinary::Wasm(_) => WASM_TYPE_URL,
            FilterBinary::DynamicModule(_) => crate::module::MODULE_TYPE_URL,
        }
    }
}

/// The filter configuration for `binary` with the document, compact and
/// without provenance ([`crate::plugin_config`]), as the configuration
/// both builds read.
pub fn filter_config(
    document: &Document,
    binary: &FilterBinary,
) -> Result<Value, serde_json::Error> {
    let configuration = crate::plugin_config::compact_json(document)?;
    Ok(match binary {
        FilterBinary::Wasm(path) => wasm_config(configuration, path),
        FilterBinary::DynamicModule(path) => crate::module::filter_config(configuration, path),
    })
}

/// `envoy.extensions.filters.http.wasm.v3.Wasm` with the document as the
/// plugin configuration (a JSON string the filter parses in `on_configure`).
fn wasm_config(configuration: String, wasm_path: &str) -> Value {
    json!({
        "@type": WASM_TYPE_URL,
        "config": {
            "name": FILTER_NAME,
            "root_id": FILTER_NAME,
            "vm_config": {
                // Same vm_id and code on every generation: Envoy keeps the
                // loaded module and only starts a new plugin with the new
                // configuration when the ECDS file changes.
                "vm_id": FILTER_NAME,
                "runtime": "envoy.wasm.runtime.v8",
                "code": {"local": {"filename": wasm_path}}
            },
            "configuration": {"@type": STRING_VALUE_TYPE_URL, "value": configuration},
            // A trapped VM is replaced for the next request instead of
            // failing every request after it (FAIL_CLOSED) or letting
            // requests through without the policies (FAIL_OPEN).
            "failure_policy": "FAIL_RELOAD"
        }
    })
}
