//! Route attachment: parentRefs, allowedRoutes, hostnames, delegation,
//! entry order and the renderer's listener/backend data.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use attache_core::contract::{PathMatch, PathMatchType};
use attache_core::Severity;
use common::*;

const GATEWAY: &str = r#"
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: edge, namespace: infra}
spec:
  gatewayClassName: gc
  listeners:
  - {name: http, port: 80, protocol: HTTP, hostname: "*.example.com"}
  - name: other
    port: 8080
    protocol: HTTP
    allowedRoutes: {namespaces: {from: All}}
  - name: selected
    port: 8081
    protocol: HTTP
    allowedRoutes:
      namespaces:
        from: Selector
        selector: {matchLabels: {team: shop}}
  - {name: tcp, port: 9000, protocol: TCP, allowedRoutes: {namespaces: {from: All}}}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {team: shop}}
"#;

fn route(ns: &str, name: &str, parent_ref: &str, extra: &str) -> String {
    format!(
        "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: {name}, namespace: {ns}}}\nspec:\n  parentRefs: [{parent_ref}]\n{extra}  rules:\n  - backendRefs: [{{name: svc, port: 80}}]\n"
    )
}

#[test]
fn allowed_routes_same_all_and_selector() {
    let mut yaml = GATEWAY.to_string();
    yaml.push_str(&route("infra", "same", "{name: edge}", ""));
    yaml.push_str(&route(
        "shop",
        "labelled",
        "{name: edge, namespace: infra}",
        "",
    ));
    yaml.push_str(&route(
        "misc",
        "unlabelled",
        "{name: edge, namespace: infra}",
        "",
    ));
    let r = resolve_yaml(&yaml, "infra/edge");
    assert_eq!(
        names(&r),
        [
            "http/infra/same/0",
            "other/infra/same/0",
            "other/misc/unlabelled/0",
            "other/shop/labelled/0",
            "selected/shop/labelled/0",
        ],
        "Same admits only infra; All admits every namespace; the selector only team=shop; TCP admits no HTTPRoute"
    );
}

#[test]
fn namespaces_without_manifest_carry_only_their_name_label() {
    let yaml = GATEWAY.replace(
        "matchLabels: {team: shop}",
        "matchLabels: {kubernetes.io/metadata.name: misc}",
    ) + &route(
        "misc",
        "r",
        "{name: edge, namespace: infra, sectionName: selected}",
        "",
    );
    let r = resolve_yaml(&yaml, "infra/edge");
    assert_eq!(names(&r), ["selected/misc/r/0"]);
}

#[test]
fn section_name_and_port_pick_listeners() {
    let mut yaml = GATEWAY.to_string();
    yaml.push_str(&route(
        "infra",
        "by-section",
        "{name: edge, sectionName: other}",
        "",
    ));
    yaml.push_str(&route("infra", "by-port", "{name: edge, port: 80}", ""));
    yaml.push_str(&route(
        "infra",
        "wrong-port",
        "{name: edge, sectionName: http, port: 8080}",
        "",
    ));
    let r = resolve_yaml(&yaml, "infra/edge");
    assert_eq!(
        names(&r),
        ["http/infra/by-port/0", "other/infra/by-section/0"]
    );
}

#[test]
fn hostnames_intersect_with_the_listener() {
    let mut yaml = GATEWAY.to_string();
    yaml.push_str(&route(
        "infra",
        "shop",
        "{name: edge, sectionName: http}",
        "  hostnames: [Shop.Example.com, other.org]\n",
    ));
    yaml.push_str(&route(
        "infra",
        "elsewhere",
        "{name: edge, sectionName: http}",
        "  hostnames: [other.org]\n",
    ));
    yaml.push_str(&route(
        "infra",
        "any",
        "{name: edge, sectionName: http}",
        "",
    ));
    let r = resolve_yaml(&yaml, "infra/edge");
    assert_eq!(
        names(&r),
        ["http/infra/any/0", "http/infra/shop/0"],
        "no common hostname, no entry"
    );
    assert_eq!(
        entry(&r, "http/infra/shop/0").hostnames,
        ["shop.example.com"]
    );
    assert_eq!(
        entry(&r, "http/infra/any/0").hostnames,
        ["*.example.com"],
        "a route without hostnames takes the listener's"
    );
}

#[test]
fn entries_are_ordered_by_listener_then_age_then_name_then_rule() {
    let mut yaml = GATEWAY.to_string();
    yaml.push_str(
        &route("infra", "b-old", "{name: edge, sectionName: other}", "").replace(
            "name: b-old, namespace: infra}",
            "name: b-old, namespace: infra, creationTimestamp: \"2020-01-01T00:00:00Z\"}",
        ),
    );
    yaml.push_str(
        &route("infra", "a-new", "{name: edge, sectionName: other}", "").replace(
            "name: a-new, namespace: infra}",
            "name: a-new, namespace: infra, creationTimestamp: \"2024-01-01T00:00:00Z\"}",
        ),
    );
    yaml.push_str(&route(
        "infra",
        "z-no-timestamp",
        "{name: edge, sectionName: other}",
        "",
    ));
    yaml.push_str(
        &route("infra", "two-rules", "{name: edge, sectionName: http}", "").replace(
            "  rules:\n",
            "  rules:\n  - name: first\n    backendRefs: [{name: a}]\n",
        ),
    );
    let r = resolve_yaml(&yaml, "infra/edge");
    assert_eq!(
        names(&r),
        [
            "http/infra/two-rules/first",
            "http/infra/two-rules/1",
            "other/infra/z-no-timestamp/0",
            "other/infra/b-old/0",
            "other/infra/a-new/0",
        ]
    );
}

