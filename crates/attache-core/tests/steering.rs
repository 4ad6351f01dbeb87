//! A policy never changes which rule serves a request (docs/semantics.md,
//! section 14): a request-header change that names a header tested by a
//! header match of a rule that could match the same request (same port,
//! intersecting hostnames, the targeted rule included) is refused on that
//! rule, and only there; the policy's status, the warnings and `explain`
//! say so.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use attache_core::contract::RouteEntry;
use attache_core::status::programmed::with_programmed;
use attache_core::status::Condition;
use attache_core::{
    explain_route, policy_status, resolve, resolve_for_data_plane, DataPlane, EntryMemo, Resolved,
    Severity,
};
use common::{inputs, key};

/// Gateway `infra/gw` with listeners `http` (80, any namespace) and `alt`
/// (8080); team-a's route `a` and team-b's route `b` share hostname
/// shop.example.com on port 80, `b` matching on `X-Tier: gold`; team-c's
/// route `c` on other.example.com matches on `x-other`; team-d's route
/// `d`, on port 8080 with shop.example.com, matches on `x-port`.
fn world() -> String {
    let route = |ns: &str, name: &str, section: &str, host: &str, header: Option<&str>| {
        let matches = header
            .map(|h| format!("\n    matches: [{{headers: [{{name: {h}, value: gold}}]}}]"))
            .unwrap_or_default();
        format!(
            "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: {name}, namespace: {ns}}}\nspec:\n  parentRefs: [{{name: gw, namespace: infra, sectionName: {section}}}]\n  hostnames: [{host}]\n  rules:\n  - backendRefs: [{{name: svc, port: 80}}]{matches}\n"
        )
    };
    [
        "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: gc}\n"
            .to_string(),
        "---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw, namespace: infra}\nspec:\n  gatewayClassName: gc\n  listeners:\n  - {name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}\n  - {name: alt, port: 8080, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}\n".to_string(),
        route("team-a", "a", "http", "shop.example.com", None),
        route("team-b", "b", "http", "shop.example.com", Some("X-Tier")),
        route("team-c", "c", "http", "other.example.com", Some("x-other")),
        route("team-d", "d", "alt", "shop.example.com", Some("x-port")),
    ]
    .concat()
}

const A: &str = "http/team-a/a/0";
const B: &str = "http/team-b/b/0";
const C: &str = "http/team-c/c/0";

/// A RoutePolicy in `ns` on HTTPRoute `route` (or on the Gateway when
/// `route` is None), with `body` under spec.
fn policy(ns: &str, name: &str, route: Option<&str>, body: &str) -> String {
    let target = match route {
        Some(r) => format!("{{group: gateway.networking.k8s.io, kind: HTTPRoute, name: {r}}}"),
        None => "{group: gateway.networking.k8s.io, kind: Gateway, name: gw}".to_string(),
    };
    format!(
        "---\napiVersion: policy.attache.dev/v1alpha1\nkind: RoutePolicy\nmetadata: {{name: {name}, namespace: {ns}}}\nspec:\n  targetRefs: [{target}]\n  {body}\n"
    )
}

fn resolved(extra: &str) -> Resolved {
    let inputs = inputs(&(world() + extra));
    resolve(&inputs, &key("infra/gw")).unwrap()
}

fn entry<'a>(r: &'a Resolved, name: &str) -> &'a RouteEntry {
    r.resolution
        .document
        .routes
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no entry {name}"))
}

/// Every request header the entry sets, adds or removes, lower-cased.
fn request_names(e: &RouteEntry) -> Vec<String> {
    let Some(c) = &e.settings.request_headers else {
        return Vec::new();
    };
    let mut all: Vec<String> = c.set.iter().chain(&c.add).map(|h| h.name.clone()).collect();
    all.extend(c.remove.iter().cloned());
    all.iter_mut().for_each(|n| n.make_ascii_lowercase());
    all.sort();
    all
}

fn warnings(r: &Resolved) -> Vec<String> {
    r.diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Warning)
        .map(|d| d.to_string())
        .collect()
}

