//! The peers' policy kinds (docs/peers.md): each mapping, kgateway's
//! annotations, Envoy Gateway's precedence and mergeType, notes for what is
//! not enforced, and a property that every mapped field reaches the
//! document.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use attache_core::contract::RouteEntry;
use attache_core::diagnostic::Severity;
use attache_core::model::peers::{BACKEND_TRAFFIC_POLICY, TRAFFIC_POLICY};
use attache_core::{policy_status, resolve};
use common::*;
use proptest::prelude::*;

/// Gateway `apps/gw` (annotated with `priority` when given), HTTPRoute
/// `apps/r` (rule `a`, then an unnamed rule) labelled `tier: web`, and
/// HTTPRoute `apps/other` without labels.
fn world(priority: Option<&str>, rule_a: &str) -> String {
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
fn peer(kind: &str, name: &str, meta_extra: &str, spec: &str) -> String {
    let group = match kind {
        "TrafficPolicy" => "gateway.kgateway.dev",
        _ => "gateway.envoyproxy.io",
    };
    format!(
        "---\napiVersion: {group}/v1alpha1\nkind: {kind}\nmetadata:\n  name: {name}\n  namespace: apps\n{meta_extra}spec:\n{spec}\n"
    )
}

const ON_GATEWAY: &str = "  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: gw}]\n";
const ON_LISTENER: &str =
    "  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: gw, sectionName: http}]\n";
const ON_ROUTE: &str = "  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: r}]\n";
const ON_RULE: &str =
    "  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: r, sectionName: a}]\n";

const A: &str = "http/apps/r/a";
const B: &str = "http/apps/r/1";
const OTHER: &str = "http/apps/other/0";

fn resolved(yaml: &str) -> attache_core::Resolved {
    resolve_yaml(yaml, "apps/gw")
}

fn backend_ms(e: &RouteEntry) -> Option<u64> {
    e.timeouts.as_ref().and_then(|t| t.backend_request_ms)
}

fn attempts(e: &RouteEntry) -> Option<u32> {
    e.retry.as_ref().and_then(|r| r.attempts)
}

fn codes(e: &RouteEntry) -> Option<Vec<u16>> {
    e.retry.as_ref().and_then(|r| r.codes.clone())
}

fn response_set(e: &RouteEntry, name: &str) -> Option<String> {
    e.response_headers
        .as_ref()?
        .set
        .iter()
        .find(|h| h.name == name)
        .map(|h| h.value.clone())
}

#[test]
fn every_traffic_policy_field_maps_to_its_setting() {
    let yaml = world(None, "")
        + &peer(
            "TrafficPolicy",
            "tp",
            "",
            &format!(
                "{ON_ROUTE}  timeouts: {{request: 9s}}\n  retry: {{attempts: 3, perTryTimeout: 2s, statusCodes: [502, 503], retryOn: [5xx], backoffBaseInterval: 40ms}}\n  headerModifiers:\n    request: {{set: [{{name: X-Req, value: one}}], remove: [x-gone]}}\n    response: {{add: [{{name: x-res, value: two}}]}}\n"
            ),
        );
    let r = resolved(&yaml);
    let e = entry(&r, A);
    assert_eq!(request_ms(e), Some(9000));
    assert_eq!(backend_ms(e), Some(2000));
    assert_eq!(attempts(e), Some(3));
    assert_eq!(codes(e), Some(vec![502, 503]));
    assert_eq!(e.retry.as_ref().unwrap().backoff_ms, Some(40));
    assert_eq!(retry_on(e).unwrap()[0], "5xx");
    assert_eq!(set_header(e, "x-req").as_deref(), Some("one"));
    assert_eq!(e.request_headers.as_ref().unwrap().remove, vec!["x-gone"]);
    assert_eq!(e.response_headers.as_ref().unwrap().add[0].value, "two");
    assert_eq!(
        e.sources["timeouts.requestMs"],
        "TrafficPolicy apps/tp (plain, ShallowMergePreferChild @ HTTPRoute apps/r)"
    );
    assert!(r.diagnostics.is_empty(), "{:?}", r.diagnostics);
}

#[test]
fn every_backend_traffic_policy_field_maps_to_its_setting() {
    let yaml = world(None, "")
        + &peer(
            "BackendTrafficPolicy",
            "btp",
            "",
            &format!(
                "{ON_GATEWAY}  timeout: {{http: {{requestTimeout: 12s}}}}\n  retry:\n    numRetries: 4\n    retryOn: {{triggers: [reset, 5xx], httpStatusCodes: [504]}}\n    perRetry: {{timeout: 3s, backOff: {{baseInterval: 25ms}}}}\n"
            ),
        );
    let e = entry(&resolved(&yaml), OTHER).clone();
    assert_eq!(request_ms(&e), Some(12000));
    assert_eq!(backend_ms(&e), Some(3000));
    assert_eq!(attempts(&e), Some(4));
    assert_eq!(codes(&e), Some(vec![504]));
    assert_eq!(e.retry.as_ref().unwrap().backoff_ms, Some(25));
    assert_eq!(retry_on(&e).unwrap()[..2], ["reset", "5xx"]);
    assert!(e.sources["retry.attempts"].starts_with("BackendTrafficPolicy apps/btp (plain"));
}

/// Gateway TrafficPolicy vs route TrafficPolicy under each value of
/// kgateway's annotation on the Gateway.
fn priority_case(priority: &str) -> RouteEntry {
    let yaml = world(Some(priority), "")
        + &peer(
            "TrafficPolicy",
            "gw-wide",
            "",
            &format!("{ON_GATEWAY}  timeouts: {{request: 20s}}\n  headerModifiers: {{request: {{set: [{{name: x-h, value: gw}}, {{name: x-g, value: gw}}]}}}}\n"),
        )
        + &peer(
            "TrafficPolicy",
            "route",
            "",
            &format!("{ON_ROUTE}  timeouts: {{request: 5s}}\n  headerModifiers: {{request: {{set: [{{name: x-h, value: route}}]}}}}\n"),
        );
    entry(&resolved(&yaml), B).clone()
}

#[test]
fn the_four_inherited_policy_priorities_with_traffic_policies() {
    let e = priority_case("ShallowMergePreferChild");
    assert_eq!((request_ms(&e), set_header(&e, "x-h").as_deref(), set_header(&e, "x-g")), (Some(5000), Some("route"), None));
    let e = priority_case("ShallowMergePreferParent");
    assert_eq!((request_ms(&e), set_header(&e, "x-h").as_deref(), set_header(&e, "x-g").as_deref()), (Some(20000), Some("gw"), Some("gw")));
    let e = priority_case("DeepMergePreferChild");
    assert_eq!((request_ms(&e), set_header(&e, "x-h").as_deref(), set_header(&e, "x-g").as_deref()), (Some(5000), Some("route,gw"), Some("gw")));
    let e = priority_case("DeepMergePreferParent");
    assert_eq!((request_ms(&e), set_header(&e, "x-h").as_deref(), set_header(&e, "x-g").as_deref()), (Some(20000), Some("gw,route"), Some("gw")));
}

#[test]
fn kgateway_policy_weight_ranks_traffic_policies_at_one_level() {
    let two = |weight_of_b: &str| {
        world(None, "")
            + &peer("TrafficPolicy", "a", "", &format!("{ON_GATEWAY}  timeouts: {{request: 1s}}\n"))
            + &peer(
                "TrafficPolicy",
                "b",
                &format!("  annotations: {{kgateway.dev/policy-weight: \"{weight_of_b}\"}}\n"),
                &format!("{ON_GATEWAY}  timeouts: {{request: 2s}}\n"),
            )
    };
    // Same weight: `apps/a` ranks first by name; weight 10 puts `b` first.
    assert_eq!(request_ms(entry(&resolved(&two("0")), OTHER)), Some(1000));
    assert_eq!(request_ms(entry(&resolved(&two("10")), OTHER)), Some(2000));
}

#[test]
fn target_selectors_pick_routes_by_label_in_the_policys_namespace() {
    let yaml = world(None, "")
        + &peer(
            "TrafficPolicy",
            "web",
            "",
            "  targetSelectors: [{group: gateway.networking.k8s.io, kind: HTTPRoute, matchLabels: {tier: web}}]\n  timeouts: {request: 7s}\n",
        );
    let r = resolved(&yaml);
    assert_eq!(request_ms(entry(&r, A)), Some(7000));
    assert_eq!(request_ms(entry(&r, B)), Some(7000));
    assert_eq!(request_ms(entry(&r, OTHER)), None);
    let status = policy_status(&inputs(&yaml));
    let web = &status.policies[0].status;
    assert_eq!(web.ancestors.len(), 1);
    assert_eq!(web.ancestors[0].ancestor_ref.name, "r");
}

#[test]
fn unmapped_fields_are_one_note_each_and_the_rest_applies() {
    let yaml = world(None, "")
        + &peer(
            "TrafficPolicy",
            "tp",
            "",
            &format!("{ON_ROUTE}  timeouts: {{request: 4s, streamIdle: 30s}}\n  rateLimit: {{local: {{tokenBucket: {{maxTokens: 1}}}}}}\n  cors: {{allowOrigins: ['*']}}\n"),
        )
        + &peer(
            "BackendTrafficPolicy",
            "btp",
            "",
            &format!("{ON_GATEWAY}  retry: {{numRetries: 1, perRetry: {{backOff: {{baseInterval: 10ms, maxInterval: 1s}}}}}}\n  circuitBreaker: {{maxConnections: 5}}\n"),
        );
    let inputs = inputs(&yaml);
    let notes: Vec<String> = inputs
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Note)
        .map(|d| format!("{} {}", d.object.clone().unwrap_or_default(), d.field.clone().unwrap_or_default()))
        .collect();
    assert_eq!(
        notes,
        [
            "TrafficPolicy apps/tp spec.cors",
            "TrafficPolicy apps/tp spec.rateLimit",
            "TrafficPolicy apps/tp spec.timeouts.streamIdle",
            "BackendTrafficPolicy apps/btp spec.circuitBreaker",
            "BackendTrafficPolicy apps/btp spec.retry.perRetry.backOff.maxInterval",
        ]
    );
    assert!(inputs.policies.iter().all(|p| p.is_valid()));
    let r = resolve(&inputs, &key("apps/gw")).unwrap();
    assert_eq!(request_ms(entry(&r, A)), Some(4000));
    assert_eq!(entry(&r, OTHER).retry.as_ref().unwrap().backoff_ms, Some(10));
}

