//! The schema-1 document: what the `attache` generator writes and the Envoy
//! filter reads (docs/contract.md).
//!
//! Both halves use these very types, so the writer and the reader cannot
//! drift. Rules that keep old filters working with newer generators:
//! - unknown fields are ignored on read (no `deny_unknown_fields` anywhere);
//! - a field that nothing sets is absent on write (`skip_serializing_if`);
//! - new fields are optional.
//!
//! This crate holds the data types and the few rules both halves must apply
//! identically ([`safety`]: which headers and values a policy may set); it
//! stays tiny inside the `.wasm`. The filter validates values when it compiles
//! the document; the generator never writes an invalid one.

#![forbid(unsafe_code)]

pub mod document_id;
pub mod entry_name;
pub mod envelope;
pub mod grpc;
pub mod precedence;
pub mod route_syntax;
pub mod safety;
pub mod schema2;
pub mod table;

pub use entry_name::{listener_key, EntryName, SetName};
pub use grpc::GrpcMethodMatch;
pub use schema2::{DataPlaneDocument, DATA_PLANE_SCHEMA_VERSION};

use serde::{Deserialize, Serialize};

/// The only schema version this crate reads and writes.
pub const SCHEMA_VERSION: u32 = 1;

/// One resolved Gateway: every (listener, route, rule) that attaches to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Document {
    pub schema_version: u32,
    /// `<namespace>/<name>` of the Gateway.
    pub gateway: String,
    /// How the filter treats the request; absent means the strict defaults.
    #[serde(default, skip_serializing_if = "Options::is_default")]
    pub options: Options,
    pub routes: Vec<RouteEntry>,
}

/// Document-wide switches for the data plane.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Options {
    /// When false (the default), the filter strips client-supplied Envoy
    /// control headers (`x-envoy-max-retries`, `x-envoy-upstream-rq-timeout-ms`,
    /// ...) from every request so that clients cannot lengthen or multiply
    /// what the policy says. Set true only behind a trusted internal mesh.
    #[serde(default)]
    pub trust_client_control_headers: bool,
    /// True in documents for Istio (`attache render wasmplugin`): the filter
    /// finds entries by the route names istiod gives Envoy routes
    /// ([`istio_route_name`]) instead of by entry name.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub istio_route_names: bool,
    /// Listener key (`http`, `team-a/ls-a/http`, see [`EntryName`]) -> port, in documents for Istio: istiod's route
    /// name leaves the listener out, so where one name stands for entries of
    /// several listeners with different settings, the filter picks by the
    /// request's destination port.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub listener_ports: std::collections::BTreeMap<String, u16>,
}

impl RouteEntry {
    /// The key of the listener the entry is on (`http`, or
    /// `team-a/ls-a/http` on a ListenerSet's listener), from its name.
    pub fn listener_key(&self) -> String {
        EntryName::split(&self.name).listener_key()
    }
}

impl Options {
    pub fn is_default(&self) -> bool {
        *self == Options::default()
    }
}

/// The effective settings of one route rule on one listener. Read through
/// `FlatEntry`, written with its [`Settings`] flattened: on the wire both
/// are the entry schema 1 has always had.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", from = "FlatEntry")]
pub struct RouteEntry {
    /// `<listener>/<route namespace>/<route name>/<rule>`; also the Envoy
    /// route name in configs the project renders.
    pub name: String,
    /// The listener's own name (a ListenerSet's listener keeps its bare
    /// name here; its key is in `name`, see [`EntryName`]).
    pub listener: String,
    /// `<namespace>/<name>` of the ListenerSet whose listener serves the
    /// rule; absent on a Gateway's own listener.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listener_set: Option<String>,
    /// `XListenerSet` when that set is of the experimental kind; absent for
    /// `ListenerSet`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listener_set_kind: Option<String>,
    pub route_namespace: String,
    pub route_name: String,
    /// The rule's `name`, or its zero-based index when it has none.
    pub rule: String,
    /// The kind of the route, when it is not an HTTPRoute: `GRPCRoute`.
    /// Absent means HTTPRoute, so every HTTPRoute entry reads as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_kind: Option<String>,
    /// Effective hostnames (listener and route intersected); empty means any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hostnames: Vec<String>,
    /// Gateway API `HTTPRouteMatch`es of the rule, with Gateway API defaults
    /// filled in by the generator. Empty means "match everything".
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matches: Vec<HttpRouteMatch>,
    /// What the data plane enforces. Flattened: on the wire its fields sit
    /// in the entry, where they always have.
    #[serde(flatten)]
    pub settings: Settings,
    /// Provenance: effective field path (`timeouts.requestMs`,
    /// `requestHeaders.set.x-a`, ...) to the supplier. Informational only;
    /// the filter ignores it.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub sources: std::collections::BTreeMap<String, String>,
}