#[test]
fn a_set_add_or_remove_of_a_matched_header_is_refused_and_the_rest_stays() {
    for (op, body) in [
        (
            "set",
            "set: [{name: x-tier, value: gold}, {name: x-safe, value: \"1\"}]",
        ),
        (
            "add",
            "add: [{name: X-TIER, value: gold}, {name: x-safe, value: \"1\"}]",
        ),
        ("remove", "remove: [x-tier, x-safe]"),
    ] {
        let r = resolved(&policy(
            "team-a",
            "steer",
            Some("a"),
            &format!("defaults: {{timeouts: {{request: 3s}}, requestHeaderModifier: {{{body}}}}}"),
        ));
        let a = entry(&r, A);
        assert_eq!(request_names(a), ["x-safe"], "{op}: {a:?}");
        assert_eq!(
            a.settings.timeouts.as_ref().and_then(|t| t.request_ms),
            Some(3000),
            "{op}: the policy's other settings stay"
        );
        let w = warnings(&r);
        let refusal = w
            .iter()
            .find(|w| w.contains("refused"))
            .unwrap_or_else(|| panic!("{op}: no warning in {w:?}"));
        assert!(refusal.contains("RoutePolicy team-a/steer"), "{refusal}");
        assert!(refusal.contains("HTTPRoute team-b/b rule 0"), "{refusal}");
        assert!(refusal.contains("x-tier"), "{refusal}");
        assert!(refusal.contains("requestHeaders."), "{refusal}");
    }
}

#[test]
fn a_header_tested_only_on_another_hostname_or_port_is_applied() {
    let r = resolved(&policy(
        "team-a",
        "fine",
        Some("a"),
        "defaults: {requestHeaderModifier: {set: [{name: x-other, value: \"1\"}, {name: x-port, value: \"1\"}]}}",
    ));
    assert_eq!(request_names(entry(&r, A)), ["x-other", "x-port"]);
    assert!(warnings(&r).iter().all(|w| !w.contains("refused")));
}

#[test]
fn removing_a_header_the_rules_own_match_tests_is_refused() {
    let r = resolved(&policy(
        "team-b",
        "self",
        Some("b"),
        "defaults: {requestHeaderModifier: {remove: [x-tier]}}",
    ));
    assert_eq!(request_names(entry(&r, B)), Vec::<String>::new());
    assert!(warnings(&r)
        .iter()
        .any(|w| w.contains("HTTPRoute team-b/b rule 0")));
}

#[test]
fn a_gateway_policy_is_refused_only_where_a_match_could_see_it() {
    let r = resolved(&policy(
        "infra",
        "everywhere",
        None,
        "overrides: {requestHeaderModifier: {set: [{name: x-tier, value: gold}]}}",
    ));
    assert_eq!(request_names(entry(&r, A)), Vec::<String>::new());
    assert_eq!(request_names(entry(&r, B)), Vec::<String>::new());
    // other.example.com: no rule there tests x-tier.
    assert_eq!(request_names(entry(&r, C)), ["x-tier"]);
}

fn conditions(extra: &str, name: &str) -> Vec<Condition> {
    let inputs = inputs(&(world() + extra));
    let mut report = policy_status(&inputs);
    with_programmed(&inputs, &mut report);
    let p = report
        .policies
        .iter()
        .find(|p| p.metadata.name == name)
        .unwrap();
    p.status.ancestors[0].conditions.clone()
}

fn condition<'a>(all: &'a [Condition], kind: &str) -> &'a Condition {
    all.iter().find(|c| c.kind == kind).unwrap()
}

#[test]
fn status_says_partially_programmed_naming_field_header_and_rule() {
    let all = conditions(
        &policy(
            "infra",
            "everywhere",
            None,
            "overrides: {requestHeaderModifier: {set: [{name: x-tier, value: gold}]}}",
        ),
        "everywhere",
    );
    let programmed = condition(&all, "Programmed");
    assert_eq!(
        (programmed.status.as_str(), programmed.reason.as_str()),
        ("True", "PartiallyProgrammed"),
        "{programmed:?}"
    );
    for needle in [
        "requestHeaders.set.x-tier",
        "x-tier",
        "HTTPRoute team-b/b rule 0",
    ] {
        assert!(
            programmed.message.contains(needle),
            "{needle}: {}",
            programmed.message
        );
    }
}

#[test]
fn status_is_false_when_nothing_else_of_the_policy_is_in_effect() {
    let all = conditions(
        &policy(
            "team-a",
            "only",
            Some("a"),
            "defaults: {requestHeaderModifier: {set: [{name: x-tier, value: gold}]}}",
        ),
        "only",
    );
    let programmed = condition(&all, "Programmed");
    assert_eq!(
        (programmed.status.as_str(), programmed.reason.as_str()),
        ("False", "Refused"),
        "{programmed:?}"
    );
    assert!(programmed.message.contains("HTTPRoute team-b/b rule 0"));
    // Accepted stays True: the policy is valid; it is refused on a rule.
    assert_eq!(condition(&all, "Accepted").status, "True");
}

