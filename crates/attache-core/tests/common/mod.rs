//! Test helpers: YAML in, resolved entries out, through the public API only.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use attache_core::contract::RouteEntry;
use attache_core::source::{Origin, SourceDoc};
use attache_core::topology::ObjectKey;
use attache_core::{parse, resolve, Inputs, Resolved};
use serde::Deserialize;

pub mod peers;

/// Multi-document YAML as the CLI would read it from `test.yaml`.
pub fn docs(yaml: &str) -> Vec<SourceDoc> {
    serde_yaml_ng::Deserializer::from_str(yaml)
        .enumerate()
        .filter_map(|(i, d)| {
            let value = serde_json::Value::deserialize(d).unwrap();
            (!value.is_null()).then(|| SourceDoc {
                origin: Origin {
                    file: "test.yaml".into(),
                    document: i + 1,
                    item: None,
                },
                value,
            })
        })
        .collect()
}

pub fn inputs(yaml: &str) -> Inputs {
    parse(&docs(yaml))
}

pub fn key(text: &str) -> ObjectKey {
    let (ns, name) = text.split_once('/').unwrap();
    ObjectKey {
        namespace: ns.into(),
        name: name.into(),
    }
}

/// Resolves the only (or named) Gateway.
pub fn resolve_yaml(yaml: &str, gateway: &str) -> Resolved {
    let inputs = inputs(yaml);
    resolve(&inputs, &key(gateway)).unwrap()
}

pub fn entry<'a>(r: &'a Resolved, name: &str) -> &'a RouteEntry {
    r.resolution
        .document
        .routes
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no entry {name}; have {:?}", names(r)))
}

pub fn names(r: &Resolved) -> Vec<String> {
    r.resolution
        .document
        .routes
        .iter()
        .map(|e| e.name.clone())
        .collect()
}

pub fn retry_on(e: &RouteEntry) -> Option<Vec<String>> {
    e.settings.retry.as_ref().and_then(|r| r.retry_on.clone())
}

pub fn request_ms(e: &RouteEntry) -> Option<u64> {
    e.settings.timeouts.as_ref().and_then(|t| t.request_ms)
}

pub fn set_header(e: &RouteEntry, name: &str) -> Option<String> {
    e.settings
        .request_headers
        .as_ref()?
        .set
        .iter()
        .find(|h| h.name == name)
        .map(|h| h.value.clone())
}

/// GatewayClass `gc`, Gateway `appns/gw` (listener `http` on 80), and
/// HTTPRoute `appns/route` with one rule named `main` whose own values are
/// `rule_yaml` (indented as rule fields, may be empty).
pub fn topology(rule_yaml: &str) -> String {
    format!(
        r#"
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {{name: gc}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: gw, namespace: appns}}
spec:
  gatewayClassName: gc
  listeners:
  - {{name: http, port: 80, protocol: HTTP}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: route, namespace: appns}}
spec:
  parentRefs: [{{name: gw}}]
  rules:
  - name: main
    backendRefs: [{{name: svc, port: 80}}]
{rule_yaml}
"#
    )
}

/// Where a test policy attaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At {
    Class,
    Namespace,
    Gateway,
    Listener,
    Route,
    Rule,
}

impl At {
    pub fn target_ref(self) -> &'static str {
        match self {
            At::Class => "{group: gateway.networking.k8s.io, kind: GatewayClass, name: gc}",
            At::Namespace => "{group: \"\", kind: Namespace, name: appns}",
            At::Gateway => "{group: gateway.networking.k8s.io, kind: Gateway, name: gw}",
            At::Listener => "{group: gateway.networking.k8s.io, kind: Gateway, name: gw, sectionName: http}",
            At::Route => "{group: gateway.networking.k8s.io, kind: HTTPRoute, name: route}",
            At::Rule => "{group: gateway.networking.k8s.io, kind: HTTPRoute, name: route, sectionName: main}",
        }
    }
}

/// A policy document. `body` is the YAML under `spec` besides targetRefs
/// (e.g. `defaults: {timeouts: {request: 1s}}`).
pub fn policy(
    name: &str,
    at: At,
    body: &str,
    created: Option<&str>,
    weight: Option<i64>,
) -> String {
    let kind = if at == At::Class {
        "ClusterRoutePolicy"
    } else {
        "RoutePolicy"
    };
    let ns = if at == At::Class {
        String::new()
    } else {
        "\n  namespace: appns".to_string()
    };
    let created = created
        .map(|c| format!("\n  creationTimestamp: \"{c}\""))
        .unwrap_or_default();
    let weight = weight
        .map(|w| format!("\n  annotations: {{policy.attache.dev/policy-weight: \"{w}\"}}"))
        .unwrap_or_default();
    format!(
        "---\napiVersion: policy.attache.dev/v1alpha1\nkind: {kind}\nmetadata:\n  name: {name}{ns}{created}{weight}\nspec:\n  targetRefs: [{}]\n  {body}\n",
        at.target_ref()
    )
}

pub const ENTRY: &str = "http/appns/route/main";

/// A policy that opts into a GEP-713 (2025) strategy: `settings` sit
/// directly under `spec`, one YAML line each.
pub fn opted(
    name: &str,
    at: At,
    strategy: &str,
    settings: &[&str],
    created: Option<&str>,
) -> String {
    let mut body = format!("mergeStrategy: {strategy}");
    for s in settings {
        body.push_str("\n  ");
        body.push_str(s);
    }
    policy(name, at, &body, created, None)
}