/// How a [`RouteEntry`] is read: its fields, flat, as schema 1 has them.
/// Reading `#[serde(flatten)]` would go through serde's buffered map, which
/// copies every unknown field and loses the path of a bad value (an error
/// at `routes[0]` instead of `routes[0].retry.attempts`); writing it costs
/// neither, so only reading takes this detour.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FlatEntry {
    name: String,
    listener: String,
    #[serde(default)]
    listener_set: Option<String>,
    #[serde(default)]
    listener_set_kind: Option<String>,
    route_namespace: String,
    route_name: String,
    rule: String,
    #[serde(default)]
    route_kind: Option<String>,
    #[serde(default)]
    hostnames: Vec<String>,
    #[serde(default, deserialize_with = "exact_vec")]
    matches: Vec<HttpRouteMatch>,
    #[serde(default)]
    timeouts: Option<Timeouts>,
    #[serde(default)]
    retry: Option<Retry>,
    #[serde(default)]
    request_headers: Option<HeaderChanges>,
    #[serde(default)]
    response_headers: Option<HeaderChanges>,
    #[serde(default)]
    sources: std::collections::BTreeMap<String, String>,
}

impl From<FlatEntry> for RouteEntry {
    /// Every setting is named (no `..`): a new one does not compile until
    /// it is read.
    fn from(flat: FlatEntry) -> Self {
        let FlatEntry {
            name,
            listener,
            listener_set,
            listener_set_kind,
            route_namespace,
            route_name,
            rule,
            route_kind,
            hostnames,
            matches,
            timeouts,
            retry,
            request_headers,
            response_headers,
            sources,
        } = flat;
        RouteEntry {
            name,
            listener,
            listener_set,
            listener_set_kind,
            route_namespace,
            route_name,
            rule,
            route_kind,
            hostnames,
            matches,
            settings: Settings {
                timeouts,
                retry,
                request_headers,
                response_headers,
            },
            sources,
        }
    }
}

/// Every setting the data plane enforces, apart from the entry's identity
/// and matches. Consumers destructure it in full (no `..`), so a new
/// setting does not compile until each of them enforces, renders, encodes
/// or explains it (ARCHITECTURE.md, "Adding a setting").
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeouts: Option<Timeouts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<Retry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_headers: Option<HeaderChanges>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_headers: Option<HeaderChanges>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Timeouts {
    /// Whole-request timeout; 0 means no timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_ms: Option<u64>,
    /// Per-attempt timeout; 0 means no per-attempt timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_request_ms: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Retry {
    /// Retries after the first try (Envoy's `num_retries`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<u32>,
    /// HTTP status codes (400-599) that are retried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codes: Option<Vec<u16>>,
    /// Base interval of Envoy's retry back-off. Envoy has no request header
    /// for it: it is carried in the rendered route configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_ms: Option<u64>,
    /// Envoy `retry_on` triggers named by the winning settings. The data
    /// plane adds `retriable-status-codes` itself when `codes` is non-empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_on: Option<Vec<String>>,
}

/// Header changes in the order the filter applies them: remove, then set,
/// then add (docs/filter.md explains why).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HeaderChanges {
    #[serde(default)]
    pub set: Vec<Header>,
    #[serde(default)]
    pub add: Vec<Header>,
    /// Lower-case header names.
    #[serde(default)]
    pub remove: Vec<String>,
}