#[test]
fn a_bad_peer_value_names_the_peers_field_and_spoils_only_its_policy() {
    let yaml = world(None, "")
        + &peer("TrafficPolicy", "bad", "", &format!("{ON_ROUTE}  retry: {{statusCodes: [200]}}\n"))
        + &peer("BackendTrafficPolicy", "bad2", "", &format!("{ON_ROUTE}  timeout: {{http: {{requestTimeout: 1.5s}}}}\n"))
        + &peer("BackendTrafficPolicy", "bad3", "", &format!("{ON_ROUTE}  mergeType: Deep\n"))
        + &peer("TrafficPolicy", "good", "", &format!("{ON_GATEWAY}  timeouts: {{request: 6s}}\n"));
    let inputs = inputs(&yaml);
    let errors: Vec<String> = inputs
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| d.field.clone().unwrap_or_default())
        .collect();
    assert_eq!(errors, ["spec.retry.statusCodes[0]", "spec.timeout.http.requestTimeout", "spec.mergeType"]);
    let r = resolve(&inputs, &key("apps/gw")).unwrap();
    assert_eq!(request_ms(entry(&r, A)), Some(6000));
    let status = policy_status(&inputs);
    let reason = |name: &str| {
        let p = status.policies.iter().find(|p| p.metadata.name == name).unwrap();
        p.status.conditions[0].reason.clone()
    };
    assert_eq!(reason("bad"), "Invalid");
    assert_eq!(reason("good"), "Accepted");
}

