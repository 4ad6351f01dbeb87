//! Istio 1.30's `extensions.istio.io/v1alpha1` `TrafficExtension`, which
//! supersedes WasmPlugin (istio/api `extensions/v1alpha1/
//! traffic_extension.proto`): the same module and document as
//! [`crate::wasmplugin`], under `spec.wasm`.
//!
//! Where it runs: the filter sets the router's `x-envoy-*` timeout and
//! retry headers, so it must run after every filter that could change
//! them, that is last before the router.
//! - `phase` is left out: its zero value, `EXECUTION_PHASE_UNSPECIFIED`, is
//!   "at the end of the filter chain, right before the Router", and the
//!   proto asks not to specify a phase for an extension independent of the
//!   others (its `ExecutionPhase` comment). Leaving it out also avoids the
//!   question of how the enum is spelled in YAML (`AUTHN` in the examples,
//!   `EXECUTION_PHASE_AUTHN` in the proto).
//! - `priority` orders extensions of one phase "in descending order"
//!   (traffic_extension.proto, `priority`; its example runs priority 1000
//!   before 10). The lowest value, `i32::MIN`, puts the filter after every
//!   other extension of the phase, so none runs between it and the router.

use attache_core::topology::GatewayResolution;
use serde_json::{json, Value};

use crate::wasmplugin::{module_fields, object, WasmPluginOptions};

/// The priority that runs last within a phase (descending order).
pub const LAST_PRIORITY: i32 = i32::MIN;

pub fn traffic_extension(
    resolution: &GatewayResolution,
    options: &WasmPluginOptions,
) -> Result<Value, serde_json::Error> {
    let mut extension = object("TrafficExtension", &resolution.gateway);
    extension["spec"]["priority"] = json!(LAST_PRIORITY);
    extension["spec"]["wasm"] = Value::Object(module_fields(resolution, options)?);
    Ok(extension)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wasmplugin::{wasm_plugin, FailStrategy};

    #[test]
    fn it_carries_what_the_wasmplugin_carries_under_spec_wasm() {
        let options = WasmPluginOptions {
            url: "oci://r.example/attache:1".into(),
            sha256: Some("a".repeat(64)),
            image_pull_secret: Some("pull".into()),
            fail_strategy: FailStrategy::FailReload,
            ..WasmPluginOptions::default()
        };
        let extension = traffic_extension(
            &crate::test_fixtures::edge_resolution_of_one_route(),
            &options,
        )
        .unwrap();
        let plugin = wasm_plugin(
            &crate::test_fixtures::edge_resolution_of_one_route(),
            &options,
        )
        .unwrap();
        assert_eq!(extension["kind"], "TrafficExtension");
        assert_eq!(extension["metadata"], plugin["metadata"]);
        let spec = &extension["spec"];
        assert_eq!(spec["targetRefs"], plugin["spec"]["targetRefs"]);
        assert_eq!(spec["priority"], json!(i32::MIN));
        assert!(spec.get("phase").is_none(), "{spec}");
        assert!(
            spec.get("selector").is_none(),
            "only one of targetRefs or selector"
        );
        assert!(spec.get("lua").is_none(), "exactly one of wasm or lua");
        for field in [
            "url",
            "sha256",
            "imagePullSecret",
            "imagePullPolicy",
            "type",
            "pluginName",
            "failStrategy",
            "pluginConfig",
        ] {
            assert_eq!(spec["wasm"][field], plugin["spec"][field], "{field}");
        }
        assert_eq!(spec["wasm"]["failStrategy"], "FAIL_RELOAD");
        let wasm_fields = spec["wasm"].as_object().unwrap().len();
        assert_eq!(wasm_fields, 8, "{spec}");
    }
}
