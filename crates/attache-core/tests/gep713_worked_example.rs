//! GEP-713 (2025)'s own examples as RoutePolicies, golden (docs/semantics.md,
//! "Merge strategies").
//!
//! The GEP's ColorPolicy with `strategy: atomic|patch` and its outcomes 1-7
//! was not in the stored copy of geps/gep-713/index.md this was written
//! from; what is there, and is translated here, is (a) each strategy's
//! example, a policy on a Gateway (established) and one on an HTTPRoute
//! (challenger), and (b) the "abstract process" DAG: a1 > (b1 > c1,
//! b2 > (c1, c2)) with p1 -> a1 and p2 -> b2, where c1 in the context of
//! b1 gets p1, and c1 and c2 in the context of b2 get p1 + p2. Here a1 is
//! Gateway `gw`, b1 and b2 HTTPRoutes, and the c's their rules.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use attache_core::contract::RouteEntry;
use attache_core::resolve;
use common::*;

/// One entry as `entry request backendRequest attempts`, `-` for unset.
fn line(e: &RouteEntry) -> String {
    let t = e.settings.timeouts.clone().unwrap_or_default();
    let show = |v: Option<u64>| v.map_or("-".to_string(), |v| format!("{v}ms"));
    let attempts = e.settings.retry.as_ref().and_then(|r| r.attempts);
    format!(
        "{} {} {} {}",
        e.name,
        show(t.request_ms),
        show(t.backend_request_ms),
        attempts.map_or("-".to_string(), |a| a.to_string())
    )
}

fn lines(yaml: &str) -> Vec<String> {
    let inputs = inputs(yaml);
    assert!(inputs.diagnostics.is_empty(), "{:?}", inputs.diagnostics);
    let doc = resolve(&inputs, &key("appns/gw"))
        .unwrap()
        .resolution
        .document;
    let full = attache_core::resolve::resolve_unshared(&inputs, &key("appns/gw")).unwrap();
    assert_eq!(doc, full);
    doc.routes.iter().map(line).collect()
}

/// (a) Gateway policy `{request: 10s, attempts: 2}` (established) and
/// HTTPRoute policy `{request: 5s, backendRequest: 1s}` (challenger); the
/// established one dictates the strategy.
#[test]
fn each_strategy_between_a_gateway_and_an_httproute_policy() {
    let cases = [
        // Atomic defaults: the challenger's spec in its entirety.
        (
            "AtomicDefaults",
            "AtomicDefaults",
            "http/appns/route/main 5000ms 1000ms -",
        ),
        // Atomic overrides: the established spec in its entirety.
        (
            "AtomicOverrides",
            "AtomicOverrides",
            "http/appns/route/main 10000ms - 2",
        ),
        // Patch defaults: rfc7386(target = established, patch = challenger).
        (
            "PatchDefaults",
            "PatchDefaults",
            "http/appns/route/main 5000ms 1000ms 2",
        ),
        // Patch overrides: rfc7386(target = challenger, patch = established).
        (
            "PatchOverrides",
            "PatchOverrides",
            "http/appns/route/main 10000ms 1000ms 2",
        ),
        // The established spec dictates: the Gateway's atomic overrides
        // wins whatever the route's policy chose.
        (
            "AtomicOverrides",
            "PatchDefaults",
            "http/appns/route/main 10000ms - 2",
        ),
    ];
    for (established, challenger, want) in cases {
        let yaml = [
            topology(""),
            opted(
                "p-gw",
                At::Gateway,
                established,
                &["timeouts: {request: 10s}", "retry: {attempts: 2}"],
                None,
            ),
            opted(
                "p-route",
                At::Route,
                challenger,
                &["timeouts: {request: 5s, backendRequest: 1s}"],
                None,
            ),
        ]
        .concat();
        assert_eq!(lines(&yaml), [want], "{established} / {challenger}");
    }
}

/// (b) The abstract process: c1 in the context of b1 is augmented by p1;
/// c1 and c2 in the context of b2 by p1 + p2 (here Patch defaults).
#[test]
fn the_abstract_process_dag() {
    let yaml = r#"
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: gc}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: appns}
spec:
  gatewayClassName: gc
  listeners:
  - {name: http, port: 80, protocol: HTTP}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: b1, namespace: appns}
spec:
  parentRefs: [{name: gw}]
  hostnames: [b1.example.com]
  rules:
  - name: c1
    backendRefs: [{name: svc, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: b2, namespace: appns}
spec:
  parentRefs: [{name: gw}]
  hostnames: [b2.example.com]
  rules:
  - name: c1
    backendRefs: [{name: svc, port: 80}]
  - name: c2
    backendRefs: [{name: svc, port: 80}]
---
apiVersion: policy.attache.dev/v1alpha1
kind: RoutePolicy
metadata: {name: p1, namespace: appns}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: gw}]
  mergeStrategy: PatchDefaults
  timeouts: {request: 10s}
  retry: {attempts: 2}
---
apiVersion: policy.attache.dev/v1alpha1
kind: RoutePolicy
metadata: {name: p2, namespace: appns}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: b2}]
  mergeStrategy: PatchDefaults
  timeouts: {request: 5s, backendRequest: 1s}
"#;
    assert_eq!(
        lines(yaml),
        [
            "http/appns/b1/c1 10000ms - 2",
            "http/appns/b2/c1 5000ms 1000ms 2",
            "http/appns/b2/c2 5000ms 1000ms 2",
        ]
    );
}
