//! GatewayClass, Namespace, Gateway and listeners.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::kinds::SetRef;
use super::meta::{Meta, RawMeta};
use crate::topology::ObjectKey;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayClass {
    pub meta: Meta,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Namespace {
    pub meta: Meta,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gateway {
    pub meta: Meta,
    pub key: ObjectKey,
    pub class: String,
    /// Its own listeners, then (once everything is read) those of the
    /// ListenerSets it takes, in listener precedence; Conflicted ones are
    /// left out (docs/semantics.md, "ListenerSet").
    pub listeners: Vec<Listener>,
    /// `spec.allowedListeners.namespaces`: which ListenerSets it takes.
    pub allowed_listeners: ListenersFrom,
    /// Own listeners that are Conflicted (they serve nothing): name -> why.
    pub conflicted: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    pub name: String,
    pub port: u16,
    pub protocol: String,
    /// Lower-cased.
    pub hostname: Option<String>,
    pub allowed: AllowedRoutes,
    /// The ListenerSet it comes from; `None` for the Gateway's own.
    pub set: Option<SetRef>,
    /// `tls` (HTTPS listeners of the Gateway itself; a ListenerSet's `tls`
    /// is not read, docs/semantics.md "ListenerSet").
    pub tls: Option<crate::topology::ListenerTls>,
}

impl Listener {
    /// `http`, or `team-a/ls-a/http` for a ListenerSet's listener: how the
    /// project names a listener everywhere (entry names, route
    /// configurations, `options.listenerPorts`), built by the contract's
    /// one rule.
    pub fn key(&self) -> String {
        crate::contract::listener_key(self.set_name(), &self.name)
    }

    /// The set's namespace and name, in the contract's words.
    pub fn set_name(&self) -> Option<crate::contract::SetName<'_>> {
        self.set.as_ref().map(|s| crate::contract::SetName {
            namespace: &s.key.namespace,
            name: &s.key.name,
        })
    }

    /// `listener web` or `listener web of ListenerSet team-a/ls-a`, for messages.
    pub fn describe(&self) -> String {
        match &self.set {
            Some(set) => format!("listener {} of {set}", self.name),
            None => format!("listener {}", self.name),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedRoutes {
    pub from: NamespaceFrom,
    /// `(group, kind)` pairs; `None` means the protocol's default (HTTPRoute
    /// for HTTP and HTTPS).
    pub kinds: Option<Vec<(String, String)>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NamespaceFrom {
    Same,
    All,
    Selector(LabelSelector),
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelSelector {
    #[serde(default)]
    pub match_labels: BTreeMap<String, String>,
    #[serde(default)]
    pub match_expressions: Vec<LabelRequirement>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelRequirement {
    pub key: String,
    pub operator: LabelOperator,
    #[serde(default)]
    pub values: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum LabelOperator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

impl LabelSelector {
    /// Kubernetes semantics: every label and every expression must hold; an
    /// empty selector matches everything.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.match_labels
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
            && self.match_expressions.iter().all(|req| {
                let value = labels.get(&req.key);
                match req.operator {
                    LabelOperator::In => value.is_some_and(|v| req.values.contains(v)),
                    LabelOperator::NotIn => value.is_none_or(|v| !req.values.contains(v)),
                    LabelOperator::Exists => value.is_some(),
                    LabelOperator::DoesNotExist => value.is_none(),
                }
            })
    }
}

// ---- raw shapes (only the fields the resolver reads; others are ignored) ----

#[derive(Debug, Deserialize)]
pub struct RawGatewayClass {
    #[serde(default)]
    pub metadata: RawMeta,
}

#[derive(Debug, Deserialize)]
pub struct RawNamespace {
    #[serde(default)]
    pub metadata: RawMeta,
}

#[derive(Debug, Deserialize)]
pub struct RawGateway {
    #[serde(default)]
    pub metadata: RawMeta,
    pub spec: RawGatewaySpec,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawGatewaySpec {
    pub gateway_class_name: String,
    pub listeners: Vec<RawListener>,
    pub allowed_listeners: Option<RawAllowedListeners>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawListener {
    pub name: String,
    pub hostname: Option<String>,
    /// Required on a Gateway's listener; an XListenerSet's may leave it
    /// out (v1.4's dynamic port).
    pub port: Option<u16>,
    pub protocol: String,
    pub allowed_routes: Option<RawAllowedRoutes>,
    pub tls: Option<RawListenerTls>,
}

/// A listener's `tls` (Gateway API `GatewayTLSConfig`); `options` and
/// `frontendValidation` are not read.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawListenerTls {
    pub mode: Option<String>,
    #[serde(default)]
    pub certificate_refs: Vec<RawSecretRef>,
}

/// A `SecretObjectReference`: group `""` and kind `Secret` by default.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawSecretRef {
    pub group: Option<String>,
    pub kind: Option<String>,
    pub name: String,
    pub namespace: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawAllowedRoutes {
    pub namespaces: Option<RawRouteNamespaces>,
    pub kinds: Option<Vec<RawRouteGroupKind>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawRouteNamespaces {
    pub from: Option<RawFrom>,
    pub selector: Option<LabelSelector>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
pub enum RawFrom {
    All,
    Same,
    Selector,
}

#[derive(Debug, Deserialize)]
pub struct RawRouteGroupKind {
    pub group: Option<String>,
    pub kind: String,
}

/// A Gateway's `spec.allowedListeners.namespaces.from`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ListenersFrom {
    /// The default: no ListenerSet is taken.
    #[default]
    None,
    Same,
    All,
    Selector(LabelSelector),
}

impl ListenersFrom {
    /// The value as written, for messages.
    pub fn as_str(&self) -> &'static str {
        match self {
            ListenersFrom::None => "None",
            ListenersFrom::Same => "Same",
            ListenersFrom::All => "All",
            ListenersFrom::Selector(_) => "Selector",
        }
    }
}

#[derive(Debug, Default, Deserialize)]
pub struct RawAllowedListeners {
    pub namespaces: Option<RawListenerNamespaces>,
}

#[derive(Debug, Deserialize)]
pub struct RawListenerNamespaces {
    pub from: Option<RawListenersFrom>,
    pub selector: Option<LabelSelector>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
pub enum RawListenersFrom {
    None,
    Same,
    All,
    Selector,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn selectors_follow_kubernetes_semantics() {
        let sel: LabelSelector = serde_json::from_value(serde_json::json!({
            "matchLabels": {"team": "shop"},
            "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "stage"]},
                                 {"key": "legacy", "operator": "DoesNotExist"}]
        }))
        .unwrap();
        assert!(sel.matches(&labels(&[("team", "shop"), ("env", "prod")])));
        assert!(!sel.matches(&labels(&[("team", "shop"), ("env", "dev")])));
        assert!(!sel.matches(&labels(&[
            ("team", "shop"),
            ("env", "prod"),
            ("legacy", "y")
        ])));
        assert!(!sel.matches(&labels(&[("env", "prod")])));
        assert!(LabelSelector::default().matches(&labels(&[])));
    }
}
