//! ListenerSet (docs/semantics.md, "ListenerSet"): the Gateway's
//! `allowedListeners` gate, routes attached through a set's listeners,
//! listener conflicts in listener precedence, the set's levels in the fold,
//! policy targets and entry names. Exact messages where users read them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use attache_core::{policy_status, Diagnostic, Severity};
use common::*;

fn gateway(allowed: &str) -> String {
    format!(
        r#"
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: edge, namespace: infra}}
spec:
  gatewayClassName: gc
  allowedListeners: {allowed}
  listeners:
  - name: http
    port: 80
    protocol: HTTP
    hostname: "www.example.com"
    allowedRoutes: {{namespaces: {{from: All}}}}
---
apiVersion: v1
kind: Namespace
metadata: {{name: team-a, labels: {{edge-access: "yes"}}}}
---
apiVersion: v1
kind: Namespace
metadata: {{name: team-b, labels: {{edge-access: "yes"}}}}
"#
    )
}

const SELECTOR: &str =
    "{namespaces: {from: Selector, selector: {matchLabels: {edge-access: \"yes\"}}}}";

fn set(kind: &str, ns: &str, name: &str, created: &str, listeners: &str) -> String {
    let api = if kind == "XListenerSet" {
        "gateway.networking.x-k8s.io/v1alpha1"
    } else {
        "gateway.networking.k8s.io/v1"
    };
    format!(
        r#"---
apiVersion: {api}
kind: {kind}
metadata: {{name: {name}, namespace: {ns}, creationTimestamp: "{created}"}}
spec:
  parentRef: {{name: edge, namespace: infra}}
  listeners: {listeners}
"#
    )
}

fn route(ns: &str, name: &str, parent: &str) -> String {
    format!(
        r#"---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: {name}, namespace: {ns}}}
spec:
  parentRefs: [{parent}]
  rules:
  - backendRefs: [{{name: svc, port: 80}}]
"#
    )
}

fn policy(ns: &str, name: &str, target: &str, spec: &str) -> String {
    format!(
        r#"---
apiVersion: policy.attache.dev/v1alpha1
kind: RoutePolicy
metadata: {{name: {name}, namespace: {ns}}}
spec:
  targetRef: {target}
  {spec}
"#
    )
}

/// Two teams, each with a set of one `http` listener on port 80 and a
/// route through it, and the Gateway's own `http` listener with a route.
fn two_teams() -> String {
    [
        gateway(SELECTOR),
        set(
            "ListenerSet",
            "team-a",
            "ls-a",
            "2026-01-01T00:00:00Z",
            "[{name: http, port: 80, protocol: HTTP, hostname: a.example.com}]",
        ),
        set(
            "ListenerSet",
            "team-b",
            "ls-b",
            "2026-01-02T00:00:00Z",
            "[{name: http, port: 80, protocol: HTTP, hostname: b.example.com}]",
        ),
        route("team-a", "app", "{kind: ListenerSet, name: ls-a}"),
        route("team-b", "app", "{kind: ListenerSet, name: ls-b}"),
        route("infra", "home", "{name: edge}"),
    ]
    .concat()
}

fn all_diagnostics(yaml: &str) -> Vec<Diagnostic> {
    let inputs = inputs(yaml);
    let mut all = inputs.diagnostics.clone();
    if let Ok(r) = attache_core::resolve(&inputs, &key("infra/edge")) {
        all.extend(r.diagnostics);
    }
    all
}

fn warnings_and_errors(yaml: &str) -> Vec<(Severity, String)> {
    all_diagnostics(yaml)
        .into_iter()
        .filter(|d| matches!(d.severity, Severity::Warning | Severity::Error))
        .map(|d| (d.severity, d.message))
        .collect()
}

