//! Which of Istio's two kinds carries the filter (docs/semantics.md, "The
//! controller"): `TrafficExtension` (Istio 1.30+) where the API server
//! serves it, else `WasmPlugin`; `--plugin-kind` overrides. The reconcile
//! decides the object of the chosen kind ([`crate::reconcile`]); this
//! module writes it, the new kind first and the other one deleted only
//! once the new one is applied, so that there is never a moment in which
//! the Gateway has neither. Both kinds are watched where they are served
//! ([`Delivery::watches`]), so a round compares with the live object of the
//! kind it writes and finds ours of the other kind to delete.

use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams};
use kube::{Api, Client};
use serde_json::Value;

use crate::kinds::{Role, WatchedKind, TRAFFIC_EXTENSION, WASM_PLUGIN};
use crate::kube::api::{WriteError, FIELD_MANAGER};
use crate::kube::watch::api_resource;
/// Kept here too, where the switch of kinds is described.
pub use crate::reconcile::as_traffic_extension;

/// The kind written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PluginKind {
    #[default]
    WasmPlugin,
    TrafficExtension,
}

/// What `--plugin-kind` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Choice {
    /// TrafficExtension when the API server serves it, else WasmPlugin.
    #[default]
    Auto,
    Fixed(PluginKind),
}

impl PluginKind {
    pub fn row(self) -> &'static WatchedKind {
        match self {
            PluginKind::WasmPlugin => &WASM_PLUGIN,
            PluginKind::TrafficExtension => &TRAFFIC_EXTENSION,
        }
    }

    fn other(self) -> PluginKind {
        match self {
            PluginKind::WasmPlugin => PluginKind::TrafficExtension,
            PluginKind::TrafficExtension => PluginKind::WasmPlugin,
        }
    }
}

/// How the controller delivers: the kind, and whether the other kind is
/// served (only then can an object of it exist to be cleaned up).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Delivery {
    pub kind: PluginKind,
    pub other_served: bool,
}

impl Delivery {
    /// Whether the loop watches `kind`: every input kind; of the two plugin
    /// kinds, the one written (so that a kind chosen by the flag but not
    /// served is seen missing, and seen when it turns up) and the other
    /// where it is served (ours of it may be left from before a switch).
    pub fn watches(&self, kind: &WatchedKind) -> bool {
        kind.role != Role::Output
            || kind == self.kind.row()
            || (self.other_served && kind == self.kind.other().row())
    }
}

/// The delivery for `choice` given which kinds the API server serves.
pub fn choose(
    choice: Choice,
    wasm_plugin_served: bool,
    traffic_extension_served: bool,
) -> Delivery {
    let kind = match choice {
        Choice::Fixed(kind) => kind,
        Choice::Auto if traffic_extension_served => PluginKind::TrafficExtension,
        Choice::Auto => PluginKind::WasmPlugin,
    };
    let other_served = match kind {
        PluginKind::WasmPlugin => traffic_extension_served,
        PluginKind::TrafficExtension => wasm_plugin_served,
    };
    Delivery { kind, other_served }
}

/// Whether the API server serves `kind`, from API discovery
/// (`/apis/{group}/{version}`, which every authenticated user may read, so
/// a namespace-scoped install needs no cluster-wide rule for it). A 404 is
/// a group version not served. Any other error is taken as "not served",
/// with a log line: the controller then stays on the kind it can write.
pub async fn served(client: &Client, kind: &WatchedKind) -> bool {
    match client.list_api_group_resources(&kind.api_version()).await {
        Ok(list) => list.resources.iter().any(|r| r.name == kind.plural),
        Err(kube::Error::Api(s)) if s.code == 404 => false,
        Err(e) => {
            tracing::warn!(kind = kind.kind, error = %e, "cannot tell whether the kind is served; taken as not served");
            false
        }
    }
}

/// Discovers the delivery for `choice`.
pub async fn discover(client: &Client, choice: Choice) -> Delivery {
    let wasm = served(client, &WASM_PLUGIN).await;
    let extension = served(client, &TRAFFIC_EXTENSION).await;
    let delivery = choose(choice, wasm, extension);
    tracing::info!(
        kind = delivery.kind.row().kind,
        wasmplugin_served = wasm,
        trafficextension_served = extension,
        "plugin kind chosen"
    );
    delivery
}