#[test]
fn targets_attache_does_not_serve_are_noted_not_fatal() {
    let yaml = world(None, "")
        + &peer(
            "TrafficPolicy",
            "tp",
            "",
            "  targetRefs:\n    - {group: gateway.networking.k8s.io, kind: GRPCRoute, name: g}\n    - {group: gateway.networking.k8s.io, kind: HTTPRoute, name: r}\n  timeouts: {request: 3s}\n",
        );
    let inputs = inputs(&yaml);
    assert!(inputs.diagnostics.iter().any(|d| d.severity == Severity::Note
        && d.field.as_deref() == Some("spec.targetRefs[0].kind")));
    let r = resolve(&inputs, &key("apps/gw")).unwrap();
    assert_eq!(request_ms(entry(&r, A)), Some(3000));
}

/// Envoy Gateway: a Gateway BackendTrafficPolicy and a route one with the
/// given mergeType line.
fn eg_case(merge: &str) -> (RouteEntry, RouteEntry, Vec<attache_core::status::PolicyStatus>) {
    let yaml = world(None, "")
        + &peer(
            "BackendTrafficPolicy",
            "gw-wide",
            "",
            &format!("{ON_GATEWAY}  timeout: {{http: {{requestTimeout: 15s}}}}\n  retry: {{numRetries: 2, retryOn: {{httpStatusCodes: [503]}}}}\n"),
        )
        + &peer(
            "BackendTrafficPolicy",
            "route",
            "",
            &format!("{ON_ROUTE}{merge}  retry: {{retryOn: {{httpStatusCodes: [502]}}, perRetry: {{timeout: 1s}}}}\n"),
        );
    let r = resolved(&yaml);
    (entry(&r, B).clone(), entry(&r, OTHER).clone(), policy_status(&inputs(&yaml)).policies)
}