#[test]
fn a_sets_listeners_serve_its_routes_under_six_segment_names() {
    let r = resolve_yaml(&two_teams(), "infra/edge");
    assert_eq!(
        names(&r),
        [
            "http/infra/home/0",
            "team-a/ls-a/http/team-a/app/0",
            "team-b/ls-b/http/team-b/app/0"
        ],
        "the Gateway's own entries first, then each set's in listener precedence"
    );
    let a = entry(&r, "team-a/ls-a/http/team-a/app/0");
    assert_eq!(a.listener, "http");
    assert_eq!(a.listener_set.as_deref(), Some("team-a/ls-a"));
    assert_eq!(a.listener_set_kind, None);
    assert_eq!(a.hostnames, ["a.example.com"]);
    assert_eq!(a.listener_key(), "team-a/ls-a/http");
    let own = entry(&r, "http/infra/home/0");
    assert_eq!(own.listener_set, None);
    let keys: Vec<&str> = r
        .resolution
        .listeners
        .iter()
        .map(|l| l.name.as_str())
        .collect();
    assert_eq!(keys, ["http", "team-a/ls-a/http", "team-b/ls-b/http"]);
    assert!(warnings_and_errors(&two_teams()).is_empty());
}

#[test]
fn a_set_policy_reaches_its_own_listeners_only_and_a_gateway_policy_reaches_all() {
    let yaml = [
        two_teams(),
        policy(
            "infra",
            "gw",
            "{group: gateway.networking.k8s.io, kind: Gateway, name: edge}",
            "defaults: {timeouts: {request: 10s}, retry: {attempts: 1}}",
        ),
        policy(
            "team-a",
            "set",
            "{group: gateway.networking.k8s.io, kind: ListenerSet, name: ls-a}",
            "defaults: {timeouts: {request: 3s}, retry: {attempts: 2}}",
        ),
        policy(
            "team-a",
            "listener",
            "{group: gateway.networking.k8s.io, kind: ListenerSet, name: ls-a, sectionName: http}",
            "defaults: {retry: {attempts: 4}}",
        ),
    ]
    .concat();
    let r = resolve_yaml(&yaml, "infra/edge");
    let a = entry(&r, "team-a/ls-a/http/team-a/app/0");
    assert_eq!(
        request_ms(a),
        Some(3000),
        "the set's default beats the Gateway's"
    );
    assert_eq!(
        a.settings.retry.as_ref().and_then(|r| r.attempts),
        Some(4),
        "the set listener's default beats the whole set's"
    );
    let b = entry(&r, "team-b/ls-b/http/team-b/app/0");
    assert_eq!(
        request_ms(b),
        Some(10000),
        "team-a's set never reaches team-b's"
    );
    assert_eq!(b.settings.retry.as_ref().and_then(|r| r.attempts), Some(1));
    let own = entry(&r, "http/infra/home/0");
    assert_eq!(
        request_ms(own),
        Some(10000),
        "a set's policy never reaches the Gateway's listeners"
    );
    assert_eq!(
        a.sources.get("timeouts.requestMs").map(String::as_str),
        Some("RoutePolicy team-a/set (defaults @ ListenerSet team-a/ls-a)")
    );
}

#[test]
fn a_gateway_override_beats_a_set_and_the_namespace_level_stays_the_gateways() {
    let yaml = [
        two_teams(),
        policy(
            "infra",
            "gw",
            "{group: gateway.networking.k8s.io, kind: Gateway, name: edge}",
            "overrides: {timeouts: {request: 20s}}",
        ),
        policy(
            "team-a",
            "set",
            "{group: gateway.networking.k8s.io, kind: ListenerSet, name: ls-a}",
            "defaults: {timeouts: {request: 3s}}",
        ),
        policy(
            "team-a",
            "ns",
            "{group: \"\", kind: Namespace, name: team-a}",
            "defaults: {retry: {attempts: 3}}",
        ),
    ]
    .concat();
    let r = resolve_yaml(&yaml, "infra/edge");
    let a = entry(&r, "team-a/ls-a/http/team-a/app/0");
    assert_eq!(request_ms(a), Some(20000));
    assert_eq!(
        a.settings.retry, None,
        "a policy on the set's Namespace does not reach it: the Namespace level is the Gateway's"
    );
}

