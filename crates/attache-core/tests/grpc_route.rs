//! GRPCRoute (docs/semantics.md, "GRPCRoute"): read like an HTTPRoute, its
//! method matches carried as gRPC method matches, attached by
//! allowedRoutes.kinds, targeted by RoutePolicy and the peers' kinds, and
//! never allowed to take an HTTPRoute's entry names.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use attache_core::contract::{GrpcMethodMatch, PathMatchType, StringMatchType};
use attache_core::{policy_status, Severity};
use common::*;

const GATEWAY: &str = r#"
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: edge, namespace: infra}
spec:
  gatewayClassName: gc
  listeners:
  - name: http
    port: 80
    protocol: HTTP
    allowedRoutes: {namespaces: {from: All}}
  - name: web-only
    port: 8080
    protocol: HTTP
    allowedRoutes:
      namespaces: {from: All}
      kinds: [{kind: HTTPRoute}]
"#;

const CART: &str = r#"---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: cart, namespace: shop}
spec:
  parentRefs: [{name: edge, namespace: infra}]
  hostnames: [grpc.example.com]
  rules:
  - name: add
    matches:
    - method: {service: shop.v1.Cart, method: Add}
      headers: [{name: x-tenant, value: acme}]
    filters:
    - type: RequestHeaderModifier
      requestHeaderModifier: {set: [{name: x-from, value: rule}]}
    backendRefs:
    - name: cart
      port: 50051
      filters:
      - type: ResponseHeaderModifier
        responseHeaderModifier: {add: [{name: x-backend, value: cart}]}
  - matches:
    - method: {type: RegularExpression, service: "shop\\.v1\\..*"}
    backendRefs: [{name: cart, port: 50051}]
  - backendRefs: [{name: cart, port: 50051}]
"#;

fn policy_on(kind: &str, section: &str, spec: &str) -> String {
    format!(
        r#"---
apiVersion: policy.attache.dev/v1alpha1
kind: RoutePolicy
metadata: {{name: p, namespace: shop}}
spec:
  targetRefs: [{{group: gateway.networking.k8s.io, kind: {kind}, name: cart{section}}}]
{spec}"#
    )
}

#[test]
fn a_grpcroute_rule_is_an_entry_with_its_kind_and_method_matches() {
    let r = resolve_yaml(&format!("{GATEWAY}{CART}"), "infra/edge");
    // Admitted by default on the HTTP listener, not where kinds leaves it out.
    assert_eq!(
        names(&r),
        ["http/shop/cart/add", "http/shop/cart/1", "http/shop/cart/2"]
    );
    let add = entry(&r, "http/shop/cart/add");
    assert_eq!(add.route_kind.as_deref(), Some("GRPCRoute"));
    assert_eq!(add.hostnames, ["grpc.example.com"]);
    let m = &add.matches[0];
    assert_eq!(m.path, None);
    assert_eq!(
        m.grpc_method,
        Some(GrpcMethodMatch {
            kind: StringMatchType::Exact,
            service: Some("shop.v1.Cart".into()),
            method: Some("Add".into()),
        })
    );
    assert_eq!(m.headers[0].name, "x-tenant");
    let path = m.path_match().unwrap();
    assert_eq!(
        (path.kind, path.value.as_str()),
        (PathMatchType::Exact, "/shop.v1.Cart/Add")
    );
    // The rule's own header filter is its inline value, as on an HTTPRoute.
    assert_eq!(set_header(add, "x-from").as_deref(), Some("rule"));
    assert_eq!(
        add.sources
            .get("requestHeaders.set.x-from")
            .map(String::as_str),
        Some("GRPCRoute shop/cart rule add (inline)")
    );
    let regex = entry(&r, "http/shop/cart/1").matches[0]
        .path_match()
        .unwrap();
    assert_eq!(regex.value, "/(?:shop\\.v1\\..*)/[^/]+");
    // A rule without matches matches every call.
    let all = entry(&r, "http/shop/cart/2");
    assert_eq!(all.matches[0].path_match().unwrap().value, "/");
    // backendRefs[].filters stay on that backend.
    let backends = &r.resolution.backends;
    assert!(backends.values().flatten().any(|b| b
        .response_headers
        .as_ref()
        .is_some_and(|c| c.add[0].name == "x-backend")));
}