/// Writes the Gateway's object of the delivery's kind, as the reconcile
/// decided it, then, when the Gateway is `switching` (ours of the other
/// kind is live: `crate::reconcile::Plan::switching`), deletes the other
/// kind's object of the same name. The delete runs only after the apply
/// succeeded: a failed apply leaves the old object serving, so a Gateway is
/// never without one.
pub async fn apply(
    client: &Client,
    delivery: Delivery,
    object: &Value,
    switching: bool,
) -> Result<(), WriteError> {
    let namespace = object["metadata"]["namespace"].as_str().unwrap_or_default();
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let kind = delivery.kind.row();
    let what = format!("{} {namespace}/{name}", kind.kind);
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), namespace, &api_resource(kind));
    api.patch(
        name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(object),
    )
    .await
    .map_err(|e| WriteError::from_kube(what, e))?;
    if switching {
        let other = delivery.kind.other().row();
        let api: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), namespace, &api_resource(other));
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => {
                tracing::info!(kind = other.kind, %namespace, %name, "replaced by {}; deleted", kind.kind)
            }
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => {
                return Err(WriteError::from_kube(
                    format!("{} {namespace}/{name}", other.kind),
                    e,
                ))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_kind_written_is_watched_and_the_other_only_where_served() {
        let gateways = crate::kinds::named("Gateway").unwrap();
        let written = |kind, other_served| Delivery { kind, other_served };
        let te = written(PluginKind::TrafficExtension, true);
        assert!(te.watches(&TRAFFIC_EXTENSION) && te.watches(&WASM_PLUGIN) && te.watches(gateways));
        let te_alone = written(PluginKind::TrafficExtension, false);
        assert!(te_alone.watches(&TRAFFIC_EXTENSION) && !te_alone.watches(&WASM_PLUGIN));
        let wp_alone = written(PluginKind::WasmPlugin, false);
        assert!(wp_alone.watches(&WASM_PLUGIN) && !wp_alone.watches(&TRAFFIC_EXTENSION));
    }

    #[test]
    fn auto_takes_trafficextension_when_served_and_a_flag_overrides() {
        let of = |choice, wasm, extension| choose(choice, wasm, extension);
        let te = PluginKind::TrafficExtension;
        let wp = PluginKind::WasmPlugin;
        assert_eq!(
            of(Choice::Auto, true, true),
            Delivery {
                kind: te,
                other_served: true
            }
        );
        assert_eq!(
            of(Choice::Auto, true, false),
            Delivery {
                kind: wp,
                other_served: false
            }
        );
        assert_eq!(
            of(Choice::Auto, false, false),
            Delivery {
                kind: wp,
                other_served: false
            }
        );
        assert_eq!(
            of(Choice::Fixed(wp), true, true),
            Delivery {
                kind: wp,
                other_served: true
            }
        );
        assert_eq!(
            of(Choice::Fixed(te), false, false),
            Delivery {
                kind: te,
                other_served: false
            }
        );
    }

    #[test]
    fn the_trafficextension_is_what_render_trafficextension_writes() {
        use attache_contract::{Document, SCHEMA_VERSION};
        use attache_core::topology::{GatewayResolution, ObjectKey};
        use attache_render::wasmplugin::{wasm_plugin, WasmPluginOptions};
        let resolution = GatewayResolution {
            gateway: ObjectKey {
                namespace: "infra".into(),
                name: "edge".into(),
            },
            gateway_class: "attache".into(),
            listeners: vec![],
            document: Document {
                schema_version: SCHEMA_VERSION,
                gateway: "infra/edge".into(),
                options: Default::default(),
                routes: vec![],
            },
            backends: Default::default(),
            route_request_headers: Default::default(),
        };
        let options = WasmPluginOptions {
            sha256: Some("b".repeat(64)),
            ..WasmPluginOptions::default()
        };
        let plugin = wasm_plugin(&resolution, &options).unwrap();
        let rendered =
            attache_render::trafficextension::traffic_extension(&resolution, &options).unwrap();
        assert_eq!(as_traffic_extension(&plugin), rendered);
        // What the reconcile adds to metadata stays.
        let mut owned = plugin.clone();
        owned["metadata"]["ownerReferences"] = json!([{"kind": "Gateway", "name": "edge"}]);
        assert_eq!(
            as_traffic_extension(&owned)["metadata"]["ownerReferences"],
            owned["metadata"]["ownerReferences"]
        );
    }
}