#[test]
fn the_gate_takes_no_set_by_default_and_says_why_naming_the_routes() {
    let yaml = two_teams().replace(
        &format!("allowedListeners: {SELECTOR}"),
        "allowedListeners: {}",
    );
    let r = resolve_yaml(&yaml, "infra/edge");
    assert_eq!(names(&r), ["http/infra/home/0"]);
    let found = warnings_and_errors(&yaml);
    assert!(
        found.contains(&(
            Severity::Warning,
            "not attached: NotAllowed: Gateway infra/edge takes ListenerSets from no namespace \
         (spec.allowedListeners.namespaces.from: None); its listeners serve nothing \
         (routes that name it: HTTPRoute team-a/app)"
                .to_string()
        )),
        "{found:#?}"
    );
    assert_eq!(found.len(), 2, "one warning per set: {found:#?}");
}

#[test]
fn from_same_takes_only_sets_of_the_gateways_namespace() {
    let yaml = [
        gateway("{namespaces: {from: Same}}"),
        set(
            "ListenerSet",
            "infra",
            "ls-infra",
            "2026-01-01T00:00:00Z",
            "[{name: admin, port: 8080, protocol: HTTP, allowedRoutes: {namespaces: {from: Same}}}]",
        ),
        set(
            "ListenerSet",
            "team-a",
            "ls-a",
            "2026-01-01T00:00:00Z",
            "[{name: http, port: 81, protocol: HTTP}]",
        ),
        route("infra", "ops", "{kind: ListenerSet, name: ls-infra}"),
        route("team-a", "app", "{kind: ListenerSet, name: ls-a}"),
    ]
    .concat();
    let r = resolve_yaml(&yaml, "infra/edge");
    assert_eq!(names(&r), ["infra/ls-infra/admin/infra/ops/0"]);
}

#[test]
fn a_set_listeners_allowed_routes_same_means_the_sets_namespace() {
    let yaml = [
        gateway(SELECTOR),
        set(
            "ListenerSet",
            "team-a",
            "ls-a",
            "2026-01-01T00:00:00Z",
            "[{name: http, port: 81, protocol: HTTP}]",
        ),
        route("team-a", "app", "{kind: ListenerSet, name: ls-a}"),
        route(
            "infra",
            "ops",
            "{kind: ListenerSet, name: ls-a, namespace: team-a}",
        ),
    ]
    .concat();
    let r = resolve_yaml(&yaml, "infra/edge");
    assert_eq!(names(&r), ["team-a/ls-a/http/team-a/app/0"]);
    let found = warnings_and_errors(&yaml);
    assert!(found.contains(&(
        Severity::Warning,
        "attaches to no listener of ListenerSet team-a/ls-a: NotAllowedByListeners: no listener it selects admits routes from namespace infra".to_string()
    )), "{found:#?}");
}

#[test]
fn a_parent_ref_to_the_gateway_never_reaches_a_sets_listener_of_the_same_name() {
    let yaml = [
        gateway(SELECTOR),
        set(
            "ListenerSet",
            "team-a",
            "ls-a",
            "2026-01-01T00:00:00Z",
            "[{name: web, port: 81, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}]",
        ),
        route(
            "team-a",
            "app",
            "{name: edge, namespace: infra, sectionName: web}",
        ),
    ]
    .concat();
    let r = resolve_yaml(&yaml, "infra/edge");
    assert!(names(&r).is_empty(), "{:?}", names(&r));
    let found = warnings_and_errors(&yaml);
    assert_eq!(
        found,
        [(
            Severity::Warning,
            "attaches to no listener of Gateway infra/edge (sectionName web): NoMatchingParent: no listener is named web".to_string()
        )]
    );
}

