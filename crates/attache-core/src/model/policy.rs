//! RoutePolicy (namespaced) and ClusterRoutePolicy (cluster-scoped).

use std::fmt;

use schemars::JsonSchema;
use serde::Deserialize;

pub use super::kinds::TargetKind;
use super::kinds::{RouteKind, SetKind, SetRef};
use super::meta::{Meta, RawMeta};
use crate::field::FieldMap;
use crate::settings::{RawHeaderModifier, RawRetry, RawSettings, RawTimeouts};
use crate::topology::ObjectKey;

pub const POLICY_GROUP: &str = "policy.attache.dev";

/// At most this many `status.ancestors` entries per policy (GEP-713, 2025:
/// when full, "MUST NOT add further entries" and the policy is
/// unimplementable beyond them; docs/status.md).
pub const MAX_ANCESTORS: usize = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PolicyKind {
    RoutePolicy,
    ClusterRoutePolicy,
    /// kgateway's `TrafficPolicy` (docs/peers.md).
    TrafficPolicy,
    /// Envoy Gateway's `BackendTrafficPolicy` (docs/peers.md).
    BackendTrafficPolicy,
}

/// Where a policy object lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Namespaced,
    Cluster,
}

/// How a kind's `spec` becomes settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecShape {
    /// `defaults` / `overrides` stanzas, or plain settings directly under
    /// `spec` (docs/semantics.md, "The fold"), read by `settings/mod.rs`.
    Stanzas,
    /// A peer project's spec, mapped field by field onto plain settings by
    /// the table in `parse/peers.rs` (docs/peers.md).
    Peer,
}

/// Everything the resolver knows about one policy kind, in one place: the
/// parser reads documents by it, the target check and status ask it. A new
/// kind is one more entry in [`KINDS`] and, if its spec has another shape,
/// one more [`SpecShape`] with its reader (ARCHITECTURE.md, "Accept a new
/// policy kind").
#[derive(Debug)]
pub struct KindInfo {
    pub kind: PolicyKind,
    pub group: &'static str,
    pub name: &'static str,
    /// Versions read; the first is the one status reports.
    pub versions: &'static [&'static str],
    pub scope: Scope,
    pub targets: &'static [TargetKind],
    pub spec: SpecShape,
    /// Whether the project owns the kind (`attache crds` writes its CRD);
    /// a peer's kind is read, never defined, here.
    pub own: bool,
}

/// Every policy kind read, one row per [`PolicyKind`] ([`PolicyKind::info`]
/// is a full match over them, so a new variant does not compile without its
/// row).
pub const KINDS: &[KindInfo] = &[
    ROUTE_POLICY,
    CLUSTER_ROUTE_POLICY,
    TRAFFIC_POLICY,
    BACKEND_TRAFFIC_POLICY,
];

pub const ROUTE_POLICY: KindInfo = KindInfo {
    kind: PolicyKind::RoutePolicy,
    group: POLICY_GROUP,
    name: "RoutePolicy",
    versions: &["v1alpha1"],
    scope: Scope::Namespaced,
    targets: &[
        TargetKind::Namespace,
        TargetKind::Gateway,
        TargetKind::ListenerSet,
        TargetKind::XListenerSet,
        TargetKind::HttpRoute,
        TargetKind::GrpcRoute,
    ],
    spec: SpecShape::Stanzas,
    own: true,
};

pub const CLUSTER_ROUTE_POLICY: KindInfo = KindInfo {
    kind: PolicyKind::ClusterRoutePolicy,
    group: POLICY_GROUP,
    name: "ClusterRoutePolicy",
    versions: &["v1alpha1"],
    scope: Scope::Cluster,
    targets: &[TargetKind::GatewayClass, TargetKind::Namespace],
    spec: SpecShape::Stanzas,
    own: true,
};

pub const TRAFFIC_POLICY: KindInfo = KindInfo {
    kind: PolicyKind::TrafficPolicy,
    group: "gateway.kgateway.dev",
    name: "TrafficPolicy",
    versions: &["v1alpha1"],
    scope: Scope::Namespaced,
    // Both set kinds (api/v1alpha1/kgateway/traffic_policy_types.go,
    // `kind.endsWith('ListenerSet')`), and GRPCRoute (its CEL rule).
    targets: &[
        TargetKind::Gateway,
        TargetKind::ListenerSet,
        TargetKind::XListenerSet,
        TargetKind::HttpRoute,
        TargetKind::GrpcRoute,
    ],
    spec: SpecShape::Peer,
    own: false,
};