#[test]
fn without_merge_type_the_most_specific_backend_traffic_policy_replaces_the_others_whole() {
    let (on_route, other, status) = eg_case("");
    // Nothing of gw-wide reaches the route: no request timeout, no attempts.
    assert_eq!(request_ms(&on_route), None);
    assert_eq!(attempts(&on_route), None);
    assert_eq!(codes(&on_route), Some(vec![502]));
    assert_eq!(backend_ms(&on_route), Some(1000));
    // A route without its own policy keeps the Gateway's.
    assert_eq!((request_ms(&other), attempts(&other)), (Some(15000), Some(2)));
    let gw = status.iter().find(|p| p.metadata.name == "gw-wide").unwrap();
    let attached = &gw.status.ancestors[0].conditions[1];
    assert_eq!(attached.reason, "Merged");
    assert!(attached.message.contains("BackendTrafficPolicy apps/route (Envoy Gateway precedence"), "{}", attached.message);
}

#[test]
fn with_strategic_merge_or_json_merge_the_route_policy_merges_onto_the_gateways() {
    for merge in ["  mergeType: StrategicMerge\n", "  mergeType: JSONMerge\n"] {
        let (on_route, _, _) = eg_case(merge);
        assert_eq!(request_ms(&on_route), Some(15000), "{merge}");
        assert_eq!(attempts(&on_route), Some(2), "{merge}");
        // Its set fields win; the status-code list is replaced, not joined
        // (neither merge joins a list without a merge key).
        assert_eq!(codes(&on_route), Some(vec![502]), "{merge}");
        assert_eq!(backend_ms(&on_route), Some(1000), "{merge}");
        assert!(on_route.sources["retry.attempts"].contains("merged under a more specific mergeType @ Gateway apps/gw"));
    }
}

#[test]
fn at_one_level_the_top_ranked_backend_traffic_policy_alone_applies() {
    let yaml = world(None, "")
        + &peer("BackendTrafficPolicy", "older", "  creationTimestamp: \"2024-01-01T00:00:00Z\"\n", &format!("{ON_LISTENER}  timeout: {{http: {{requestTimeout: 1s}}}}\n"))
        + &peer("BackendTrafficPolicy", "newer", "  creationTimestamp: \"2024-06-01T00:00:00Z\"\n", &format!("{ON_LISTENER}  retry: {{numRetries: 3}}\n"))
        + &peer("BackendTrafficPolicy", "gateway", "", &format!("{ON_GATEWAY}  retry: {{numRetries: 1}}\n"));
    let r = resolved(&yaml);
    let e = entry(&r, OTHER);
    // The oldest on the listener applies; the newer one and the Gateway's
    // (less specific) do not, although they set fields it leaves unset.
    assert_eq!((request_ms(e), attempts(e)), (Some(1000), None));
    let on_alt = entry(&r, "alt/apps/other/0");
    assert_eq!((request_ms(on_alt), attempts(on_alt)), (None, Some(1)));
    let status = policy_status(&inputs(&yaml)).policies;
    let newer = status.iter().find(|p| p.metadata.name == "newer").unwrap();
    assert_eq!(newer.status.ancestors[0].conditions[1].reason, "Overridden");
}