#[test]
fn a_section_name_the_set_lacks_is_no_matching_parent_listing_its_listeners() {
    let yaml = two_teams().replace(
        "{kind: ListenerSet, name: ls-a}",
        "{kind: ListenerSet, name: ls-a, sectionName: htpp}",
    );
    let all = all_diagnostics(&yaml);
    let d = all
        .iter()
        .find(|d| d.message.contains("NoMatchingParent"))
        .unwrap();
    assert_eq!(
        d.message,
        "attaches to no listener of ListenerSet team-a/ls-a (sectionName htpp): NoMatchingParent: no listener is named htpp"
    );
    assert_eq!(d.hint.as_deref(), Some("its listeners are: http"));
    assert_eq!(d.object.as_deref(), Some("HTTPRoute team-a/app"));
}

#[test]
fn a_missing_set_and_a_set_kind_with_the_wrong_group_are_warnings() {
    let yaml = [
        two_teams(),
        route("team-a", "lost", "{kind: ListenerSet, name: nope}"),
        route("team-a", "old", "{kind: XListenerSet, name: ls-a}"),
    ]
    .concat();
    let found = warnings_and_errors(&yaml);
    assert!(
        found.contains(&(
            Severity::Warning,
            "names ListenerSet team-a/nope, which the input does not have; not attached through it"
                .into()
        )),
        "{found:#?}"
    );
    assert!(found.contains(&(
        Severity::Warning,
        "kind XListenerSet with group \"gateway.networking.k8s.io\" names nothing; not attached through it".into()
    )), "{found:#?}");
}

#[test]
fn a_later_sets_listener_with_the_same_port_and_hostname_is_conflicted() {
    let yaml = two_teams().replace("hostname: b.example.com", "hostname: a.example.com");
    let r = resolve_yaml(&yaml, "infra/edge");
    assert_eq!(
        names(&r),
        ["http/infra/home/0", "team-a/ls-a/http/team-a/app/0"]
    );
    let found = warnings_and_errors(&yaml);
    assert!(found.contains(&(
        Severity::Error,
        "HostnameConflict: listener team-b/ls-b/http and listener team-a/ls-a/http are both on port 80; \
         listener http of ListenerSet team-b/ls-b is Conflicted and serves no route"
            .into()
    )), "{found:#?}");
    // The route through the set whose only listener lost says so.
    assert!(found.contains(&(
        Severity::Warning,
        "attaches to no listener of ListenerSet team-b/ls-b: NoMatchingParent: it has no listeners".into()
    )), "{found:#?}");
}

#[test]
fn a_different_protocol_on_one_port_is_a_protocol_conflict_and_udp_coexists() {
    let yaml = two_teams()
        .replace(
            "{name: http, port: 80, protocol: HTTP, hostname: a.example.com}",
            "{name: http, port: 80, protocol: TCP}",
        )
        .replace(
            "{name: http, port: 80, protocol: HTTP, hostname: b.example.com}",
            "{name: http, port: 80, protocol: UDP}",
        );
    let found = warnings_and_errors(&yaml);
    let conflicts: Vec<&String> = found
        .iter()
        .map(|(_, m)| m)
        .filter(|m| m.contains("Conflict"))
        .collect();
    assert_eq!(
        conflicts,
        [
            "ProtocolConflict: listener team-a/ls-a/http and listener http are both on port 80; \
          listener http of ListenerSet team-a/ls-a is Conflicted and serves no route"
        ],
        "the Gateway's own listener comes first; UDP coexists"
    );
}

#[test]
fn two_conflicting_listeners_of_one_set_both_lose() {
    let yaml = [
        gateway(SELECTOR),
        set(
            "ListenerSet",
            "team-a",
            "ls-a",
            "2026-01-01T00:00:00Z",
            "[{name: one, port: 81, protocol: HTTP}, {name: two, port: 81, protocol: HTTP}]",
        ),
        route("team-a", "app", "{kind: ListenerSet, name: ls-a}"),
    ]
    .concat();
    let r = resolve_yaml(&yaml, "infra/edge");
    assert!(names(&r).is_empty(), "{:?}", names(&r));
    let conflicted = warnings_and_errors(&yaml)
        .into_iter()
        .filter(|(_, m)| m.contains("HostnameConflict"))
        .count();
    assert_eq!(conflicted, 2);
}

