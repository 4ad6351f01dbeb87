//! Every kind the controller watches, one row each: what the resolver reads
//! (section 1 of docs/semantics.md, the same kinds `-f` takes) and the two
//! kinds it writes (one of them at a time, `crate::plugin_kind`). The
//! watchers, the RBAC rules of `deploy/controller` and the snapshot all read
//! this table, so adding a kind is adding a row.

/// What the controller does with a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Read and resolved, never written.
    Input,
    /// Read and resolved; its status subresource is written (our own
    /// policy kinds, and only those: docs/semantics.md section 11).
    InputWithStatus,
    /// Written by server-side apply (the WasmPlugin or the
    /// TrafficExtension); watched (only the objects labelled as ours) so
    /// that an unchanged object is not written again, also after a
    /// restart, and one deleted by hand is written again at once.
    Output,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchedKind {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub namespaced: bool,
    pub role: Role,
}

impl WatchedKind {
    /// `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

const fn row(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    role: Role,
) -> WatchedKind {
    WatchedKind {
        group,
        version,
        kind,
        plural,
        namespaced,
        role,
    }
}

const GATEWAY: &str = "gateway.networking.k8s.io";
const GATEWAY_X: &str = "gateway.networking.x-k8s.io";
const ATTACHE: &str = "policy.attache.dev";

/// The field manager of every write (server-side apply docs, "Managers");
/// the watcher knows our own writes coming back by it.
pub const FIELD_MANAGER: &str = "attache";

/// The label every object the controller writes carries, and the selector
/// of its WasmPlugin and TrafficExtension watches.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "attache");

pub const WASM_PLUGIN: WatchedKind = row(
    "extensions.istio.io",
    "v1alpha1",
    "WasmPlugin",
    "wasmplugins",
    true,
    Role::Output,
);

/// Istio 1.30's successor of WasmPlugin, written instead of it where the
/// API server serves it (`crate::plugin_kind`). Watched like the WasmPlugin
/// (only ours, by label), but only where it is served or chosen: the loop
/// starts its watcher after discovery (`crate::plugin_kind::Delivery::watches`).
pub const TRAFFIC_EXTENSION: WatchedKind = row(
    "extensions.istio.io",
    "v1alpha1",
    "TrafficExtension",
    "trafficextensions",
    true,
    Role::Output,
);

/// Bottom to top of the topology; the order is also the order objects are
/// handed to the reader (a Gateway before its routes, as a file lists them).
pub const WATCHED_KINDS: &[WatchedKind] = &[
    row(
        GATEWAY,
        "v1",
        "GatewayClass",
        "gatewayclasses",
        false,
        Role::Input,
    ),
    row("", "v1", "Namespace", "namespaces", false, Role::Input),
    row(GATEWAY, "v1", "Gateway", "gateways", true, Role::Input),
    row(
        GATEWAY_X,
        "v1alpha1",
        "XListenerSet",
        "xlistenersets",
        true,
        Role::Input,
    ),
    row(
        GATEWAY,
        "v1",
        "ListenerSet",
        "listenersets",
        true,
        Role::Input,
    ),
    row(GATEWAY, "v1", "HTTPRoute", "httproutes", true, Role::Input),
    row(GATEWAY, "v1", "GRPCRoute", "grpcroutes", true, Role::Input),
    row(
        ATTACHE,
        "v1alpha1",
        "RoutePolicy",
        "routepolicies",
        true,
        Role::InputWithStatus,
    ),
    row(
        ATTACHE,
        "v1alpha1",
        "ClusterRoutePolicy",
        "clusterroutepolicies",
        false,
        Role::InputWithStatus,
    ),
    row(
        "gateway.kgateway.dev",
        "v1alpha1",
        "TrafficPolicy",
        "trafficpolicies",
        true,
        Role::Input,
    ),
    row(
        "gateway.envoyproxy.io",
        "v1alpha1",
        "BackendTrafficPolicy",
        "backendtrafficpolicies",
        true,
        Role::Input,
    ),
    WASM_PLUGIN,
    TRAFFIC_EXTENSION,
];

/// The row of a kind by name.
pub fn named(kind: &str) -> Option<&'static WatchedKind> {
    WATCHED_KINDS.iter().find(|k| k.kind == kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_listed_once_and_only_the_two_plugin_kinds_are_written() {
        let mut names: Vec<&str> = WATCHED_KINDS.iter().map(|k| k.kind).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), WATCHED_KINDS.len());
        let written: Vec<&str> = WATCHED_KINDS
            .iter()
            .filter(|k| k.role == Role::Output)
            .map(|k| k.kind)
            .collect();
        assert_eq!(written, ["WasmPlugin", "TrafficExtension"]);
        let with_status: Vec<&str> = WATCHED_KINDS
            .iter()
            .filter(|k| k.role == Role::InputWithStatus)
            .map(|k| k.kind)
            .collect();
        assert_eq!(with_status, ["RoutePolicy", "ClusterRoutePolicy"]);
    }

    #[test]
    fn every_policy_kind_the_resolver_reads_is_watched() {
        for info in attache_core::model::policy::KINDS {
            let row = named(info.name).unwrap_or_else(|| panic!("{} is not watched", info.name));
            assert_eq!(
                (row.group, row.version, row.role == Role::InputWithStatus),
                (info.group, info.versions[0], info.own),
                "{}: the status written is the version status reports, for our own kinds only",
                info.name
            );
        }
    }

    #[test]
    fn every_route_and_target_kind_the_resolver_reads_is_watched() {
        use attache_core::model::kinds::{ROUTE_KINDS, TARGET_KINDS};
        let read = ROUTE_KINDS
            .iter()
            .map(|r| (r.group, r.name))
            .chain(TARGET_KINDS.iter().map(|t| (t.group, t.name)));
        for (group, name) in read {
            let row = named(name).unwrap_or_else(|| panic!("{name} is read but not watched"));
            assert_eq!(row.group, group, "{name}");
        }
    }
}