#[test]
fn the_routes_own_values_beat_backend_traffic_policies() {
    let yaml = world(None, "      timeouts: {request: 2s}")
        + &peer("BackendTrafficPolicy", "btp", "", &format!("{ON_RULE}  timeout: {{http: {{requestTimeout: 9s}}}}\n"));
    assert_eq!(request_ms(entry(&resolved(&yaml), A)), Some(2000));
}

// ---- every mapped field survives YAML -> document ----

/// A value for one of the project's settings, and how the entry shows it.
fn value_for(ours: &str) -> BoxedStrategy<(serde_json::Value, String)> {
    let duration = (1u64..=90).prop_map(|s| (serde_json::json!(format!("{s}s")), format!("{}", s * 1000)));
    match ours {
        "timeouts.request" | "timeouts.backendRequest" | "retry.backoff" => duration.boxed(),
        "retry.attempts" => (1u32..=5).prop_map(|n| (serde_json::json!(n), n.to_string())).boxed(),
        "retry.codes" => (400u16..=599).prop_map(|c| (serde_json::json!([c]), format!("[{c}]"))).boxed(),
        "retry.retryOn" => prop::sample::select(vec!["5xx", "gateway-error", "reset", "retriable-4xx"])
            .prop_map(|t| (serde_json::json!([t]), t.to_string()))
            .boxed(),
        _ => "[a-z][a-z0-9]{0,8}"
            .prop_map(|v| (serde_json::json!({"set": [{"name": "x-p", "value": v}]}), v))
            .boxed(),
    }
}

/// What the entry holds for one setting, in the form `value_for` gives.
fn shown(e: &RouteEntry, ours: &str) -> Option<String> {
    let t = e.timeouts.clone().unwrap_or_default();
    let r = e.retry.clone().unwrap_or_default();
    match ours {
        "timeouts.request" => t.request_ms.map(|v| v.to_string()),
        "timeouts.backendRequest" => t.backend_request_ms.map(|v| v.to_string()),
        "retry.backoff" => r.backoff_ms.map(|v| v.to_string()),
        "retry.attempts" => r.attempts.map(|v| v.to_string()),
        "retry.codes" => r.codes.map(|c| format!("{c:?}").replace(' ', "")),
        "retry.retryOn" => r.retry_on.and_then(|w| w.first().cloned()),
        "requestHeaderModifier" => set_header(e, "x-p"),
        _ => response_set(e, "x-p"),
    }
}

fn set_path(root: &mut serde_json::Value, path: &str, value: serde_json::Value) {
    let mut at = root;
    for part in path.split('.') {
        at = at.as_object_mut().unwrap().entry(part).or_insert(serde_json::json!({}));
    }
    *at = value;
}

fn round_trip(kind: &str, mapping: &attache_core::model::peers::Mapping, value: serde_json::Value, expect: &str) -> Result<(), TestCaseError> {
    let mut spec = serde_json::json!({"targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "r"}]});
    set_path(&mut spec, mapping.theirs, value);
    let group = if kind == "TrafficPolicy" { "gateway.kgateway.dev" } else { "gateway.envoyproxy.io" };
    let doc = serde_json::json!({"apiVersion": format!("{group}/v1alpha1"), "kind": kind, "metadata": {"name": "p", "namespace": "apps"}, "spec": spec});
    let yaml = world(None, "") + "---\n" + &doc.to_string() + "\n";
    let r = resolved(&yaml);
    let e = entry(&r, A);
    prop_assert_eq!(shown(e, mapping.ours), Some(expect.to_string()), "{} {}", kind, mapping.theirs);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn every_mapped_traffic_policy_field_reaches_the_document(
        (i, (value, expect)) in (0..TRAFFIC_POLICY.len()).prop_flat_map(|i| (Just(i), value_for(TRAFFIC_POLICY[i].ours)))
    ) {
        round_trip("TrafficPolicy", &TRAFFIC_POLICY[i], value, &expect)?;
    }

    #[test]
    fn every_mapped_backend_traffic_policy_field_reaches_the_document(
        (i, (value, expect)) in (0..BACKEND_TRAFFIC_POLICY.len()).prop_flat_map(|i| (Just(i), value_for(BACKEND_TRAFFIC_POLICY[i].ours)))
    ) {
        round_trip("BackendTrafficPolicy", &BACKEND_TRAFFIC_POLICY[i], value, &expect)?;
    }
}
