//! The world the peers' tests share (tests/peers_*.rs): a Gateway with two
//! listeners, two HTTPRoutes, and peer policy documents.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use attache_core::contract::RouteEntry;

use super::resolve_yaml;

/// Gateway `apps/gw` (annotated with `priority` when given), HTTPRoute
/// `apps/r` (rule `a`, then an unnamed rule) labelled `tier: web`, and
/// HTTPRoute `apps/other` without labels.
pub fn world(priority: Option<&str>, rule_a: &str) -> String {
    let annotations = priority
        .map(|p| format!("  annotations: {{kgateway.dev/inherited-policy-priority: {p}}}\n"))
        .unwrap_or_default();
    format!(
        r#"apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {{name: gc}}
spec: {{controllerName: example.com/c}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: gw
  namespace: apps
{annotations}spec:
  gatewayClassName: gc
  listeners:
    - {{name: http, protocol: HTTP, port: 80}}
    - {{name: alt, protocol: HTTP, port: 81}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: r, namespace: apps, labels: {{tier: web}}}}
spec:
  parentRefs: [{{name: gw}}]
  rules:
    - name: a
      matches: [{{path: {{type: PathPrefix, value: /a}}}}]
{rule_a}
    - matches: [{{path: {{type: PathPrefix, value: /b}}}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: other, namespace: apps}}
spec:
  parentRefs: [{{name: gw}}]
  rules:
    - matches: [{{path: {{type: PathPrefix, value: /other}}}}]
"#
    )
}

/// A peer policy document; `target` is a YAML flow mapping or list item.
pub fn peer(kind: &str, name: &str, meta_extra: &str, spec: &str) -> String {
    let group = match kind {
        "TrafficPolicy" => "gateway.kgateway.dev",
        _ => "gateway.envoyproxy.io",
    };
    format!(
        "---\napiVersion: {group}/v1alpha1\nkind: {kind}\nmetadata:\n  name: {name}\n  namespace: apps\n{meta_extra}spec:\n{spec}\n"
    )
}

pub const ON_GATEWAY: &str =
    "  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: gw}]\n";
pub const ON_LISTENER: &str =
    "  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: gw, sectionName: http}]\n";
pub const ON_ROUTE: &str =
    "  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: r}]\n";
pub const ON_RULE: &str =
    "  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: r, sectionName: a}]\n";

pub const A: &str = "http/apps/r/a";
pub const B: &str = "http/apps/r/1";
pub const OTHER: &str = "http/apps/other/0";

pub fn resolved(yaml: &str) -> attache_core::Resolved {
    resolve_yaml(yaml, "apps/gw")
}

pub fn backend_ms(e: &RouteEntry) -> Option<u64> {
    e.settings
        .timeouts
        .as_ref()
        .and_then(|t| t.backend_request_ms)
}

pub fn attempts(e: &RouteEntry) -> Option<u32> {
    e.settings.retry.as_ref().and_then(|r| r.attempts)
}

pub fn codes(e: &RouteEntry) -> Option<Vec<u16>> {
    e.settings.retry.as_ref().and_then(|r| r.codes.clone())
}

pub fn response_set(e: &RouteEntry, name: &str) -> Option<String> {
    e.settings
        .response_headers
        .as_ref()?
        .set
        .iter()
        .find(|h| h.name == name)
        .map(|h| h.value.clone())
}