pub const BACKEND_TRAFFIC_POLICY: KindInfo = KindInfo {
    kind: PolicyKind::BackendTrafficPolicy,
    group: "gateway.envoyproxy.io",
    name: "BackendTrafficPolicy",
    versions: &["v1alpha1"],
    scope: Scope::Namespaced,
    // ListenerSet only (api/v1alpha1/backendtrafficpolicy_types.go, v1.9.0),
    // and GRPCRoute.
    targets: &[
        TargetKind::Gateway,
        TargetKind::ListenerSet,
        TargetKind::HttpRoute,
        TargetKind::GrpcRoute,
    ],
    spec: SpecShape::Peer,
    own: false,
};

impl PolicyKind {
    /// This kind's description.
    pub fn info(self) -> &'static KindInfo {
        match self {
            PolicyKind::RoutePolicy => &ROUTE_POLICY,
            PolicyKind::ClusterRoutePolicy => &CLUSTER_ROUTE_POLICY,
            PolicyKind::TrafficPolicy => &TRAFFIC_POLICY,
            PolicyKind::BackendTrafficPolicy => &BACKEND_TRAFFIC_POLICY,
        }
    }

    /// The kind a document's group and kind name, if the resolver reads it.
    pub fn find(group: &str, kind: &str) -> Option<PolicyKind> {
        KINDS
            .iter()
            .find(|k| k.group == group && k.name == kind)
            .map(|k| k.kind)
    }

    /// The `apiVersion` status reports.
    pub fn api_version(self) -> String {
        let info = self.info();
        format!(
            "{}/{}",
            info.group,
            info.versions.first().copied().unwrap_or_default()
        )
    }
}

impl fmt::Display for PolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.info().name)
    }
}

/// A validated policy. An invalid one is kept (with `invalid` reasons) so
/// that `status` can report it; the fold never sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub kind: PolicyKind,
    pub meta: Meta,
    /// `policy-weight` annotation; higher ranks first inside a level.
    pub weight: i64,
    pub targets: Vec<TargetRef>,
    pub defaults: Option<FieldMap>,
    pub overrides: Option<FieldMap>,
    /// Settings directly under `spec`, governed by `inherited-policy-priority`.
    pub plain: Option<FieldMap>,
    /// Why the policy was rejected; empty when valid.
    pub invalid: Vec<String>,
    /// Envoy Gateway's `mergeType` (BackendTrafficPolicy only): when set,
    /// the policy merges onto a less specific one instead of replacing it
    /// whole (docs/peers.md).
    pub merge_type: Option<MergeType>,
    /// kgateway's `targetSelectors`: label selectors over the policy's own
    /// namespace, turned into `targets` once everything is read.
    pub selectors: Vec<TargetSelector>,
    /// `spec.mergeStrategy` (GEP-713, 2025): the policy opted in, and its
    /// settings are in `plain`.
    pub strategy: Option<super::strategy::MergeStrategy>,
    /// The fields a PatchOverrides policy removes with `null`.
    pub removals: Vec<crate::field::Removal>,
    /// TargetRefs beyond GEP-713's 16 ancestors (parse/ancestors.rs): the
    /// policy does not apply there; status names them on the 16th entry.
    pub beyond_limit: Vec<TargetRef>,
}

/// Envoy Gateway's `mergeType` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MergeType {
    StrategicMerge,
    JsonMerge,
}

/// One `targetSelectors` entry: every object of `kind` in the policy's
/// namespace whose labels match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetSelector {
    pub kind: TargetKind,
    pub selector: super::gateway::LabelSelector,
    /// kgateway's `sectionName`: a listener of each selected Gateway or a
    /// rule of each selected HTTPRoute, as in a targetRef.
    pub section_name: Option<String>,
    /// `spec.targetSelectors[0]`, for messages and status.
    pub path: String,
}

impl Policy {
    /// `RoutePolicy shop/fast` or `ClusterRoutePolicy global`.
    pub fn display_name(&self) -> String {
        match &self.meta.namespace {
            Some(ns) => format!("{} {ns}/{}", self.kind, self.meta.name),
            None => format!("{} {}", self.kind, self.meta.name),
        }
    }

