//! The worked examples of the seeds: GEP-713's CDN example (seed 001) mapped
//! onto our fields, its "merging into existing spec fields" type table, and
//! kgateway's shallow and deep merge examples (seed 004) with the exact
//! results docs/semantics.md states.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;

/// CDN example: the Gateway policy overrides one field (cdn.enabled ->
/// timeouts.request) and defaults several (cachePolicy.* -> retry.attempts,
/// retry.backoff, retry.codes); the route's policy defaults one of them
/// differently (includeQueryString -> retry.attempts).
#[test]
fn cdn_example_route_default_changes_one_field() {
    let mut yaml = topology("    timeouts: {request: 30s}");
    yaml.push_str(&policy(
        "gateway-cdn",
        At::Gateway,
        "overrides: {timeouts: {request: 10s}}\n  defaults: {retry: {attempts: 2, backoff: 100ms, codes: [503]}}",
        None,
        None,
    ));
    yaml.push_str(&policy(
        "route-cdn",
        At::Route,
        "defaults: {retry: {attempts: 5}}",
        None,
        None,
    ));
    let r = resolve_yaml(&yaml, "appns/gw");
    let e = entry(&r, ENTRY);
    assert_eq!(
        request_ms(e),
        Some(10_000),
        "the Gateway override beats the route's own value"
    );
    let retry = e.settings.retry.clone().unwrap();
    assert_eq!(
        retry.attempts,
        Some(5),
        "the route default beats the Gateway default"
    );
    assert_eq!(
        retry.backoff_ms,
        Some(100),
        "fields the route does not set come from the Gateway default"
    );
    assert_eq!(retry.codes, Some(vec![503]));
    assert_eq!(
        e.sources["retry.attempts"],
        "RoutePolicy appns/route-cdn (defaults @ HTTPRoute appns/route)"
    );
    assert_eq!(
        e.sources["timeouts.requestMs"],
        "RoutePolicy appns/gateway-cdn (overrides @ Gateway appns/gw)"
    );
    assert_eq!(
        e.sources["retry.backoffMs"],
        "RoutePolicy appns/gateway-cdn (defaults @ Gateway appns/gw)"
    );
}

/// Seed 001's final example: a Gateway override beats a Route default
/// (drainTimeout -> timeouts.request); a Route default beats a Gateway
/// default (connectionTimeout -> timeouts.backendRequest).
#[test]
fn override_beats_lower_default_and_lower_default_beats_higher_default() {
    let mut yaml = topology("");
    yaml.push_str(&policy(
        "gw",
        At::Gateway,
        "overrides: {timeouts: {request: 60s}}\n  defaults: {timeouts: {backendRequest: 5s}}",
        None,
        None,
    ));
    yaml.push_str(&policy(
        "rt",
        At::Route,
        "defaults: {timeouts: {request: 20s, backendRequest: 2s}}",
        None,
        None,
    ));
    let r = resolve_yaml(&yaml, "appns/gw");
    let t = entry(&r, ENTRY).settings.timeouts.clone().unwrap();
    assert_eq!(
        (t.request_ms, t.backend_request_ms),
        (Some(60_000), Some(2_000))
    );
}

/// Seed 001's type table for overrides: strings, lists and maps are
/// replaced by the policy's value.
#[test]
fn override_type_table_string_list_map() {
    let mut yaml = topology(
        "    retry: {retryOn: [5xx, reset]}\n    filters:\n    - type: RequestHeaderModifier\n      requestHeaderModifier:\n        set: [{name: foo, value: a}, {name: bar, value: b}]\n        remove: [x-a, x-b]",
    );
    yaml.push_str(&policy(
        "o",
        At::Gateway,
        "overrides:\n    retry: {retryOn: [connect-failure, refused-stream]}\n    requestHeaderModifier:\n      set: [{name: foo, value: c}, {name: bar, value: d}]\n      remove: [x-c, x-d]",
        None,
        None,
    ));
    let r = resolve_yaml(&yaml, "appns/gw");
    let e = entry(&r, ENTRY);
    // The override's list replaced the rule's (no 5xx); `reset` then joins
    // it after the fold: a retry stanza retries connection errors (GEP-1731).
    assert_eq!(
        retry_on(e),
        Some(vec![
            "connect-failure".to_string(),
            "refused-stream".to_string(),
            "reset".to_string()
        ])
    );
    assert_eq!(set_header(e, "foo").as_deref(), Some("c"));
    assert_eq!(set_header(e, "bar").as_deref(), Some("d"));
    assert_eq!(
        e.settings.request_headers.as_ref().unwrap().remove,
        vec!["x-c".to_string(), "x-d".to_string()]
    );
}