#[test]
fn matches_get_gateway_api_defaults_and_backends_their_weight() {
    let yaml = GATEWAY.to_string()
        + "---\napiVersion: gateway.networking.k8s.io/v1beta1\nkind: HTTPRoute\nmetadata: {name: r, namespace: infra}\nspec:\n  parentRefs: [{name: edge, sectionName: other}]\n  rules:\n  - matches: [{headers: [{name: x-canary, value: \"1\"}]}, {path: {value: /exact, type: Exact}}]\n    backendRefs: [{name: a, port: 80}, {name: b, port: 81, weight: 3}]\n  - backendRefs: [{name: c}]\n";
    let r = resolve_yaml(&yaml, "infra/edge");
    let first = entry(&r, "other/infra/r/0");
    let prefix = PathMatch {
        kind: PathMatchType::PathPrefix,
        value: "/".into(),
    };
    assert_eq!(first.matches[0].path.as_ref(), Some(&prefix));
    assert_eq!(first.matches[0].headers[0].name, "x-canary");
    assert_eq!(
        first.matches[1].path.as_ref().map(|p| p.kind),
        Some(PathMatchType::Exact)
    );
    assert_eq!(
        entry(&r, "other/infra/r/1").matches[0].path.as_ref(),
        Some(&prefix),
        "no matches: one PathPrefix /"
    );
    let backends = &r.resolution.backends["other/infra/r/0"];
    assert_eq!(
        backends
            .iter()
            .map(|b| (b.name.as_str(), b.port, b.weight))
            .collect::<Vec<_>>(),
        [("a", Some(80), 1), ("b", Some(81), 3)]
    );
    let listeners: Vec<(&str, u16)> = r
        .resolution
        .listeners
        .iter()
        .map(|l| (l.name.as_str(), l.port))
        .collect();
    assert_eq!(
        listeners,
        [
            ("http", 80),
            ("other", 8080),
            ("selected", 8081),
            ("tcp", 9000)
        ]
    );
    assert_eq!(r.resolution.gateway_class, "gc");
}

fn delegating(name: &str, children: &[&str], parent_ref: &str) -> String {
    let refs: Vec<String> = children
        .iter()
        .map(|c| format!("{{group: gateway.networking.k8s.io, kind: HTTPRoute, name: {c}}}"))
        .collect();
    format!(
        "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: {name}, namespace: infra}}\nspec:\n  parentRefs: [{parent_ref}]\n  rules:\n  - backendRefs: [{}]\n  - backendRefs: [{{name: own-{name}}}]\n",
        refs.join(", ")
    )
}

#[test]
fn delegation_cycles_are_reported_not_looped_on() {
    let yaml = GATEWAY.to_string()
        + &delegating("a", &["b"], "{name: edge, sectionName: other}")
        + &delegating("b", &["c"], "")
        + &delegating("c", &["a"], "");
    let r = resolve_yaml(&yaml, "infra/edge");
    assert_eq!(
        names(&r),
        ["other/infra/a/1", "other/infra/b/1", "other/infra/c/1"]
    );
    let cycle: Vec<String> = r
        .diagnostics
        .iter()
        .filter(|d| d.message.contains("cycle"))
        .map(|d| d.to_string())
        .collect();
    assert_eq!(cycle.len(), 1, "{cycle:?}");
    assert!(
        cycle[0].contains("infra/a -> infra/b -> infra/c -> infra/a"),
        "{}",
        cycle[0]
    );
    assert!(
        cycle[0]
            .starts_with("test.yaml (document 5) HTTPRoute infra/c: spec.rules[0].backendRefs[0]"),
        "{}",
        cycle[0]
    );
}

#[test]
fn self_delegation_and_missing_children_are_reported() {
    let yaml =
        GATEWAY.to_string() + &delegating("a", &["a", "ghost"], "{name: edge, sectionName: other}");
    let r = resolve_yaml(&yaml, "infra/edge");
    assert_eq!(names(&r), ["other/infra/a/1"]);
    assert!(r
        .diagnostics
        .iter()
        .any(|d| d.message.contains("cycle") && d.severity == Severity::Error));
    assert!(r.diagnostics.iter().any(|d| d
        .message
        .contains("HTTPRoute infra/ghost, which does not exist")));
}