    pub fn is_valid(&self) -> bool {
        self.invalid.is_empty()
    }

    /// GEP-713's (2025) order inside a level, established first: older
    /// (absent first), then `namespace/name`; no weight.
    pub fn established_key(&self) -> (Option<&str>, &str, &str) {
        (
            self.meta.created.as_deref(),
            self.meta.namespace.as_deref().unwrap_or(""),
            self.meta.name.as_str(),
        )
    }

    /// Precedence inside a level (smaller ranks first): higher weight, then
    /// older, then `namespace/name` alphabetically.
    pub fn rank_key(&self) -> (i64, Option<&str>, &str, &str) {
        (
            -self.weight,
            self.meta.created.as_deref(),
            self.meta.namespace.as_deref().unwrap_or(""),
            self.meta.name.as_str(),
        )
    }
}

/// One `targetRef` as written, and what it resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetRef {
    pub group: String,
    pub kind: String,
    pub name: String,
    pub section_name: Option<String>,
    /// Where it was written (`spec.targetRefs[1]`), for messages.
    pub path: String,
    /// `None`: the target does not exist (`TargetNotFound`).
    pub resolved: Option<Target>,
    /// Why a target that exists cannot be used (a ListenerSet not attached
    /// or dropped, a Conflicted listener): still `TargetNotFound`, "attached
    /// to an invalid target resource" (apis/v1/policy_types.go), and status
    /// says which.
    pub unusable: Option<String>,
}

/// An object a policy attaches to; `Option<String>` is the sectionName
/// (listener of a Gateway, rule name of an HTTPRoute).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    GatewayClass(String),
    Namespace(String),
    Gateway(ObjectKey, Option<String>),
    /// A route of one of `ROUTE_KINDS` (HTTPRoute, GRPCRoute): the kind is
    /// part of the target, since an HTTPRoute and a GRPCRoute may share a
    /// namespace and name.
    Route(RouteKind, ObjectKey, Option<String>),
    /// A ListenerSet, whole or one of its listeners (docs/semantics.md,
    /// "ListenerSet").
    ListenerSet(super::listener_set::SetRef, Option<String>),
}

impl Target {
    /// The kind of object it names.
    pub fn kind(&self) -> TargetKind {
        match self {
            Target::GatewayClass(_) => TargetKind::GatewayClass,
            Target::Namespace(_) => TargetKind::Namespace,
            Target::Gateway(..) => TargetKind::Gateway,
            Target::Route(kind, ..) => kind.target_kind(),
            Target::ListenerSet(set, _) => match set.kind {
                super::listener_set::SetKind::ListenerSet => TargetKind::ListenerSet,
                super::listener_set::SetKind::XListenerSet => TargetKind::XListenerSet,
            },
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::GatewayClass(name) => write!(f, "GatewayClass {name}"),
            Target::Namespace(name) => write!(f, "Namespace {name}"),
            Target::Gateway(key, None) => write!(f, "Gateway {key}"),
            Target::Gateway(key, Some(listener)) => write!(f, "Gateway {key} listener {listener}"),
            Target::Route(kind, key, None) => write!(f, "{} {key}", kind.name()),
            Target::Route(kind, key, Some(rule)) => write!(f, "{} {key} rule {rule}", kind.name()),
            Target::ListenerSet(set, None) => write!(f, "{set}"),
            Target::ListenerSet(set, Some(listener)) => write!(f, "{set} listener {listener}"),
        }
    }
}

// ---- raw shapes ----

