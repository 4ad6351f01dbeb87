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

/// The effective settings of one route rule on one listener.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
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
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "exact_vec"
    )]
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
mod tests {
    use super::*;

    #[test]
    fn a_listener_sets_entry_has_istiods_name_from_its_last_three_segments() {
        assert_eq!(
            istio_route_name("team-a/ls-a/http/shop/gifts/0").as_deref(),
            Some("shop.gifts.0")
        );
        assert_eq!(
            istio_route_name("team-a/ls-a/http/shop/storefront/pages").as_deref(),
            Some("pages")
        );
    }

    #[test]
    fn istio_route_names_are_the_rule_name_or_namespace_route_index() {
        assert_eq!(
            istio_route_name("http/shop/gifts/0").as_deref(),
            Some("shop.gifts.0")
        );
        assert_eq!(
            istio_route_name("http/shop/storefront/pages").as_deref(),
            Some("pages")
        );
        assert_eq!(
            istio_route_name("admin/infra/ops/12").as_deref(),
            Some("infra.ops.12")
        );
        assert_eq!(istio_route_name("http/shop/x/"), None);
        assert_eq!(istio_route_name("not-an-entry-name"), None);
    }

    #[test]
    fn unknown_fields_are_ignored_and_absent_fields_default() {
        let doc: Document = serde_json::from_str(
            r#"{"schemaVersion":1,"gateway":"infra/edge","future":{"x":1},
                "routes":[{"name":"http/shop/a/0","listener":"http","routeNamespace":"shop",
                "routeName":"a","rule":"0","newThing":true,"retry":{"codes":[503],"jitter":"2ms"}}]}"#,
        )
        .unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(doc.routes.len(), 1);
        assert_eq!(
            doc.routes[0]
                .settings
                .retry
                .as_ref()
                .and_then(|r| r.codes.clone()),
            Some(vec![503])
        );
        assert!(doc.routes[0].settings.timeouts.is_none());
        assert!(!doc.options.trust_client_control_headers);
    }

    #[test]
    fn unset_fields_are_absent_on_write() {
        let entry = RouteEntry {
            name: route_entry_name("http", "shop", "a", "0"),
            listener: "http".into(),
            listener_set: None,
            listener_set_kind: None,
            route_namespace: "shop".into(),
            route_name: "a".into(),
            rule: "0".into(),
            settings: Settings {
                timeouts: Some(Timeouts {
                    request_ms: Some(0),
                    ..Timeouts::default()
                }),
                ..Settings::default()
            },
            ..RouteEntry::default()
        };
        let json = serde_json::to_string(&entry).unwrap_or_default();
        assert_eq!(
            json,
            r#"{"name":"http/shop/a/0","listener":"http","routeNamespace":"shop","routeName":"a","rule":"0","timeouts":{"requestMs":0}}"#
        );
    }

    #[test]
    fn flattened_settings_keep_the_entrys_wire_format() {
        // Every field set, in the order schema 1 has always written them:
        // the settings sit between `matches` and `sources`, not nested.
        let text = concat!(
            r#"{"name":"ls/a/http/shop/a/0","listener":"http","listenerSet":"ls/a","#,
            r#""listenerSetKind":"XListenerSet","routeNamespace":"shop","routeName":"a","#,
            r#""rule":"0","routeKind":"GRPCRoute","hostnames":["a.example"],"#,
            r#""matches":[{"path":{"type":"Exact","value":"/a"}}],"#,
            r#""timeouts":{"requestMs":1,"backendRequestMs":2},"#,
            r#""retry":{"attempts":3,"codes":[503],"backoffMs":4,"retryOn":["reset"]},"#,
            r#""requestHeaders":{"set":[{"name":"x-a","value":"1"}],"add":[],"remove":["x-b"]},"#,
            r#""responseHeaders":{"set":[],"add":[{"name":"x-c","value":"2"}],"remove":[]},"#,
            r#""sources":{"timeouts.requestMs":"p"}}"#
        );
        let entry: RouteEntry = serde_json::from_str(text).unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(
            entry.settings.retry.as_ref().and_then(|r| r.attempts),
            Some(3)
        );
        assert_eq!(entry.matches.len(), 1);
        assert_eq!(serde_json::to_string(&entry).ok().as_deref(), Some(text));
    }

    #[test]
    fn path_match_defaults_follow_gateway_api() {
        let m: HttpRouteMatch = serde_json::from_str(r#"{"path":{}}"#).unwrap_or_default();
        assert_eq!(
            m.path,
            Some(PathMatch {
                kind: PathMatchType::PathPrefix,
                value: "/".into()
            })
        );
    }
}