#[test]
fn an_xlistenerset_is_read_alike_and_its_entries_say_so() {
    let yaml = two_teams()
        .replace("apiVersion: gateway.networking.k8s.io/v1\nkind: ListenerSet\nmetadata: {name: ls-b", "apiVersion: gateway.networking.x-k8s.io/v1alpha1\nkind: XListenerSet\nmetadata: {name: ls-b")
        .replace("{kind: ListenerSet, name: ls-b}", "{group: gateway.networking.x-k8s.io, kind: XListenerSet, name: ls-b}");
    let r = resolve_yaml(&yaml, "infra/edge");
    let b = entry(&r, "team-b/ls-b/http/team-b/app/0");
    assert_eq!(b.listener_set_kind.as_deref(), Some("XListenerSet"));
    assert!(
        warnings_and_errors(&yaml).is_empty(),
        "{:#?}",
        warnings_and_errors(&yaml)
    );
}

#[test]
fn an_xlistenerset_beside_a_listenerset_of_one_name_is_dropped() {
    let yaml = [
        two_teams(),
        set(
            "XListenerSet",
            "team-a",
            "ls-a",
            "2025-01-01T00:00:00Z",
            "[{name: other, port: 82, protocol: HTTP}]",
        ),
    ]
    .concat();
    let r = resolve_yaml(&yaml, "infra/edge");
    assert!(!names(&r).iter().any(|n| n.contains("/other/")));
    let found = warnings_and_errors(&yaml);
    assert!(found.contains(&(
        Severity::Error,
        "ListenerSet team-a/ls-a of the same name is on Gateway infra/edge; this XListenerSet team-a/ls-a is dropped".into()
    )), "{found:#?}");
}

