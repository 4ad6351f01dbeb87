//! HTTPRoute: parent references, rules, delegation and backends.

use serde::Deserialize;

use super::kinds::RouteKind;
pub use super::kinds::GATEWAY_GROUP;
use super::meta::{Meta, RawMeta};
use crate::contract::{GrpcMethodMatch, HeaderMatch, HttpRouteMatch};
use crate::field::FieldMap;
use crate::settings::{RawHeaderModifier, RawRetry, RawTimeouts};
use crate::topology::{BackendTarget, ObjectKey};

/// A route of any kind of `ROUTE_KINDS` (HTTPRoute, GRPCRoute): GRPCRoute
/// is read into the same shape, its method matches as the paths they stand
/// for (docs/semantics.md, "GRPCRoute").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRoute {
    pub kind: RouteKind,
    pub meta: Meta,
    pub key: ObjectKey,
    pub parent_refs: Vec<ParentRef>,
    /// Lower-cased; empty means any.
    pub hostnames: Vec<String>,
    pub rules: Vec<Rule>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParentRef {
    pub group: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub section_name: Option<String>,
    pub port: Option<u16>,
}

impl HttpRoute {
    /// `GRPCRoute shop/cart`, for messages.
    pub fn object(&self) -> String {
        format!("{} {}", self.kind.name(), self.key)
    }
}

impl ParentRef {
    /// Whether it names a Gateway (rather than a delegating HTTPRoute or a
    /// kind Attaché does not read): the attachment walk and the note on a
    /// Gateway the input lacks both ask this.
    pub fn is_gateway(&self) -> bool {
        self.group == GATEWAY_GROUP && self.kind == "Gateway"
    }

    /// Whether it names `set` (group, kind, namespace, name), compared in
    /// place.
    pub fn names_set(&self, set: &super::listener_set::SetRef) -> bool {
        set.kind.group() == self.group
            && set.kind.name() == self.kind
            && set.key.namespace == self.namespace
            && set.key.name == self.name
    }

    /// The ListenerSet it names, when its group and kind are one of the two
    /// set kinds (docs/semantics.md, "ListenerSet").
    pub fn set(&self) -> Option<super::listener_set::SetRef> {
        super::listener_set::SetKind::find(&self.group, &self.kind).map(|kind| {
            super::listener_set::SetRef {
                kind,
                key: ObjectKey {
                    namespace: self.namespace.clone(),
                    name: self.name.clone(),
                },
            }
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub index: usize,
    pub name: Option<String>,
    /// Normalised: never empty, every match has a path.
    pub matches: Vec<HttpRouteMatch>,
    /// The rule's own timeouts, retry and header filters ("the object's values").
    pub inline: FieldMap,
    /// Child routes this rule delegates to (backendRefs of kind HTTPRoute).
    pub delegates: Vec<ObjectKey>,
    /// Service backends.
    pub backends: Vec<BackendTarget>,
}

impl Rule {
    /// The rule's name, or its zero-based index: the `rule` of schema-1.
    pub fn label(&self) -> String {
        self.name.clone().unwrap_or_else(|| self.index.to_string())
    }
}

// ---- raw shapes ----

#[derive(Debug, Deserialize)]
pub struct RawHttpRoute {
    #[serde(default)]
    pub metadata: RawMeta,
    #[serde(default)]
    pub spec: RawRouteSpec,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawRouteSpec {
    #[serde(default)]
    pub parent_refs: Vec<RawParentRef>,
    #[serde(default)]
    pub hostnames: Vec<String>,
    #[serde(default)]
    pub rules: Vec<RawRule>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawParentRef {
    pub group: Option<String>,
    pub kind: Option<String>,
    pub namespace: Option<String>,
    pub name: String,
    pub section_name: Option<String>,
    pub port: Option<u16>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawRule {
    pub name: Option<String>,
    #[serde(default)]
    pub matches: Vec<HttpRouteMatch>,
    #[serde(default)]
    pub filters: Vec<RawFilter>,
    #[serde(default)]
    pub backend_refs: Vec<RawBackendRef>,
    pub timeouts: Option<RawTimeouts>,
    pub retry: Option<RawRetry>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawFilter {
    #[serde(rename = "type")]
    pub kind: String,
    pub request_header_modifier: Option<RawHeaderModifier>,
    pub response_header_modifier: Option<RawHeaderModifier>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawBackendRef {
    pub group: Option<String>,
    pub kind: Option<String>,
    pub name: String,
    pub namespace: Option<String>,
    pub port: Option<u16>,
    pub weight: Option<u32>,
    /// Filters for the requests sent to this backend only.
    #[serde(default)]
    pub filters: Vec<RawFilter>,
}

// ---- GRPCRoute's raw shapes: read, then turned into the HTTPRoute ones ----

#[derive(Debug, Deserialize)]
pub struct RawGrpcRoute {
    #[serde(default)]
    pub metadata: RawMeta,
    #[serde(default)]
    pub spec: RawGrpcRouteSpec,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawGrpcRouteSpec {
    #[serde(default)]
    pub parent_refs: Vec<RawParentRef>,
    #[serde(default)]
    pub hostnames: Vec<String>,
    #[serde(default)]
    pub rules: Vec<RawGrpcRule>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawGrpcRule {
    pub name: Option<String>,
    #[serde(default)]
    pub matches: Vec<RawGrpcMatch>,
    #[serde(default)]
    pub filters: Vec<RawFilter>,
    #[serde(default)]
    pub backend_refs: Vec<RawBackendRef>,
    /// Not applied by Attaché: a note names it.
    pub session_persistence: Option<serde_json::Value>,
}

/// Gateway API `GRPCRouteMatch`.
#[derive(Debug, Deserialize)]
pub struct RawGrpcMatch {
    pub method: Option<GrpcMethodMatch>,
    #[serde(default)]
    pub headers: Vec<HeaderMatch>,
}

impl RawGrpcRule {
    /// The rule as an HTTPRoute rule: its method matches in place of paths,
    /// no timeouts or retry (a GRPCRoute has none of its own).
    pub fn into_http(self) -> RawRule {
        RawRule {
            name: self.name,
            matches: self
                .matches
                .into_iter()
                .map(|m| HttpRouteMatch {
                    grpc_method: m.method,
                    headers: m.headers,
                    ..HttpRouteMatch::default()
                })
                .collect(),
            filters: self.filters,
            backend_refs: self.backend_refs,
            timeouts: None,
            retry: None,
        }
    }
}