#[test]
fn a_policy_without_a_refusal_keeps_its_plain_status() {
    let all = conditions(
        &policy(
            "team-a",
            "fine",
            Some("a"),
            "defaults: {requestHeaderModifier: {set: [{name: x-port, value: \"1\"}]}}",
        ),
        "fine",
    );
    let programmed = condition(&all, "Programmed");
    assert_eq!(programmed.reason, "Programmed", "{programmed:?}");
    assert!(!programmed.message.contains("refused"));
}

#[test]
fn kgateway_traffic_policy_header_changes_go_through_the_same_rule() {
    let tp = "---\napiVersion: gateway.kgateway.dev/v1alpha1\nkind: TrafficPolicy\nmetadata: {name: kg, namespace: team-a}\nspec:\n  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: a}]\n  timeouts: {request: 4s}\n  headerModifiers: {request: {set: [{name: x-tier, value: gold}, {name: x-kept, value: \"1\"}]}}\n";
    let r = resolved(tp);
    let a = entry(&r, A);
    assert_eq!(request_names(a), ["x-kept"]);
    assert_eq!(
        a.settings.timeouts.as_ref().and_then(|t| t.request_ms),
        Some(4000)
    );
    assert!(warnings(&r)
        .iter()
        .any(|w| w.contains("TrafficPolicy team-a/kg") && w.contains("x-tier")));
}

#[test]
fn a_rules_own_filter_is_not_a_policy_and_is_kept() {
    // Gateway API applies a rule's own RequestHeaderModifier after the
    // match; the route configuration carries it (docs/semantics.md).
    let own = world().replace(
        "hostnames: [shop.example.com]\n  rules:\n  - backendRefs: [{name: svc, port: 80}]\n---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: b",
        "hostnames: [shop.example.com]\n  rules:\n  - backendRefs: [{name: svc, port: 80}]\n    filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x-tier, value: own}]}}]\n---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: b",
    );
    assert_ne!(own, world(), "the replacement found route a");
    let r = resolve(
        &inputs(
            &(own
                + &policy(
                    "team-a",
                    "extra",
                    Some("a"),
                    "defaults: {requestHeaderModifier: {set: [{name: x-safe, value: \"1\"}]}}",
                )),
        ),
        &key("infra/gw"),
    )
    .unwrap();
    // `resolve` shows the whole result, the rule's own change included.
    assert_eq!(request_names(entry(&r, A)), ["x-safe", "x-tier"]);
    // The plain-Envoy route carries the rule's own change (applied after
    // the match); the filter's document keeps only the policy's.
    let own = &r.resolution.route_request_headers[A];
    assert_eq!(
        own.set.iter().map(|h| h.name.as_str()).collect::<Vec<_>>(),
        ["x-tier"]
    );
    let filter = r.resolution.filter_document();
    let a = filter.routes.iter().find(|e| e.name == A).unwrap();
    assert_eq!(request_names(a), ["x-safe"]);
    // Under Istio, istiod renders the rule's filters: no route carriage here.
    let istio =
        attache_core::resolve_for(&inputs(&world()), &key("infra/gw"), DataPlane::Istio).unwrap();
    assert!(istio.resolution.route_request_headers.is_empty());
}

#[test]
fn explain_names_the_refusal() {
    let inputs = inputs(
        &(world()
            + &policy(
                "team-a",
                "steer",
                Some("a"),
                "defaults: {requestHeaderModifier: {set: [{name: x-tier, value: gold}]}}",
            )),
    );
    let all = explain_route(&inputs, &key("infra/gw"), &key("team-a/a")).unwrap();
    let notes = all[0].notes.join("\n");
    assert!(notes.contains("RoutePolicy team-a/steer"), "{notes}");
    assert!(notes.contains("HTTPRoute team-b/b rule 0"), "{notes}");
    assert!(
        all[0].fields.iter().all(|f| !f.field.contains("x-tier")),
        "the refused field is not shown as in effect"
    );
}

#[test]
fn a_new_header_match_elsewhere_refuses_a_memoised_entry() {
    let steer = policy(
        "team-a",
        "steer",
        Some("a"),
        "defaults: {requestHeaderModifier: {set: [{name: x-late, value: \"1\"}]}}",
    );
    let mut memo = EntryMemo::default();
    let before = inputs(&(world() + &steer));
    let r = resolve_for_data_plane(&before, &key("infra/gw"), DataPlane::Envoy, &mut memo).unwrap();
    assert_eq!(request_names(entry(&r, A)), ["x-late"]);
    // Route b now matches on x-late: route a's entry, unchanged itself,
    // must be folded again.
    let after = inputs(&(world().replace("X-Tier", "x-late") + &steer));
    let r = resolve_for_data_plane(&after, &key("infra/gw"), DataPlane::Envoy, &mut memo).unwrap();
    assert_eq!(request_names(entry(&r, A)), Vec::<String>::new());
}
