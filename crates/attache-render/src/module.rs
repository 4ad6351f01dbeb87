//! The Envoy dynamic-modules HTTP filter configuration
//! (`envoy.extensions.filters.http.dynamic_modules.v3.DynamicModuleFilter`,
//! Envoy 1.40) that loads the Attaché filter's dynamic module
//! (`libattache_module.so`) with the same document the `.wasm` reads.

use serde_json::{json, Value};

use crate::wasm::{FILTER_NAME, STRING_VALUE_TYPE_URL};

pub const MODULE_TYPE_URL: &str =
    "type.googleapis.com/envoy.extensions.filters.http.dynamic_modules.v3.DynamicModuleFilter";

/// The filter configuration with `configuration` (the compact document, as
/// the `.wasm`'s plugin configuration carries it) as `filter_config`: a
/// `StringValue`, which Envoy hands the module as the bare bytes.
pub fn filter_config(configuration: String, module_path: &str) -> Value {
    json!({
        "@type": MODULE_TYPE_URL,
        "dynamic_module_config": {
            "module": {"local": {"filename": module_path}},
            // Each worker keeps its compiled copy of the document in the
            // module's thread-local storage: the library must stay mapped
            // for as long as those threads live, whatever configurations
            // come and go.
            "do_not_close": true
        },
        "filter_name": FILTER_NAME,
        "filter_config": {"@type": STRING_VALUE_TYPE_URL, "value": configuration}
    })
}
