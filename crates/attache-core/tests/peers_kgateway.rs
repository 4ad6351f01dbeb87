//! kgateway's TrafficPolicy (docs/peers.md): each mapping, the
//! annotations, targetSelectors, notes for what is not enforced, and bad
//! values named by the peer's field.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use attache_core::contract::RouteEntry;
use attache_core::diagnostic::Severity;
use attache_core::{policy_status, resolve};
use common::peers::*;
use common::*;

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
    assert_eq!(e.settings.retry.as_ref().unwrap().backoff_ms, Some(40));
    assert_eq!(retry_on(e).unwrap()[0], "5xx");
    assert_eq!(set_header(e, "x-req").as_deref(), Some("one"));
    assert_eq!(
        e.settings.request_headers.as_ref().unwrap().remove,
        vec!["x-gone"]
    );
    assert_eq!(
        e.settings.response_headers.as_ref().unwrap().add[0].value,
        "two"
    );
    assert_eq!(
        e.sources["timeouts.requestMs"],
        "TrafficPolicy apps/tp (plain, ShallowMergePreferChild @ HTTPRoute apps/r)"
    );
    assert!(r.diagnostics.is_empty(), "{:?}", r.diagnostics);
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
    assert_eq!(
        (
            request_ms(&e),
            set_header(&e, "x-h").as_deref(),
            set_header(&e, "x-g")
        ),
        (Some(5000), Some("route"), None)
    );
    let e = priority_case("ShallowMergePreferParent");
    assert_eq!(
        (
            request_ms(&e),
            set_header(&e, "x-h").as_deref(),
            set_header(&e, "x-g").as_deref()
        ),
        (Some(20000), Some("gw"), Some("gw"))
    );
    let e = priority_case("DeepMergePreferChild");
    assert_eq!(
        (
            request_ms(&e),
            set_header(&e, "x-h").as_deref(),
            set_header(&e, "x-g").as_deref()
        ),
        (Some(5000), Some("route,gw"), Some("gw"))
    );
    let e = priority_case("DeepMergePreferParent");
    assert_eq!(
        (
            request_ms(&e),
            set_header(&e, "x-h").as_deref(),
            set_header(&e, "x-g").as_deref()
        ),
        (Some(20000), Some("gw,route"), Some("gw"))
    );
}

#[test]
fn kgateway_policy_weight_ranks_traffic_policies_at_one_level() {
    let two = |weight_of_b: &str| {
        world(None, "")
            + &peer(
                "TrafficPolicy",
                "a",
                "",
                &format!("{ON_GATEWAY}  timeouts: {{request: 1s}}\n"),
            )
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
        .map(|d| {
            format!(
                "{} {}",
                d.object.clone().unwrap_or_default(),
                d.field.clone().unwrap_or_default()
            )
        })
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
    assert_eq!(
        entry(&r, OTHER).settings.retry.as_ref().unwrap().backoff_ms,
        Some(10)
    );
}

#[test]
fn a_bad_peer_value_names_the_peers_field_and_spoils_only_its_policy() {
    let yaml = world(None, "")
        + &peer(
            "TrafficPolicy",
            "bad",
            "",
            &format!("{ON_ROUTE}  retry: {{statusCodes: [200]}}\n"),
        )
        + &peer(
            "BackendTrafficPolicy",
            "bad2",
            "",
            &format!("{ON_ROUTE}  timeout: {{http: {{requestTimeout: 1.5s}}}}\n"),
        )
        + &peer(
            "BackendTrafficPolicy",
            "bad3",
            "",
            &format!("{ON_ROUTE}  mergeType: Deep\n"),
        )
        + &peer(
            "TrafficPolicy",
            "good",
            "",
            &format!("{ON_GATEWAY}  timeouts: {{request: 6s}}\n"),
        );
    let inputs = inputs(&yaml);
    let errors: Vec<String> = inputs
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| d.field.clone().unwrap_or_default())
        .collect();
    assert_eq!(
        errors,
        [
            "spec.retry.statusCodes[0]",
            "spec.timeout.http.requestTimeout",
            "spec.mergeType"
        ]
    );
    let r = resolve(&inputs, &key("apps/gw")).unwrap();
    assert_eq!(request_ms(entry(&r, A)), Some(6000));
    let status = policy_status(&inputs);
    let reason = |name: &str| {
        let p = status
            .policies
            .iter()
            .find(|p| p.metadata.name == name)
            .unwrap();
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
            "  targetRefs:\n    - {group: gateway.networking.k8s.io, kind: TCPRoute, name: g}\n    - {group: gateway.networking.k8s.io, kind: HTTPRoute, name: r}\n  timeouts: {request: 3s}\n",
        );
    let inputs = inputs(&yaml);
    assert!(inputs
        .diagnostics
        .iter()
        .any(|d| d.severity == Severity::Note
            && d.field.as_deref() == Some("spec.targetRefs[0].kind")));
    let r = resolve(&inputs, &key("apps/gw")).unwrap();
    assert_eq!(request_ms(entry(&r, A)), Some(3000));
}