#[derive(Debug, Deserialize)]
pub struct RawPolicy {
    #[serde(default)]
    pub metadata: RawMeta,
    pub spec: RawPolicySpec,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(
    transform = crate::settings::schema_rules::add_stanza_aliases,
    extend("x-kubernetes-validations" = crate::settings::schema_rules::spec_rules())
)]
pub struct RawPolicySpec {
    /// GEP-713 (2025) merge strategy: AtomicDefaults, AtomicOverrides,
    /// PatchDefaults, PatchOverrides, or one of kgateway's four names
    /// (Custom). With it, the settings sit directly under spec.
    #[serde(default)]
    #[schemars(schema_with = "super::strategy::schema")]
    pub merge_strategy: Option<String>,
    /// One object the policy attaches to (read together with targetRefs).
    pub target_ref: Option<RawTargetRef>,
    /// The objects the policy attaches to.
    pub target_refs: Option<Vec<RawTargetRef>>,
    /// Settings that apply unless a lower level (closer to the route) sets them.
    #[serde(alias = "default")]
    pub defaults: Option<RawSettings>,
    /// Settings that win over every lower level.
    #[serde(alias = "override")]
    pub overrides: Option<RawSettings>,
    /// Plain setting: merged as the inherited-policy-priority annotation says.
    pub timeouts: Option<RawTimeouts>,
    /// Plain setting: merged as the inherited-policy-priority annotation says.
    pub retry: Option<RawRetry>,
    /// Plain setting: merged as the inherited-policy-priority annotation says.
    pub request_header_modifier: Option<RawHeaderModifier>,
    /// Plain setting: merged as the inherited-policy-priority annotation says.
    pub response_header_modifier: Option<RawHeaderModifier>,
}

impl RawPolicySpec {
    pub fn plain(&self) -> Option<RawSettings> {
        let plain = RawSettings {
            timeouts: self.timeouts.clone(),
            retry: self.retry.clone(),
            request_header_modifier: self.request_header_modifier.clone(),
            response_header_modifier: self.response_header_modifier.clone(),
        };
        let any = plain.timeouts.is_some()
            || plain.retry.is_some()
            || plain.request_header_modifier.is_some()
            || plain.response_header_modifier.is_some();
        any.then_some(plain)
    }
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RawTargetRef {
    /// gateway.networking.k8s.io, or "" (the default) for a Namespace.
    #[serde(default)]
    pub group: String,
    pub kind: String,
    pub name: String,
    /// Only the policy's own namespace may be named.
    pub namespace: Option<String>,
    /// A listener of a Gateway or ListenerSet, or an HTTPRoute rule name.
    pub section_name: Option<String>,
}

impl TargetKind {
    /// The target a reference of this kind names. A namespaced kind needs
    /// the namespace; None without one.
    pub fn target(
        self,
        namespace: Option<&str>,
        name: &str,
        section: Option<String>,
    ) -> Option<Target> {
        let key = |ns: &str| ObjectKey {
            namespace: ns.to_string(),
            name: name.to_string(),
        };
        Some(match self {
            TargetKind::GatewayClass => Target::GatewayClass(name.to_string()),
            TargetKind::Namespace => Target::Namespace(name.to_string()),
            TargetKind::Gateway => Target::Gateway(key(namespace?), section),
            TargetKind::HttpRoute => Target::Route(RouteKind::Http, key(namespace?), section),
            TargetKind::GrpcRoute => Target::Route(RouteKind::Grpc, key(namespace?), section),
            TargetKind::ListenerSet | TargetKind::XListenerSet => {
                let kind = match self {
                    TargetKind::XListenerSet => SetKind::XListenerSet,
                    _ => SetKind::ListenerSet,
                };
                Target::ListenerSet(
                    SetRef {
                        kind,
                        key: key(namespace?),
                    },
                    section,
                )
            }
        })
    }
}

#[cfg(test)]
mod kind_tests {
    use super::*;

    #[test]
    fn every_kind_is_described_once_and_found_by_its_names() {
        let every = [
            PolicyKind::RoutePolicy,
            PolicyKind::ClusterRoutePolicy,
            PolicyKind::TrafficPolicy,
            PolicyKind::BackendTrafficPolicy,
        ];
        for kind in every {
            // Exhaustive: a new variant does not compile until it is in
            // `every` (beside this match), so KINDS is checked for it.
            match kind {
                PolicyKind::RoutePolicy
                | PolicyKind::ClusterRoutePolicy
                | PolicyKind::TrafficPolicy
                | PolicyKind::BackendTrafficPolicy => {}
            }
            assert_eq!(KINDS.iter().filter(|k| k.kind == kind).count(), 1);
            let info = kind.info();
            assert_eq!(info.kind, kind);
            assert_eq!(PolicyKind::find(info.group, info.name), Some(kind));
        }
        assert_eq!(KINDS.len(), every.len());
        assert_eq!(PolicyKind::find(POLICY_GROUP, "RoutePolcy"), None);
        assert_eq!(
            PolicyKind::RoutePolicy.api_version(),
            "policy.attache.dev/v1alpha1"
        );
    }
}