impl HeaderChanges {
    pub fn is_empty(&self) -> bool {
        self.set.is_empty() && self.add.is_empty() && self.remove.is_empty()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Header {
    /// Lower-case.
    pub name: String,
    pub value: String,
}

/// The `routeKind` of a GRPCRoute rule's entry.
pub const GRPC_ROUTE_KIND: &str = "GRPCRoute";

impl RouteEntry {
    /// Whether the entry is a GRPCRoute rule's (its backend speaks HTTP/2).
    pub fn is_grpc(&self) -> bool {
        self.route_kind.as_deref() == Some(GRPC_ROUTE_KIND)
    }
}

/// Gateway API `HTTPRouteMatch`. All conditions must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpRouteMatch {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathMatch>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<HeaderMatch>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub query_params: Vec<QueryParamMatch>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// A GRPCRoute's method match, in place of `path` (a match has one or
    /// the other): the path it stands for is [`HttpRouteMatch::path_match`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc_method: Option<GrpcMethodMatch>,
}

impl HttpRouteMatch {
    /// The path this match requires: `path`, or the one a gRPC method match
    /// stands for ([`GrpcMethodMatch::path_match`]); None means any path.
    /// The renderer and the filter's fallback both read the path here.
    pub fn path_match(&self) -> Option<std::borrow::Cow<'_, PathMatch>> {
        match (&self.path, &self.grpc_method) {
            (Some(p), _) => Some(std::borrow::Cow::Borrowed(p)),
            (None, Some(g)) => g.path_match().map(std::borrow::Cow::Owned),
            (None, None) => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathMatch {
    #[serde(rename = "type", default)]
    pub kind: PathMatchType,
    #[serde(default = "root_path")]
    pub value: String,
}

fn root_path() -> String {
    "/".to_string()
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PathMatchType {
    Exact,
    #[default]
    PathPrefix,
    RegularExpression,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum StringMatchType {
    #[default]
    Exact,
    RegularExpression,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeaderMatch {
    #[serde(rename = "type", default)]
    pub kind: StringMatchType,
    /// Compared case-insensitively.
    pub name: String,
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueryParamMatch {
    #[serde(rename = "type", default)]
    pub kind: StringMatchType,
    /// Compared case-sensitively (Gateway API).
    pub name: String,
    pub value: String,
}

/// `<listener>/<route namespace>/<route name>/<rule>`.
pub fn route_entry_name(listener: &str, namespace: &str, route: &str, rule: &str) -> String {
    EntryName {
        set: None,
        listener,
        namespace,
        route,
        rule,
    }
    .to_string()
}

/// The name istiod gives the Envoy route of the rule an entry name
/// (`<listener key>/<namespace>/<route>/<rule>`) stands for: the rule's `name`,
/// or `<namespace>.<route>.<rule index>` for a rule without one (istio
/// pilot/pkg/config/kube/gateway/conversion.go, `convertHTTPRoute`; the route
/// translation appends `.<match name>` only to named matches, which Gateway
/// API conversion does not produce). The entry name's rule part is the
/// rule's name or, for a rule without one, its index, so an all-digit part
/// is taken for an index: a rule named `3` is then not found by this name
/// and its requests take fallback matching, with the same result.
///
/// A rule served through a ListenerSet's listener has the same name: istiod
/// makes each set listener an Istio Gateway of its own
/// (`<set namespace>/<set name>~istio-autogenerated-k8s-gateway~<listener>`,
/// pilot/pkg/config/kube/gateway/gateway_collection.go
/// `ListenerSetCollection` with pkg/config/gateway/kube/gatewayapi.go
/// `InternalGatewayName`, istio/istio 86c9f01f), but `convertHTTPRoute`
/// names the route from the rule alone, whatever its parent. So only the
/// entry name's last three segments count, whether it has four (a
/// Gateway's listener) or six (a set's); docs/istio.md.
pub fn istio_route_name(entry_name: &str) -> Option<String> {
    EntryName::split(entry_name).istio_route_name()
}

/// A list read to its exact length. serde grows a list of unknown length
/// like any `Vec`, to at least 4 elements: for the one match most routes
/// have, 3 unused `HttpRouteMatch`es each, about 3 MB over 10,000 routes of
/// the filter's memory while it loads (docs/filter.md).
pub(crate) fn exact_vec<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    let mut items = Vec::<T>::deserialize(deserializer)?;
    items.shrink_to_fit();
    Ok(items)
}

#[cfg(test)]
mod tests;
