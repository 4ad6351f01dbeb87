//! The ECDS file Envoy watches: a `DiscoveryResponse` with one
//! `TypedExtensionConfig` named like the bootstrap's HTTP filter.

use attache_contract::Document;
use serde_json::{json, Value};

use crate::filter::{filter_config, FilterBinary};
use crate::wasm::FILTER_NAME;

pub const TYPED_EXTENSION_CONFIG_TYPE_URL: &str =
    "type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig";

/// The discovery response. `version_info` is a digest of the content, so
/// the same input renders the same bytes and a changed one a new version
/// (Envoy shows it in `/config_dump`).
pub fn discovery_response(
    document: &Document,
    binary: &FilterBinary,
) -> Result<Value, serde_json::Error> {
    let typed_config = filter_config(document, binary)?;
    let version = crate::version::content_version(&typed_config);
    Ok(json!({
        "version_info": version,
        "type_url": TYPED_EXTENSION_CONFIG_TYPE_URL,
        "resources": [{
            "@type": TYPED_EXTENSION_CONFIG_TYPE_URL,
            "name": FILTER_NAME,
            "typed_config": typed_config
        }]
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_fixtures::one_route_document;

    fn wasm(path: &str) -> FilterBinary {
        FilterBinary::Wasm(path.into())
    }

    #[test]
    fn the_module_resource_carries_the_same_document_for_the_so() {
        let document = one_route_document(500);
        let module = FilterBinary::DynamicModule("/m/libattache_module.so".into());
        let response = discovery_response(&document, &module).unwrap();
        let config = &response["resources"][0]["typed_config"];
        assert_eq!(config["@type"], crate::module::MODULE_TYPE_URL);
        assert_eq!(config["filter_name"], "attache");
        assert_eq!(
            config["dynamic_module_config"]["module"]["local"]["filename"],
            "/m/libattache_module.so"
        );
        let wasm_response = discovery_response(&document, &wasm("/w/a.wasm")).unwrap();
        let wasm_value = &wasm_response["resources"][0]["typed_config"]["config"]["configuration"];
        // The same bytes reach both builds.
        assert_eq!(config["filter_config"], *wasm_value);
        assert_ne!(response["version_info"], wasm_response["version_info"]);
    }

    #[test]
    fn the_resource_carries_the_document_as_a_compact_string_without_provenance() {
        let response =
            discovery_response(&one_route_document(500), &wasm("/w/attache.wasm")).unwrap();
        let resource = &response["resources"][0];
        assert_eq!(resource["name"], "attache");
        assert_eq!(resource["@type"], TYPED_EXTENSION_CONFIG_TYPE_URL);
        let config = &resource["typed_config"]["config"];
        assert_eq!(
            resource["typed_config"]["@type"],
            crate::wasm::WASM_TYPE_URL
        );
        assert_eq!(
            config["vm_config"]["code"]["local"]["filename"],
            "/w/attache.wasm"
        );
        assert_eq!(
            config["configuration"]["@type"],
            crate::wasm::STRING_VALUE_TYPE_URL
        );
        let value = config["configuration"]["value"].as_str().unwrap();
        assert!(!value.contains('\n'), "compact: {value}");
        let carried: attache_contract::DataPlaneDocument = serde_json::from_str(value).unwrap();
        assert_eq!(
            carried,
            crate::plugin_config::encode(&one_route_document(500))
        );
    }

    #[test]
    fn the_version_follows_the_content() {
        let version = |ms| {
            discovery_response(&one_route_document(ms), &wasm("f.wasm")).unwrap()["version_info"]
                .clone()
        };
        assert_eq!(version(500), version(500));
        assert_ne!(version(500), version(501));
    }
}
