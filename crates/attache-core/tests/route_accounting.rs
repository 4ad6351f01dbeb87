//! Every route accounted for: a parentRef that names a Gateway of the input
//! but reaches none of its listeners is a warning with Gateway API's route
//! reason; one that names a Gateway the input lacks is a note. Exact
//! messages, since users grep for them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use attache_core::{Diagnostic, Severity};
use common::*;

const GATEWAYS: &str = r#"
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: edge, namespace: infra}
spec:
  gatewayClassName: gc
  listeners:
  - name: http
    port: 80
    protocol: HTTP
    hostname: "*.example.com"
    allowedRoutes: {namespaces: {from: All}}
  - {name: internal, port: 8080, protocol: HTTP}
  - name: tcp
    port: 9000
    protocol: TCP
    allowedRoutes: {namespaces: {from: All}}
"#;

fn route(parent: &str, hostnames: &str) -> String {
    format!(
        r#"---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: storefront, namespace: shop}}
spec:
  parentRefs: [{parent}]
  hostnames: {hostnames}
  rules:
  - backendRefs: [{{name: svc, port: 80}}]
"#
    )
}

/// The diagnostics of resolving Gateway infra/edge with one route, reading
/// findings included.
fn findings(parent: &str, hostnames: &str) -> (Vec<Diagnostic>, usize) {
    let yaml = format!("{GATEWAYS}{}", route(parent, hostnames));
    let inputs = inputs(&yaml);
    let resolved = attache_core::resolve(&inputs, &key("infra/edge")).unwrap();
    let mut all = inputs.diagnostics.clone();
    all.extend(resolved.diagnostics);
    (all, resolved.resolution.document.routes.len())
}

fn only_about_parents(all: &[Diagnostic]) -> Vec<(Severity, String, String)> {
    all.iter()
        .filter(|d| {
            d.field
                .as_deref()
                .is_some_and(|f| f.starts_with("spec.parentRefs"))
        })
        .map(|d| {
            (
                d.severity,
                d.message.clone(),
                d.hint.clone().unwrap_or_default(),
            )
        })
        .collect()
}

#[test]
fn a_section_name_no_listener_has_is_no_matching_parent() {
    let (all, entries) = findings(
        "{name: edge, namespace: infra, sectionName: htpp}",
        "[shop.example.com]",
    );
    assert_eq!(entries, 0);
    assert_eq!(
        only_about_parents(&all),
        [(
            Severity::Warning,
            "attaches to no listener of Gateway infra/edge (sectionName htpp): NoMatchingParent: no listener is named htpp".to_string(),
            "its listeners are: http, internal, tcp".to_string()
        )]
    );
    let d = all
        .iter()
        .find(|d| d.severity == Severity::Warning)
        .unwrap();
    assert_eq!(d.object.as_deref(), Some("HTTPRoute shop/storefront"));
    assert_eq!(d.field.as_deref(), Some("spec.parentRefs[0]"));
}

#[test]
fn a_port_no_listener_has_is_no_matching_parent() {
    let (all, _) = findings(
        "{name: edge, namespace: infra, port: 443}",
        "[shop.example.com]",
    );
    let found = only_about_parents(&all);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0]
            .1
            .ends_with("attaches to no listener of Gateway infra/edge (port 443): NoMatchingParent: no listener is on port 443"),
        "{}",
        found[0].1
    );
}

#[test]
fn a_namespace_the_listener_does_not_admit_is_not_allowed_by_listeners() {
    let (all, entries) = findings(
        "{name: edge, namespace: infra, sectionName: internal}",
        "[shop.example.com]",
    );
    assert_eq!(entries, 0);
    assert_eq!(
        only_about_parents(&all),
        [(
            Severity::Warning,
            "attaches to no listener of Gateway infra/edge (sectionName internal): NotAllowedByListeners: no listener it selects admits routes from namespace shop".to_string(),
            "see the listeners' allowedRoutes.namespaces".to_string()
        )]
    );
}

#[test]
fn a_kind_the_listener_does_not_admit_is_not_allowed_by_listeners() {
    let (all, _) = findings(
        "{name: edge, namespace: infra, sectionName: tcp}",
        "[shop.example.com]",
    );
    let found = only_about_parents(&all);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0]
            .1
            .ends_with("NotAllowedByListeners: no listener it selects admits the kind HTTPRoute"),
        "{}",
        found[0].1
    );
    assert_eq!(found[0].2, "see the listeners' allowedRoutes.kinds");
}

#[test]
fn hostnames_in_common_with_no_admitting_listener_are_no_matching_listener_hostname() {
    let (all, entries) = findings(
        "{name: edge, namespace: infra, sectionName: http}",
        "[shop.example.org]",
    );
    assert_eq!(entries, 0);
    let warnings: Vec<_> = only_about_parents(&all)
        .into_iter()
        .filter(|(s, _, _)| *s == Severity::Warning)
        .collect();
    assert_eq!(
        warnings,
        [(
            Severity::Warning,
            "attaches to no listener of Gateway infra/edge (sectionName http): NoMatchingListenerHostname: it shares no hostname with any listener that admits it".to_string(),
            "compare spec.hostnames with the listeners' hostname".to_string()
        )]
    );
}

