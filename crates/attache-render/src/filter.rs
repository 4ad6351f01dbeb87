//! Which build of the filter Envoy loads, and its HTTP filter configuration
//! carrying the document: the Wasm filter with the `.wasm` (the default,
//! [`crate::wasm`]) or the dynamic-modules filter with the `.so`
//! ([`crate::module`]). Both carry the same bytes (the compact document of
//! [`crate::plugin_config`]), so the two builds read the same document.

use attache_contract::Document;
use serde_json::Value;

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
            FilterBinary::Wasm(_) => crate::wasm::WASM_TYPE_URL,
            FilterBinary::DynamicModule(_) => crate::module::MODULE_TYPE_URL,
        }
    }
}

/// The filter configuration for `binary` with the document, compact and
/// without provenance.
pub fn filter_config(
    document: &Document,
    binary: &FilterBinary,
) -> Result<Value, serde_json::Error> {
    let configuration = crate::plugin_config::compact_json(document)?;
    Ok(match binary {
        FilterBinary::Wasm(path) => crate::wasm::wasm_config(configuration, path),
        FilterBinary::DynamicModule(path) => crate::module::filter_config(configuration, path),
    })
}