/// Three routes, parent > child > grandchild, each rule adding headers
/// with its own RequestHeaderModifier filter; `priority` on every route.
fn delegation_tree(priority: &str, parent: &str, child: &str, grandchild: &str) -> String {
    let ann = if priority.is_empty() {
        String::new()
    } else {
        format!("\n  annotations: {{kgateway.dev/inherited-policy-priority: {priority}}}")
    };
    let filter = |headers: &str| {
        if headers.is_empty() {
            String::new()
        } else {
            format!("\n    filters:\n    - type: RequestHeaderModifier\n      requestHeaderModifier: {{set: [{headers}]}}")
        }
    };
    format!(
        r#"
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: gw, namespace: appns}}
spec:
  gatewayClassName: gc
  listeners: [{{name: http, port: 80, protocol: HTTP}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: parent
  namespace: appns{ann}
spec:
  parentRefs: [{{name: gw}}]
  rules:
  - backendRefs: [{{group: gateway.networking.k8s.io, kind: HTTPRoute, name: child}}]{}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: child
  namespace: appns{ann}
spec:
  rules:
  - backendRefs: [{{group: gateway.networking.k8s.io, kind: HTTPRoute, name: grandchild}}]{}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: grandchild
  namespace: appns{ann}
spec:
  rules:
  - backendRefs: [{{name: svc, port: 80}}]{}
"#,
        filter(parent),
        filter(child),
        filter(grandchild)
    )
}

#[test]
fn kgateway_deep_merge_prefer_parent() {
    let yaml = delegation_tree(
        "DeepMergePreferParent",
        "{name: x-season, value: summer}",
        "{name: x-season, value: winter}, {name: x-holiday, value: christmas}",
        "{name: x-season, value: spring}, {name: x-holiday, value: easter}, {name: x-discount, value: 10%}",
    );
    let r = resolve_yaml(&yaml, "appns/gw");
    assert_eq!(
        names(&r),
        ["http/appns/grandchild/0"],
        "only the leaf rule is an entry"
    );
    let e = entry(&r, "http/appns/grandchild/0");
    assert_eq!(
        set_header(e, "x-season").as_deref(),
        Some("summer,winter,spring")
    );
    assert_eq!(
        set_header(e, "x-holiday").as_deref(),
        Some("christmas,easter")
    );
    assert_eq!(set_header(e, "x-discount").as_deref(), Some("10%"));
    assert_eq!(
        e.sources["requestHeaders.set.x-season"],
        "HTTPRoute appns/parent rule 0 (inline, DeepMergePreferParent) + HTTPRoute appns/child rule 0 (inline, DeepMergePreferParent) + HTTPRoute appns/grandchild rule 0 (inline)"
    );
}

#[test]
fn kgateway_shallow_merge_prefer_child_default() {
    let yaml = delegation_tree(
        "",
        "{name: x-season, value: summer}",
        "{name: x-season, value: winter}, {name: x-holiday, value: christmas}",
        "",
    );
    let r = resolve_yaml(&yaml, "appns/gw");
    let e = entry(&r, "http/appns/grandchild/0");
    let set: Vec<(String, String)> = e
        .settings
        .request_headers
        .as_ref()
        .unwrap()
        .set
        .iter()
        .map(|h| (h.name.clone(), h.value.clone()))
        .collect();
    assert_eq!(
        set,
        [
            ("x-holiday".to_string(), "christmas".to_string()),
            ("x-season".to_string(), "winter".to_string())
        ]
    );
}

/// The deep example with plain policies attached to each route instead of
/// inline filters: the annotation on the route each is attached to decides.
#[test]
fn kgateway_deep_merge_with_plain_policies() {
    let mut yaml = delegation_tree("DeepMergePreferParent", "", "", "");
    for (name, route, headers) in [
        ("p", "parent", "{name: x-season, value: summer}"),
        ("c", "child", "{name: x-season, value: winter}, {name: x-holiday, value: christmas}"),
        ("g", "grandchild", "{name: x-season, value: spring}, {name: x-holiday, value: easter}, {name: x-discount, value: 10%}"),
    ] {
        yaml.push_str(&format!(
            "---\napiVersion: policy.attache.dev/v1alpha1\nkind: RoutePolicy\nmetadata: {{name: {name}, namespace: appns}}\nspec:\n  targetRefs: [{{group: gateway.networking.k8s.io, kind: HTTPRoute, name: {route}}}]\n  requestHeaderModifier: {{set: [{headers}]}}\n"
        ));
    }
    let r = resolve_yaml(&yaml, "appns/gw");
    let e = entry(&r, "http/appns/grandchild/0");
    assert_eq!(
        set_header(e, "x-season").as_deref(),
        Some("summer,winter,spring")
    );
    assert_eq!(
        set_header(e, "x-holiday").as_deref(),
        Some("christmas,easter")
    );
    assert_eq!(set_header(e, "x-discount").as_deref(), Some("10%"));
}

/// Project-domain annotation wins over kgateway's when both are present.
#[test]
fn project_annotation_takes_precedence_over_kgateway_one() {
    let yaml = delegation_tree("DeepMergePreferParent", "{name: x-season, value: summer}", "{name: x-season, value: winter}", "")
        .replace(
            "  name: parent\n  namespace: appns\n  annotations: {",
            "  name: parent\n  namespace: appns\n  annotations: {policy.attache.dev/inherited-policy-priority: ShallowMergePreferParent, ",
        );
    let r = resolve_yaml(&yaml, "appns/gw");
    let e = entry(&r, "http/appns/grandchild/0");
    assert_eq!(
        set_header(e, "x-season").as_deref(),
        Some("summer"),
        "shallow replace, not a deep join"
    );
}