#[test]
fn a_parent_ref_that_reaches_a_listener_says_nothing() {
    let (all, entries) = findings("{name: edge, namespace: infra}", "[shop.example.com]");
    assert_eq!(entries, 1, "the http listener serves it");
    assert_eq!(only_about_parents(&all), []);
}

#[test]
fn a_gateway_the_input_lacks_is_a_note_that_says_so() {
    let (all, entries) = findings("{name: edg, namespace: infra}", "[shop.example.com]");
    assert_eq!(entries, 0);
    assert_eq!(
        only_about_parents(&all),
        [(
            Severity::Note,
            "names Gateway infra/edg, which the input does not have; not attached through it here"
                .to_string(),
            "add that Gateway to what is read (its manifest to -f, or the Gateway to the cluster; a live read with -n sees one namespace), or check the parentRef's name and namespace"
                .to_string()
        )]
    );
}

/// The route's status (`RouteParentStatus` per parentRef) and the Attached
/// condition of a RoutePolicy on the route and one on the `internal`
/// listener, for the given parentRefs.
fn statuses(parents: &str) -> (Vec<(String, String, String)>, String, String) {
    let policy = |name: &str, target: &str| {
        format!(
            r#"---
apiVersion: policy.attache.dev/v1alpha1
kind: RoutePolicy
metadata: {{name: {name}, namespace: {ns}}}
spec:
  targetRef: {target}
  timeouts: {{request: 2s}}
"#,
            ns = if name == "on-route" { "shop" } else { "infra" }
        )
    };
    let yaml =
        format!(
        "{GATEWAYS}{}{}{}",
        route(parents, "[shop.example.com]"),
        policy("on-route", "{group: gateway.networking.k8s.io, kind: HTTPRoute, name: storefront}"),
        policy(
            "on-internal",
            "{group: gateway.networking.k8s.io, kind: Gateway, name: edge, sectionName: internal}"
        ),
    );
    let report = attache_core::policy_status(&inputs(&yaml));
    let route = report
        .routes
        .iter()
        .find(|r| r.metadata.name == "storefront")
        .unwrap();
    let parents = route
        .status
        .parents
        .iter()
        .map(|p| {
            let c = &p.conditions[0];
            assert_eq!(c.kind, "Accepted");
            assert_eq!(p.controller_name, "policy.attache.dev/attache");
            (c.status.clone(), c.reason.clone(), c.message.clone())
        })
        .collect();
    let attached = |name: &str| {
        let p = report
            .policies
            .iter()
            .find(|p| p.metadata.name == name)
            .unwrap();
        let c = p.status.ancestors[0]
            .conditions
            .iter()
            .find(|c| c.kind == "Attached")
            .unwrap();
        c.message.clone()
    };
    (parents, attached("on-route"), attached("on-internal"))
}

#[test]
fn route_status_names_each_parent_refs_outcome_in_gateway_apis_words() {
    let (parents, _, _) = statuses(
        "{name: edge, namespace: infra, sectionName: htpp}, {name: edge, namespace: infra}, {name: edg, namespace: infra}",
    );
    let own = |s: &str, r: &str, m: &str| (s.to_string(), r.to_string(), m.to_string());
    assert_eq!(
        parents,
        [
            own(
                "False",
                "NoMatchingParent",
                "attaches to no listener of Gateway infra/edge (sectionName htpp): NoMatchingParent: no listener is named htpp"
            ),
            own("True", "Accepted", "attached to Gateway infra/edge through 1 listener(s)"),
            own(
                "Unknown",
                "Pending",
                "names Gateway infra/edg, which the input does not have"
            ),
        ]
    );
}

#[test]
fn a_policy_that_reaches_no_rule_says_why_in_the_routes_words() {
    let (parents, on_route, on_internal) =
        statuses("{name: edge, namespace: infra, sectionName: htpp}");
    assert_eq!(parents.len(), 1);
    assert_eq!(
        on_route,
        "route shop/storefront attaches to no listener of Gateway infra/edge (sectionName htpp): \
         NoMatchingParent: no listener is named htpp"
    );
    assert_eq!(
        on_internal,
        "no route attaches to Gateway infra/edge listener internal"
    );
    let (_, _, on_internal) = statuses("{name: edge, namespace: infra, sectionName: internal}");
    assert_eq!(
        on_internal,
        "no route rule is served through Gateway infra/edge listener internal: route shop/storefront \
         attaches to no listener of Gateway infra/edge (sectionName internal): NotAllowedByListeners: \
         no listener it selects admits routes from namespace shop"
    );
    let (_, on_route, _) = statuses("{name: edg, namespace: infra}");
    assert_eq!(
        on_route,
        "route shop/storefront names Gateway infra/edg, which the input does not have"
    );
}