#[test]
fn policy_targets_a_set_from_its_own_namespace_and_status_names_the_invalid_ones() {
    let yaml = [
        two_teams().replace("hostname: b.example.com", "hostname: a.example.com"),
        // From the Gateway's namespace: cross-namespace, invalid.
        policy(
            "infra",
            "cross",
            "{group: gateway.networking.k8s.io, kind: ListenerSet, name: ls-a, namespace: team-a}",
            "timeouts: {request: 1s}",
        ),
        // A Gateway sectionName that only a set has.
        policy(
            "infra",
            "gw-section",
            "{group: gateway.networking.k8s.io, kind: Gateway, name: edge, sectionName: web}",
            "timeouts: {request: 1s}",
        ),
        // The conflicted listener.
        policy(
            "team-b",
            "conflicted",
            "{group: gateway.networking.k8s.io, kind: ListenerSet, name: ls-b, sectionName: http}",
            "timeouts: {request: 1s}",
        ),
        // The wrong group for the kind.
        policy(
            "team-a",
            "group",
            "{group: gateway.networking.k8s.io, kind: XListenerSet, name: ls-a}",
            "timeouts: {request: 1s}",
        ),
        r#"---
apiVersion: policy.attache.dev/v1alpha1
kind: ClusterRoutePolicy
metadata: {name: global}
spec:
  targetRef: {group: gateway.networking.k8s.io, kind: ListenerSet, name: ls-a}
  timeouts: {request: 1s}
"#
        .to_string(),
    ]
    .concat()
    .replace(
        "{name: http, port: 80, protocol: HTTP, hostname: a.example.com}]\n---\napiVersion: gateway.networking.k8s.io/v1\nkind: ListenerSet\nmetadata: {name: ls-b",
        "{name: http, port: 80, protocol: HTTP, hostname: a.example.com}, {name: web, port: 90, protocol: HTTP}]\n---\napiVersion: gateway.networking.k8s.io/v1\nkind: ListenerSet\nmetadata: {name: ls-b",
    );
    let inputs = inputs(&yaml);
    let report = policy_status(&inputs);
    let status = |name: &str| {
        report
            .policies
            .iter()
            .find(|p| p.metadata.name == name)
            .unwrap_or_else(|| panic!("no {name}"))
            .status
            .clone()
    };
    let first = |name: &str| {
        let s = status(name);
        let c = s
            .ancestors
            .first()
            .map(|a| a.conditions[0].clone())
            .unwrap_or_else(|| s.conditions[0].clone());
        (c.reason, c.message)
    };
    assert_eq!(first("cross").0, "Invalid");
    assert!(
        first("cross")
            .1
            .contains("cross-namespace target team-a/ls-a"),
        "{:?}",
        first("cross")
    );
    assert_eq!(first("global").0, "Invalid");
    assert!(
        first("global")
            .1
            .contains("a ClusterRoutePolicy cannot target a ListenerSet"),
        "{:?}",
        first("global")
    );
    assert_eq!(first("group").0, "Invalid");
    assert_eq!(
        first("conflicted"),
        (
            "TargetNotFound".into(),
            "attached to an invalid target resource: listener http of ListenerSet team-b/ls-b is Conflicted \
             (HostnameConflict: listener team-b/ls-b/http and listener team-a/ls-a/http are both on port 80)"
                .into()
        )
    );
    assert_eq!(first("gw-section").0, "TargetNotFound");
    let hint = inputs
        .diagnostics
        .iter()
        .find(|d| d.object.as_deref() == Some("RoutePolicy infra/gw-section"))
        .and_then(|d| d.hint.clone());
    assert_eq!(
        hint.as_deref(),
        Some("web is a listener of ListenerSet team-a/ls-a; target it as {group: gateway.networking.k8s.io, kind: ListenerSet, name: ls-a, sectionName: web}")
    );
}

#[test]
fn status_counts_a_set_policy_and_names_the_set_as_its_ancestor() {
    let yaml = [
        two_teams(),
        policy(
            "team-a",
            "set",
            "{group: gateway.networking.k8s.io, kind: ListenerSet, name: ls-a}",
            "timeouts: {request: 3s}",
        ),
    ]
    .concat();
    let report = policy_status(&inputs(&yaml));
    let p = report
        .policies
        .iter()
        .find(|p| p.metadata.name == "set")
        .unwrap();
    let a = &p.status.ancestors[0];
    assert_eq!(
        (
            a.ancestor_ref.group.as_str(),
            a.ancestor_ref.kind.as_str(),
            a.ancestor_ref.name.as_str()
        ),
        ("gateway.networking.k8s.io", "ListenerSet", "ls-a")
    );
    assert_eq!(a.ancestor_ref.namespace.as_deref(), Some("team-a"));
    assert_eq!(
        a.conditions[0].message,
        "attached to ListenerSet team-a/ls-a"
    );
    assert_eq!(
        a.conditions[1].message,
        "supplies every field it sets on 1 route rule(s)"
    );

    // Gate closed: the set is not attached, so its policy's target is not found.
    let closed = yaml.replace(
        &format!("allowedListeners: {SELECTOR}"),
        "allowedListeners: {}",
    );
    let report = policy_status(&inputs(&closed));
    let p = report
        .policies
        .iter()
        .find(|p| p.metadata.name == "set")
        .unwrap();
    assert_eq!(p.status.conditions[0].reason, "TargetNotFound");
    assert_eq!(
        p.status.ancestors[0].conditions[0].message,
        "attached to an invalid target resource: ListenerSet team-a/ls-a is not attached: NotAllowed: Gateway \
         infra/edge takes ListenerSets from no namespace (spec.allowedListeners.namespaces.from: None)"
    );
}

