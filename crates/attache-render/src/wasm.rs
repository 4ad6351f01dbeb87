//! The Envoy Wasm HTTP filter configuration that carries the schema-1
//! document to the Attaché filter's `.wasm` ([`crate::filter`] chooses it or
//! the dynamic module's). The ECDS file and the bootstrap's default both use
//! it, so they cannot differ in anything but the document.

use serde_json::{json, Value};

/// HTTP filter name in the bootstrap and ECDS resource name: Envoy matches
/// the two by this string.
pub const FILTER_NAME: &str = "attache";
pub const WASM_TYPE_URL: &str = "type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm";
pub const STRING_VALUE_TYPE_URL: &str = "type.googleapis.com/google.protobuf.StringValue";

/// `envoy.extensions.filters.http.wasm.v3.Wasm` with the document as the
/// plugin configuration (a JSON string the filter parses in `on_configure`).
pub fn wasm_config(configuration: String, wasm_path: &str) -> Value {
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