#[test]
fn policies_target_a_grpcroute_and_its_rules() {
    let yaml = format!(
        "{GATEWAY}{CART}{}",
        policy_on(
            "GRPCRoute",
            ", sectionName: add",
            "  defaults:\n    timeouts: {request: 2s}\n    retry: {attempts: 2, retryOn: [unavailable, cancelled]}\n"
        )
    );
    let r = resolve_yaml(&yaml, "infra/edge");
    let add = entry(&r, "http/shop/cart/add");
    assert_eq!(request_ms(add), Some(2000));
    let on = retry_on(add).unwrap();
    assert!(on.contains(&"unavailable".to_string()) && on.contains(&"cancelled".to_string()));
    // GEP-1731's connection errors join the gRPC triggers.
    assert!(on.contains(&"connect-failure".to_string()));
    assert_eq!(
        add.sources.get("timeouts.requestMs").map(String::as_str),
        Some("RoutePolicy shop/p (defaults @ GRPCRoute shop/cart rule add)")
    );
    assert_eq!(request_ms(entry(&r, "http/shop/cart/1")), None);
    let inputs = inputs(&yaml);
    let status = policy_status(&inputs);
    assert_eq!(status.policies[0].status.conditions[0].reason, "Accepted");
}

#[test]
fn an_httproute_target_does_not_reach_a_grpcroute_of_the_same_name() {
    let yaml = format!(
        "{GATEWAY}{CART}{}",
        policy_on(
            "HTTPRoute",
            "",
            "  defaults:\n    timeouts: {request: 2s}\n"
        )
    );
    let inputs = inputs(&yaml);
    assert!(inputs.diagnostics.iter().any(|d| d
        .message
        .contains("target HTTPRoute shop/cart does not exist")));
    let r = resolve_yaml(&yaml, "infra/edge");
    assert_eq!(request_ms(entry(&r, "http/shop/cart/add")), None);
}

#[test]
fn the_peers_kinds_target_a_grpcroute() {
    for (api, kind, spec) in [
        (
            "gateway.envoyproxy.io/v1alpha1",
            "BackendTrafficPolicy",
            "  timeout: {http: {requestTimeout: 4s}}\n  retry: {numRetries: 3, retryOn: {triggers: [unavailable]}}\n",
        ),
        (
            "gateway.kgateway.dev/v1alpha1",
            "TrafficPolicy",
            "  timeouts: {request: 4s}\n  retry: {attempts: 3, retryOn: [unavailable]}\n",
        ),
    ] {
        let yaml = format!(
            "{GATEWAY}{CART}---\napiVersion: {api}\nkind: {kind}\nmetadata: {{name: peer, namespace: shop}}\nspec:\n  targetRefs: [{{group: gateway.networking.k8s.io, kind: GRPCRoute, name: cart}}]\n{spec}"
        );
        let inputs = inputs(&yaml);
        let unserved: Vec<_> = inputs
            .diagnostics
            .iter()
            .filter(|d| d.message.contains("does not serve"))
            .collect();
        assert!(unserved.is_empty(), "{kind}: {unserved:?}");
        let r = resolve_yaml(&yaml, "infra/edge");
        let add = entry(&r, "http/shop/cart/add");
        assert_eq!(request_ms(add), Some(4000), "{kind}");
        assert_eq!(add.settings.retry.as_ref().and_then(|r| r.attempts), Some(3), "{kind}");
        assert!(retry_on(add).unwrap().contains(&"unavailable".to_string()), "{kind}");
    }
}