#[test]
fn a_backend_traffic_policy_on_a_set_sits_between_the_route_and_the_gateway() {
    let yaml = [
        two_teams(),
        r#"---
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: BackendTrafficPolicy
metadata: {name: gw, namespace: infra}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: edge}]
  timeout: {http: {requestTimeout: 10s}}
  retry: {numRetries: 1}
---
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: BackendTrafficPolicy
metadata: {name: set, namespace: team-a}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: ListenerSet, name: ls-a}]
  timeout: {http: {requestTimeout: 3s}}
---
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: BackendTrafficPolicy
metadata: {name: old, namespace: team-a}
spec:
  targetRefs: [{group: gateway.networking.x-k8s.io, kind: XListenerSet, name: ls-a}]
  timeout: {http: {requestTimeout: 3s}}
"#
        .to_string(),
    ]
    .concat();
    let r = resolve_yaml(&yaml, "infra/edge");
    let a = entry(&r, "team-a/ls-a/http/team-a/app/0");
    assert_eq!(request_ms(a), Some(3000));
    assert_eq!(
        a.settings.retry, None,
        "Envoy Gateway: the set's policy replaces the Gateway's whole"
    );
    let b = entry(&r, "team-b/ls-b/http/team-b/app/0");
    assert_eq!(request_ms(b), Some(10000));
    let report = policy_status(&inputs(&yaml));
    let old = report
        .policies
        .iter()
        .find(|p| p.metadata.name == "old")
        .unwrap();
    assert_eq!(old.status.conditions[0].reason, "Invalid");
}

#[test]
fn a_kgateway_traffic_policy_targets_both_set_kinds_by_ref_and_by_selector() {
    let yaml = [
        two_teams()
            .replace(
                "apiVersion: gateway.networking.k8s.io/v1\nkind: ListenerSet\nmetadata: {name: ls-b",
                "apiVersion: gateway.networking.x-k8s.io/v1alpha1\nkind: XListenerSet\nmetadata: {name: ls-b",
            )
            .replace(
                "{kind: ListenerSet, name: ls-b}",
                "{group: gateway.networking.x-k8s.io, kind: XListenerSet, name: ls-b}",
            )
            .replace(
                "metadata: {name: ls-a, namespace: team-a,",
                "metadata: {name: ls-a, namespace: team-a, labels: {tier: gold},",
            ),
        r#"---
apiVersion: gateway.kgateway.dev/v1alpha1
kind: TrafficPolicy
metadata: {name: by-selector, namespace: team-a}
spec:
  targetSelectors: [{group: gateway.networking.k8s.io, kind: ListenerSet, matchLabels: {tier: gold}}]
  timeouts: {request: 4s}
---
apiVersion: gateway.kgateway.dev/v1alpha1
kind: TrafficPolicy
metadata: {name: by-ref, namespace: team-b}
spec:
  targetRefs: [{group: gateway.networking.x-k8s.io, kind: XListenerSet, name: ls-b}]
  timeouts: {request: 6s}
"#
        .to_string(),
    ]
    .concat();
    let r = resolve_yaml(&yaml, "infra/edge");
    assert_eq!(
        request_ms(entry(&r, "team-a/ls-a/http/team-a/app/0")),
        Some(4000)
    );
    assert_eq!(
        request_ms(entry(&r, "team-b/ls-b/http/team-b/app/0")),
        Some(6000)
    );
    assert_eq!(request_ms(entry(&r, "http/infra/home/0")), None);
    let report = policy_status(&inputs(&yaml));
    let selected = report
        .policies
        .iter()
        .find(|p| p.metadata.name == "by-selector")
        .unwrap();
    assert_eq!(
        selected.status.ancestors[0].ancestor_ref.kind,
        "ListenerSet"
    );
    assert_eq!(selected.status.ancestors[0].ancestor_ref.name, "ls-a");
}

