//! Istio's `networking.istio.io/v1alpha3` `EnvoyFilter` that inserts the
//! dynamic module (`libattache_module.so`) before the router on a Gateway's
//! listeners. Istio has no resource for dynamic modules; WasmPlugin and
//! TrafficExtension (the default, the sandboxed `.wasm`) stay the way to run
//! Attaché in Istio (docs/istio.md).
//!
//! Read from istio/api at b8f8791d (1.31.0-alpha.0): `networking/v1alpha3/
//! envoy_filter.proto` and `kubernetes/customresourcedefinitions.gen.yaml`.
//! - `workloadSelector` picks the Gateway's pods by the label istiod puts on
//!   them, `gateway.networking.k8s.io/gateway-name`. The CRD allows
//!   `targetRefs` or `workloadSelector`, not both; the selector works on
//!   every Istio that has an EnvoyFilter, targetRefs only on recent ones.
//! - One patch: `HTTP_FILTER`, `INSERT_BEFORE` the router inside the HTTP
//!   connection manager, in the `GATEWAY` context: the filter runs last,
//!   after authentication and authorisation, so nothing after it can undo
//!   the router's `x-envoy-*` headers it sets.
//! - The filter's configuration is [`crate::filter::filter_config`]'s for
//!   the dynamic module, the one `render ecds --filter dynamic-module`
//!   writes and Envoy 1.40 validates, with the document istiod's route names
//!   are read by (`options.istioRouteNames`), as the WasmPlugin carries it.

use attache_core::topology::GatewayResolution;
use serde_json::{json, Value};

use crate::filter::{filter_config, FilterBinary};
use crate::wasm::FILTER_NAME;
use crate::wasmplugin::gateway_object_metadata;

pub const API_VERSION: &str = "networking.istio.io/v1alpha3";

/// The label istiod sets on a Gateway's pods, naming the Gateway.
pub const GATEWAY_NAME_LABEL: &str = "gateway.networking.k8s.io/gateway-name";

const HTTP_CONNECTION_MANAGER: &str = "envoy.filters.network.http_connection_manager";
const ROUTER: &str = "envoy.filters.http.router";

/// The EnvoyFilter for the resolved Gateway, with the module at
/// `module_path` (as the gateway pod sees it).
pub fn envoy_filter(
    resolution: &GatewayResolution,
    module_path: &str,
) -> Result<Value, serde_json::Error> {
    let binary = FilterBinary::DynamicModule(module_path.to_string());
    let typed_config = filter_config(&resolution.document, &binary)?;
    let gateway = &resolution.gateway;
    Ok(json!({
        "apiVersion": API_VERSION,
        "kind": "EnvoyFilter",
        "metadata": gateway_object_metadata(gateway),
        "spec": {
            "workloadSelector": {"labels": {GATEWAY_NAME_LABEL: gateway.name}},
            "configPatches": [{
                "applyTo": "HTTP_FILTER",
                "match": {
                    "context": "GATEWAY",
                    "listener": {"filterChain": {"filter": {
                        "name": HTTP_CONNECTION_MANAGER,
                        "subFilter": {"name": ROUTER}
                    }}}
                },
                "patch": {
                    "operation": "INSERT_BEFORE",
                    "value": {"name": FILTER_NAME, "typed_config": typed_config}
                }
            }]
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_inserts_the_module_before_the_router_of_the_gateways_pods() {
        let resolution = crate::test_fixtures::edge_resolution_of_one_route();
        let filter = envoy_filter(&resolution, "/opt/attache/libattache_module.so").unwrap();
        let spec = &filter["spec"];
        assert_eq!(
            spec["workloadSelector"]["labels"][GATEWAY_NAME_LABEL],
            "edge"
        );
        assert!(spec.get("targetRefs").is_none(), "one of the two only");
        let patch = &spec["configPatches"][0]["patch"];
        assert_eq!(patch["operation"], "INSERT_BEFORE");
        let expected = filter_config(
            &resolution.document,
            &FilterBinary::DynamicModule("/opt/attache/libattache_module.so".into()),
        )
        .unwrap();
        assert_eq!(patch["value"]["typed_config"], expected);
    }
}