#[test]
fn a_grpcroute_sharing_an_httproutes_name_on_a_gateway_is_an_error_naming_both() {
    let http = r#"---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: cart, namespace: shop}
spec:
  parentRefs: [{name: edge, namespace: infra}]
  rules:
  - backendRefs: [{name: web, port: 80}]
"#;
    let yaml = format!("{GATEWAY}{CART}{http}");
    let r = resolve_yaml(&yaml, "infra/edge");
    // The HTTPRoute keeps its names on both listeners; no GRPCRoute entry.
    assert_eq!(names(&r), ["http/shop/cart/0", "web-only/shop/cart/0"]);
    assert!(entry(&r, "http/shop/cart/0").route_kind.is_none());
    let errors: Vec<_> = r
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(
        errors[0].message,
        "GRPCRoute shop/cart and HTTPRoute shop/cart both attach to Gateway infra/edge, and their entries would share names; the GRPCRoute is not served there"
    );
    assert_eq!(errors[0].object.as_deref(), Some("GRPCRoute shop/cart"));
}

#[test]
fn what_a_grpcroute_has_that_attache_does_not_apply_is_a_note_naming_the_field() {
    let yaml = format!(
        "{GATEWAY}{}",
        CART.replace(
            "  - backendRefs: [{name: cart, port: 50051}]\n",
            "  - backendRefs: [{name: cart, port: 50051}]\n    sessionPersistence: {sessionName: s}\n    filters:\n    - type: RequestMirror\n      requestMirror: {backendRef: {name: shadow, port: 1}}\n"
        )
    );
    let inputs = inputs(&yaml);
    let notes: Vec<_> = inputs
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Note)
        .filter_map(|d| d.field.clone())
        .collect();
    assert!(
        notes.contains(&"spec.rules[2].sessionPersistence".to_string()),
        "{notes:?}"
    );
    assert!(
        notes.contains(&"spec.rules[2].filters[0].type".to_string()),
        "{notes:?}"
    );
    assert_eq!(inputs.grpc_routes.len(), 1);
}

#[test]
fn a_bad_method_match_refuses_the_grpcroute_naming_the_field() {
    for (method, field) in [
        ("{type: Exact}", "spec.rules[0].matches[0].method"),
        (
            "{service: shop/v1}",
            "spec.rules[0].matches[0].method.service",
        ),
        (
            "{method: Add.More}",
            "spec.rules[0].matches[0].method.method",
        ),
        (
            "{type: RegularExpression, method: \"(\"}",
            "spec.rules[0].matches[0].method",
        ),
    ] {
        let yaml = format!(
            "{GATEWAY}{}",
            CART.replace("{service: shop.v1.Cart, method: Add}", method)
        );
        let inputs = inputs(&yaml);
        assert!(inputs.grpc_routes.is_empty(), "{method}");
        assert!(
            inputs
                .diagnostics
                .iter()
                .any(|d| d.severity == Severity::Error && d.field.as_deref() == Some(field)),
            "{method}: {:?}",
            inputs.diagnostics
        );
    }
}

#[test]
fn explain_says_a_request_timeout_bounds_the_whole_grpc_call() {
    let yaml = format!(
        "{GATEWAY}{CART}{}",
        policy_on(
            "GRPCRoute",
            "",
            "  defaults:\n    timeouts: {request: 30s}\n"
        )
    );
    let inputs = inputs(&yaml);
    let explained =
        attache_core::explain_route(&inputs, &key("infra/edge"), &key("shop/cart")).unwrap();
    let add = explained.iter().find(|e| e.rule == "add").unwrap();
    assert_eq!(add.route_kind_name(), "GRPCRoute");
    assert!(
        add.notes.iter().any(|n| n.starts_with(
            "timeouts.request 30s on a GRPCRoute bounds the whole call, streams included"
        )),
        "{:?}",
        add.notes
    );
}

#[test]
fn route_status_reports_a_grpcroute_under_its_own_kind() {
    let inputs = inputs(&format!("{GATEWAY}{CART}"));
    let status = attache_core::status::route_status(&inputs);
    let cart: Vec<_> = status
        .iter()
        .filter(|s| s.metadata.name == "cart")
        .collect();
    assert_eq!(cart.len(), 1);
    assert_eq!(cart[0].kind, "GRPCRoute");
    let parent = &cart[0].status.parents[0];
    assert_eq!(parent.parent_ref.name, "edge");
    assert!(
        parent
            .conditions
            .iter()
            .any(|c| c.kind == "Accepted" && c.status == "True"),
        "{:?}",
        parent.conditions
    );
}