#[test]
fn a_child_attached_directly_too_is_served_once_directly() {
    let mut yaml = topology("");
    yaml = yaml.replace(
        "  rules:\n  - name: main\n    backendRefs: [{name: svc, port: 80}]",
        "  rules:\n  - name: main\n    backendRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: child}]",
    );
    yaml.push_str("---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: child, namespace: appns}\nspec:\n  parentRefs: [{name: gw}]\n  rules:\n  - backendRefs: [{name: svc}]\n");
    yaml.push_str(&policy(
        "on-parent-rule",
        At::Rule,
        "defaults: {timeouts: {request: 3s}}",
        None,
        None,
    ));
    let r = resolve_yaml(&yaml, "appns/gw");
    assert_eq!(names(&r), ["http/appns/child/0"]);
    assert_eq!(
        request_ms(entry(&r, "http/appns/child/0")),
        None,
        "the direct attachment has no parent levels"
    );
    assert!(r.diagnostics.iter().any(|d| d
        .message
        .contains("also reachable via appns/route -> appns/child")));
}

#[test]
fn delegated_children_inherit_the_parent_rule_levels() {
    let yaml = topology("").replace(
        "  rules:\n  - name: main\n    backendRefs: [{name: svc, port: 80}]",
        "  hostnames: [a.example.com, b.example.com]\n  rules:\n  - name: main\n    backendRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: child}]",
    ) + "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: child, namespace: appns}\nspec:\n  hostnames: [b.example.com]\n  rules:\n  - backendRefs: [{name: svc}]\n"
        + &policy("on-parent-rule", At::Rule, "defaults: {timeouts: {request: 3s}}", None, None);
    let r = resolve_yaml(&yaml, "appns/gw");
    let e = entry(&r, "http/appns/child/0");
    assert_eq!(request_ms(e), Some(3000));
    assert_eq!(e.hostnames, ["b.example.com"]);
    let why =
        attache_core::explain_route(&inputs(&yaml), &key("appns/gw"), &key("appns/child")).unwrap();
    assert_eq!(why[0].via, ["HTTPRoute appns/route rule main"]);
}

#[test]
fn a_child_naming_parent_routes_accepts_only_those() {
    let parent = |name: &str| {
        format!(
            "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: {name}, namespace: infra}}\nspec:\n  parentRefs: [{{name: edge, sectionName: other}}]\n  rules:\n  - matches: [{{path: {{value: /{name}}}}}]\n    backendRefs: [{{group: gateway.networking.k8s.io, kind: HTTPRoute, name: child}}]\n"
        )
    };
    let yaml = GATEWAY.to_string()
        + &parent("allowed")
        + &parent("stranger")
        + "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: child, namespace: infra}\nspec:\n  parentRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: allowed}]\n  rules:\n  - backendRefs: [{name: svc}]\n";
    let r = resolve_yaml(&yaml, "infra/edge");
    assert_eq!(names(&r), ["other/infra/child/0"]);
    let why = attache_core::explain_route(&inputs(&yaml), &key("infra/edge"), &key("infra/child"))
        .unwrap();
    assert_eq!(why[0].via, ["HTTPRoute infra/allowed rule 0"]);
    assert!(r.diagnostics.iter().any(|d| d.message.starts_with(
        "HTTPRoute infra/stranger delegates to it, but its parentRefs name other parent routes"
    )));
}

#[test]
fn delegated_rules_match_only_within_the_parent_rule() {
    let yaml = GATEWAY.to_string()
        + "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: parent, namespace: infra}\nspec:\n  parentRefs: [{name: edge, sectionName: other}]\n  rules:\n  - matches: [{path: {type: PathPrefix, value: /api}, headers: [{name: x-tier, value: gold}]}]\n    backendRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: child}]\n"
        + "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: child, namespace: infra}\nspec:\n  rules:\n  - name: everything\n    backendRefs: [{name: a}]\n  - name: orders\n    matches: [{path: {value: /api/orders}, method: POST}]\n    backendRefs: [{name: b}]\n  - name: outside\n    matches: [{path: {value: /shop}}]\n    backendRefs: [{name: c}]\n";
    let r = resolve_yaml(&yaml, "infra/edge");
    assert_eq!(
        names(&r),
        ["other/infra/child/everything", "other/infra/child/orders"]
    );
    let everything = &entry(&r, "other/infra/child/everything").matches[0];
    assert_eq!(
        everything.path.as_ref().map(|p| p.value.as_str()),
        Some("/api"),
        "a catch-all child inherits the parent path"
    );
    assert_eq!(
        everything.headers[0].name, "x-tier",
        "and the parent's header condition"
    );
    let orders = &entry(&r, "other/infra/child/orders").matches[0];
    assert_eq!(
        (
            orders.path.as_ref().map(|p| p.value.as_str()),
            orders.method.as_deref()
        ),
        (Some("/api/orders"), Some("POST"))
    );
    assert!(r
        .diagnostics
        .iter()
        .any(|d| d.field.as_deref() == Some("spec.rules[2].matches")
            && d.message
                .contains("delegating parent rule HTTPRoute infra/parent rule 0")));
}