#[test]
fn a_route_sharing_no_hostname_with_the_sets_listener_is_no_matching_listener_hostname() {
    let yaml = two_teams().replace(
        "metadata: {name: app, namespace: team-a}\nspec:\n  parentRefs: [{kind: ListenerSet, name: ls-a}]",
        "metadata: {name: app, namespace: team-a}\nspec:\n  hostnames: [b.example.com]\n  parentRefs: [{kind: ListenerSet, name: ls-a}]",
    );
    assert_ne!(yaml, two_teams());
    let found = warnings_and_errors(&yaml);
    assert_eq!(
        found,
        [(
            Severity::Warning,
            "attaches to no listener of ListenerSet team-a/ls-a: NoMatchingListenerHostname: it shares no hostname with any listener that admits it".to_string()
        )]
    );
}

#[test]
fn route_status_through_a_set_says_accepted_or_why_not() {
    let parents = |yaml: &str| -> Vec<(String, String, String)> {
        let report = policy_status(&inputs(yaml));
        let route = report
            .routes
            .iter()
            .find(|r| r.metadata.namespace.as_deref() == Some("team-a"))
            .unwrap();
        route
            .status
            .parents
            .iter()
            .map(|p| {
                assert_eq!(p.parent_ref.kind, "ListenerSet");
                let c = &p.conditions[0];
                (c.status.clone(), c.reason.clone(), c.message.clone())
            })
            .collect()
    };
    assert_eq!(
        parents(&two_teams()),
        [(
            "True".to_string(),
            "Accepted".to_string(),
            "attached to ListenerSet team-a/ls-a through 1 listener(s)".to_string()
        )]
    );
    let closed = two_teams().replace(
        &format!("allowedListeners: {SELECTOR}"),
        "allowedListeners: {}",
    );
    assert_eq!(
        parents(&closed),
        [(
            "False".to_string(),
            "NoMatchingParent".to_string(),
            "names ListenerSet team-a/ls-a, which is not attached: NotAllowed: Gateway infra/edge takes \
             ListenerSets from no namespace (spec.allowedListeners.namespaces.from: None)"
                .to_string()
        )]
    );
}

#[test]
fn two_conflicting_listeners_of_the_gateway_itself_both_lose_and_a_policy_on_one_says_so() {
    let yaml = [
        gateway(SELECTOR).replace(
            "  listeners:\n  - name: http\n",
            "  listeners:\n  - {name: twin, port: 80, protocol: HTTP, hostname: www.example.com}\n  - name: http\n",
        ),
        route("infra", "home", "{name: edge}"),
        policy(
            "infra",
            "on-twin",
            "{group: gateway.networking.k8s.io, kind: Gateway, name: edge, sectionName: twin}",
            "timeouts: {request: 1s}",
        ),
    ]
    .concat();
    let r = resolve_yaml(&yaml, "infra/edge");
    assert!(names(&r).is_empty(), "{:?}", names(&r));
    let conflicts: Vec<String> = warnings_and_errors(&yaml)
        .into_iter()
        .map(|(_, m)| m)
        .filter(|m| m.contains("Conflict"))
        .collect();
    assert_eq!(
        conflicts,
        [
            "HostnameConflict: listener twin and listener http are both on port 80; listener twin is Conflicted and serves no route",
            "HostnameConflict: listener http and listener twin are both on port 80; listener http is Conflicted and serves no route",
            "target Gateway infra/edge listener twin cannot be used (TargetNotFound): listener twin of Gateway infra/edge \
             is Conflicted (HostnameConflict: listener twin and listener http are both on port 80)",
        ]
    );
    let report = policy_status(&inputs(&yaml));
    let p = report
        .policies
        .iter()
        .find(|p| p.metadata.name == "on-twin")
        .unwrap();
    assert_eq!(
        p.status.ancestors[0].conditions[0].message,
        "attached to an invalid target resource: listener twin of Gateway infra/edge is Conflicted \
         (HostnameConflict: listener twin and listener http are both on port 80)"
    );
}
