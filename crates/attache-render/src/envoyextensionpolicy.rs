//! Envoy Gateway's `gateway.envoyproxy.io/v1alpha1` `EnvoyExtensionPolicy`
//! with its `dynamicModule` field: the dynamic module (`libattache_module.so`)
//! on a Gateway of Envoy Gateway, with the same document as the `.wasm`.
//!
//! Read from envoyproxy/gateway at v1.9.0 (39763b1c): `api/v1alpha1/
//! envoyextensionypolicy_types.go`, `api/v1alpha1/dynamic_module_types.go`,
//! `internal/xds/translator/dynamicmodule.go` and `httpfilters.go`.
//! - A policy names a module by `name`; the module itself (its path, and
//!   `doNotClose`) is registered by the infrastructure operator in the
//!   EnvoyProxy's `spec.dynamicModules` allowlist, which
//!   [`envoy_proxy_registration`] writes.
//! - `config` is arbitrary JSON that Envoy Gateway hands the module as a
//!   `google.protobuf.StringValue` of its JSON text (`dynamicModuleConfig`:
//!   `wrapperspb.String(string(dm.Config.Raw))`): the module receives the
//!   document's JSON, as the `.wasm` receives a WasmPlugin's `pluginConfig`.
//!   So `config` is what `render wasmplugin` writes there
//!   ([`crate::wasmplugin::plugin_config`]): the document inline, or its
//!   compressed envelope for a large Gateway.
//! - Where it runs: Envoy Gateway orders its HTTP filters by kind
//!   (`newOrderedHTTPFilter`): dynamic modules after Wasm and before GeoIP,
//!   RBAC, rate limits, gRPC-web and stats, the credential injector, the
//!   compressor and the dynamic forward proxy, then the router. None of
//!   those sets the router's `x-envoy-*` timeout and retry headers the
//!   filter writes, so they reach the router as the filter left them.

use attache_core::topology::{GatewayResolution, ObjectKey};
use serde_json::{json, Value};

use crate::wasm::FILTER_NAME;
use crate::wasmplugin::{gateway_object_metadata, plugin_config, ConfigForm};

pub const API_VERSION: &str = "gateway.envoyproxy.io/v1alpha1";

/// The module's name in the EnvoyProxy's allowlist unless
/// `--module-name` says otherwise.
pub const DEFAULT_MODULE_NAME: &str = "attache";

/// Where the `.so` sits in the proxy pod unless `--module` says otherwise:
/// an image volume mounted at `/opt/attache` (docs/envoy-gateway.md).
pub const DEFAULT_MODULE_PATH: &str = "/opt/attache/libattache_module.so";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtensionPolicyOptions {
    /// `dynamicModule[].name`: the module's entry in the EnvoyProxy's
    /// `spec.dynamicModules` (Envoy Gateway refuses a policy naming a
    /// module that is not registered).
    pub module_name: String,
    /// Whether `config` is the document itself or its compressed envelope.
    pub config_form: ConfigForm,
}

impl Default for ExtensionPolicyOptions {
    fn default() -> Self {
        ExtensionPolicyOptions {
            module_name: DEFAULT_MODULE_NAME.to_string(),
            config_form: ConfigForm::Auto,
        }
    }
}

/// The policy for the resolved Gateway: its one targetRef is the Gateway
/// (a policy lives in its target's namespace), its one `dynamicModule`
/// the filter with the document as `config`.
pub fn envoy_extension_policy(
    resolution: &GatewayResolution,
    options: &ExtensionPolicyOptions,
) -> Result<Value, serde_json::Error> {
    let config = plugin_config(&resolution.document, options.config_form)?;
    let gateway = &resolution.gateway;
    Ok(json!({
        "apiVersion": API_VERSION,
        "kind": "EnvoyExtensionPolicy",
        "metadata": gateway_object_metadata(gateway),
        "spec": {
            "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": gateway.name}],
            "dynamicModule": [{
                "name": options.module_name,
                // The module's one filter; the .so answers to this name
                // as Envoy's filter_name (crates/attache-module).
                "filterName": FILTER_NAME,
                "config": config
            }]
        }
    }))
}

/// The part of an EnvoyProxy that registers the module: only
/// `spec.dynamicModules`, for `kubectl apply --server-side`. The list is a
/// map keyed by `name` (`+listType=map`), so a server-side apply adds or
/// updates this one entry and leaves the rest of the operator's EnvoyProxy
/// alone.
pub fn envoy_proxy_registration(proxy: &ObjectKey, module_name: &str, module_path: &str) -> Value {
    json!({
        "apiVersion": API_VERSION,
        "kind": "EnvoyProxy",
        "metadata": {"name": proxy.name, "namespace": proxy.namespace},
        "spec": {
            "dynamicModules": [{
                "name": module_name,
                "source": {"type": "Local", "local": {"path": module_path}},
                // Each worker keeps its compiled copy of the document in
                // the module's thread-local storage: the library must stay
                // mapped while those threads live (crate::module says the
                // same for plain Envoy). Envoy Gateway's default is false.
                "doNotClose": true
            }]
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_targets_the_gateway_and_carries_what_the_wasmplugin_carries() {
        let options = ExtensionPolicyOptions::default();
        let policy = envoy_extension_policy(
            &crate::test_fixtures::edge_resolution_of_one_route(),
            &options,
        )
        .unwrap();
        let plugin = crate::wasmplugin::wasm_plugin(
            &crate::test_fixtures::edge_resolution_of_one_route(),
            &Default::default(),
        )
        .unwrap();
        assert_eq!(policy["metadata"], plugin["metadata"]);
        assert_eq!(policy["spec"]["targetRefs"], plugin["spec"]["targetRefs"]);
        let module = &policy["spec"]["dynamicModule"][0];
        assert_eq!(module["name"], DEFAULT_MODULE_NAME);
        assert_eq!(module["filterName"], FILTER_NAME);
        assert_eq!(module["config"], plugin["spec"]["pluginConfig"]);
        assert!(module.get("terminalFilter").is_none(), "{module}");
    }

    #[test]
    fn the_registration_keeps_the_module_mapped() {
        let proxy = ObjectKey {
            namespace: "envoy-gateway-system".into(),
            name: "proxy".into(),
        };
        let entry = envoy_proxy_registration(&proxy, "attache", DEFAULT_MODULE_PATH);
        let module = &entry["spec"]["dynamicModules"][0];
        assert_eq!(module["doNotClose"], true);
        assert_eq!(module["source"]["local"]["path"], DEFAULT_MODULE_PATH);
        assert_eq!(entry["spec"].as_object().unwrap().len(), 1, "{entry}");
    }
}
