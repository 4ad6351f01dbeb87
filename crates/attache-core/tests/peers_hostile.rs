//! The peers' kinds written wrongly or unusually (docs/peers.md): a mapped
//! field of the wrong shape, target lists that are not lists, selectors
//! with kgateway's sectionName or Envoy Gateway's defaults, explicit nulls,
//! and fields one peer has and the other has not. Each wrong value spoils
//! only its own policy, with one error naming the peer's field.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use attache_core::diagnostic::{Diagnostic, Severity};
use attache_core::{policy_status, resolve, Inputs};
use common::peers::*;
use common::*;

fn with(severity: Severity, inputs: &Inputs) -> Vec<&Diagnostic> {
    inputs
        .diagnostics
        .iter()
        .filter(|d| d.severity == severity)
        .collect()
}

/// `object field` for each diagnostic of `severity`.
fn fields(severity: Severity, inputs: &Inputs) -> Vec<String> {
    with(severity, inputs)
        .iter()
        .map(|d| {
            format!(
                "{} {}",
                d.object.clone().unwrap_or_default(),
                d.field.clone().unwrap_or_default()
            )
        })
        .collect()
}

fn reason(inputs: &Inputs, name: &str) -> String {
    let status = policy_status(inputs);
    let p = status
        .policies
        .iter()
        .find(|p| p.metadata.name == name)
        .unwrap_or_else(|| panic!("no status for {name}"));
    p.status.conditions[0].reason.clone()
}

/// A good policy beside the bad ones: it must still apply.
fn good() -> String {
    peer(
        "TrafficPolicy",
        "good",
        "",
        &format!("{ON_GATEWAY}  timeouts: {{request: 6s}}\n"),
    )
}

#[test]
fn a_mapped_parent_of_the_wrong_shape_is_an_error_naming_the_field() {
    let yaml = world(None, "")
        + &peer(
            "TrafficPolicy",
            "tp-retry",
            "",
            &format!("{ON_ROUTE}  retry: \"3\"\n"),
        )
        + &peer(
            "TrafficPolicy",
            "tp-timeouts",
            "",
            &format!("{ON_ROUTE}  timeouts: [10s]\n"),
        )
        + &peer(
            "BackendTrafficPolicy",
            "btp-timeout",
            "",
            &format!("{ON_ROUTE}  timeout: {{http: 10s}}\n"),
        )
        + &peer(
            "BackendTrafficPolicy",
            "btp-kgateway-shape",
            "",
            &format!("{ON_ROUTE}  retry: {{retryOn: [5xx]}}\n"),
        )
        + &good();
    let inputs = inputs(&yaml);
    assert_eq!(
        fields(Severity::Error, &inputs),
        [
            "TrafficPolicy apps/tp-retry spec.retry",
            "TrafficPolicy apps/tp-timeouts spec.timeouts",
            "BackendTrafficPolicy apps/btp-timeout spec.timeout.http",
            "BackendTrafficPolicy apps/btp-kgateway-shape spec.retry.retryOn",
        ]
    );
    assert!(with(Severity::Note, &inputs).is_empty());
    let errors = with(Severity::Error, &inputs);
    let hint = |i: usize| errors[i].hint.clone().unwrap_or_default();
    assert!(hint(0).contains("attempts"), "{}", hint(0));
    assert!(hint(2).contains("requestTimeout"), "{}", hint(2));
    assert!(
        hint(3).contains("httpStatusCodes") && hint(3).contains("triggers"),
        "{}",
        hint(3)
    );
    for name in [
        "tp-retry",
        "tp-timeouts",
        "btp-timeout",
        "btp-kgateway-shape",
    ] {
        assert_eq!(reason(&inputs, name), "Invalid", "{name}");
    }
    assert_eq!(reason(&inputs, "good"), "Accepted");
    let r = resolve(&inputs, &key("apps/gw")).unwrap();
    assert_eq!(request_ms(entry(&r, A)), Some(6000));
}

#[test]
fn target_lists_that_are_not_lists_are_one_error_each() {
    let yaml = world(None, "")
        + &peer(
            "TrafficPolicy",
            "map-selectors",
            "",
            "  targetSelectors: {group: gateway.networking.k8s.io, kind: HTTPRoute, matchLabels: {tier: web}}\n  timeouts: {request: 1s}\n",
        )
        + &peer(
            "BackendTrafficPolicy",
            "map-refs",
            "",
            "  targetRefs: {group: gateway.networking.k8s.io, kind: HTTPRoute, name: r}\n  timeout: {http: {requestTimeout: 1s}}\n",
        )
        + &good();
    let inputs = inputs(&yaml);
    // One error each: no second "targets nothing" after the failed list.
    assert_eq!(
        fields(Severity::Error, &inputs),
        [
            "TrafficPolicy apps/map-selectors spec.targetSelectors",
            "BackendTrafficPolicy apps/map-refs spec.targetRefs",
        ]
    );
    assert_eq!(reason(&inputs, "map-selectors"), "Invalid");
    assert_eq!(reason(&inputs, "good"), "Accepted");
}

#[test]
fn a_failed_selector_or_ref_is_not_followed_by_targets_nothing() {
    let yaml = world(None, "")
        + &peer(
            "TrafficPolicy",
            "bad-selector",
            "",
            "  targetSelectors: [{group: gateway.networking.k8s.io, kind: HTTPRoute, matchLabels: {tier: web}, color: blue}]\n  timeouts: {request: 1s}\n",
        )
        + &peer(
            "TrafficPolicy",
            "bad-ref",
            "",
            "  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute}]\n  timeouts: {request: 1s}\n",
        );
    let inputs = inputs(&yaml);
    assert_eq!(
        fields(Severity::Error, &inputs),
        [
            "TrafficPolicy apps/bad-selector spec.targetSelectors[0]",
            "TrafficPolicy apps/bad-ref spec.targetRefs[0]",
        ]
    );
}

#[test]
fn kgateway_selectors_take_a_section_name_like_a_target_ref() {
    let yaml = world(None, "")
        + &peer(
            "TrafficPolicy",
            "rule",
            "",
            "  targetSelectors: [{group: gateway.networking.k8s.io, kind: HTTPRoute, matchLabels: {tier: web}, sectionName: a}]\n  timeouts: {request: 7s}\n",
        )
        + &peer(
            "TrafficPolicy",
            "listener",
            "",
            "  targetSelectors: [{group: gateway.networking.k8s.io, kind: Gateway, matchLabels: {}, sectionName: alt}]\n  retry: {attempts: 4}\n",
        );
    let inputs = inputs(&yaml);
    assert!(inputs.diagnostics.is_empty(), "{:?}", inputs.diagnostics);
    let r = resolve(&inputs, &key("apps/gw")).unwrap();
    // Rule `a` only, as `targetRefs: [{..., sectionName: a}]` would.
    assert_eq!(request_ms(entry(&r, A)), Some(7000));
    assert_eq!(request_ms(entry(&r, B)), None);
    assert_eq!(
        entry(&r, A).sources["timeouts.requestMs"],
        "TrafficPolicy apps/rule (plain, ShallowMergePreferChild @ HTTPRoute apps/r rule a)"
    );
    // Listener `alt` only.
    assert_eq!(attempts(entry(&r, "alt/apps/r/a")), Some(4));
    assert_eq!(attempts(entry(&r, A)), None);
}

#[test]
fn a_selected_object_without_the_section_is_target_not_found() {
    let yaml = world(None, "")
        + &peer(
            "TrafficPolicy",
            "nosuch",
            "",
            "  targetSelectors: [{group: gateway.networking.k8s.io, kind: HTTPRoute, matchLabels: {tier: web}, sectionName: nosuch}]\n  timeouts: {request: 7s}\n",
        );
    let inputs = inputs(&yaml);
    let warnings = with(Severity::Warning, &inputs);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0]
        .to_string()
        .contains("named rules of HTTPRoute apps/r: a"));
}

#[test]
fn envoy_gateway_selectors_default_the_group_and_note_namespaces() {
    let yaml = world(None, "")
        + &peer(
            "BackendTrafficPolicy",
            "by-label",
            "",
            "  targetSelectors: [{kind: HTTPRoute, matchLabels: {tier: web}, namespaces: {from: All}}]\n  timeout: {http: {requestTimeout: 8s}}\n",
        );
    let inputs = inputs(&yaml);
    assert!(with(Severity::Error, &inputs).is_empty());
    assert_eq!(
        fields(Severity::Note, &inputs),
        ["BackendTrafficPolicy apps/by-label spec.targetSelectors[0].namespaces"]
    );
    let r = resolve(&inputs, &key("apps/gw")).unwrap();
    assert_eq!(request_ms(entry(&r, A)), Some(8000));
    assert_eq!(request_ms(entry(&r, OTHER)), None);
}

#[test]
fn a_selector_field_only_the_other_peer_has_is_an_error() {
    let yaml = world(None, "")
        + &peer(
            "BackendTrafficPolicy",
            "eg-section",
            "",
            "  targetSelectors: [{kind: HTTPRoute, matchLabels: {tier: web}, sectionName: a}]\n  timeout: {http: {requestTimeout: 8s}}\n",
        )
        + &peer(
            "TrafficPolicy",
            "kg-namespaces",
            "",
            "  targetSelectors: [{group: gateway.networking.k8s.io, kind: HTTPRoute, matchLabels: {tier: web}, namespaces: {from: All}}]\n  timeouts: {request: 1s}\n",
        );
    let inputs = inputs(&yaml);
    assert_eq!(
        fields(Severity::Error, &inputs),
        [
            "BackendTrafficPolicy apps/eg-section spec.targetSelectors[0].sectionName",
            "TrafficPolicy apps/kg-namespaces spec.targetSelectors[0].namespaces",
        ]
    );
}

#[test]
fn a_traffic_policy_target_ref_is_noted_and_not_applied() {
    // kgateway's TrafficPolicySpec has targetRefs only: a singular
    // targetRef attaches nothing there, so it attaches nothing here.
    let yaml = world(None, "")
        + &peer(
            "TrafficPolicy",
            "singular",
            "",
            "  targetRef: {group: gateway.networking.k8s.io, kind: HTTPRoute, name: r}\n  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: other}]\n  timeouts: {request: 2s}\n",
        );
    let inputs = inputs(&yaml);
    assert_eq!(
        fields(Severity::Note, &inputs),
        ["TrafficPolicy apps/singular spec.targetRef"]
    );
    assert!(with(Severity::Error, &inputs).is_empty());
    let r = resolve(&inputs, &key("apps/gw")).unwrap();
    assert_eq!(request_ms(entry(&r, OTHER)), Some(2000));
    assert_eq!(request_ms(entry(&r, A)), None);
}

#[test]
fn merge_type_on_a_traffic_policy_is_one_note_and_no_error() {
    // kgateway has no mergeType: whatever its value, it is an unmapped
    // field, not an Envoy Gateway mergeType to check.
    let yaml = world(None, "")
        + &peer(
            "TrafficPolicy",
            "tp",
            "",
            &format!("{ON_ROUTE}  mergeType: Deep\n  timeouts: {{request: 2s}}\n"),
        );
    let inputs = inputs(&yaml);
    assert_eq!(
        fields(Severity::Note, &inputs),
        ["TrafficPolicy apps/tp spec.mergeType"]
    );
    assert!(with(Severity::Error, &inputs).is_empty());
    assert_eq!(reason(&inputs, "tp"), "Accepted");
}

#[test]
fn null_is_absent_as_in_kubernetes() {
    let yaml = world(None, "")
        + &peer(
            "BackendTrafficPolicy",
            "nulls",
            "",
            &format!("{ON_ROUTE}  mergeType: null\n  targetSelectors: null\n  circuitBreaker: null\n  retry: {{numRetries: 2, perRetry: null}}\n"),
        );
    let inputs = inputs(&yaml);
    assert!(inputs.diagnostics.is_empty(), "{:?}", inputs.diagnostics);
    assert!(inputs.policies[0].merge_type.is_none());
    let r = resolve(&inputs, &key("apps/gw")).unwrap();
    assert_eq!(attempts(entry(&r, A)), Some(2));
}

#[test]
fn an_oversized_policy_weight_is_out_of_range() {
    let yaml = world(None, "")
        + &peer(
            "TrafficPolicy",
            "heavy",
            "  annotations: {kgateway.dev/policy-weight: \"99999999999999999999\"}\n",
            &format!("{ON_ROUTE}  timeouts: {{request: 2s}}\n"),
        );
    let inputs = inputs(&yaml);
    let warnings = with(Severity::Warning, &inputs);
    assert_eq!(warnings.len(), 1);
    let text = warnings[0].to_string();
    assert!(text.contains("out of range"), "{text}");
    assert!(!text.contains("not an integer"), "{text}");
}

/// Envoy refuses a zero `retry_back_off.base_interval` (docs/semantics.md,
/// "Retries"): a peer's zero back-off is Invalid under its own field name,
/// as Envoy Gateway marks it, and the policy beside it still applies.
#[test]
fn a_zero_back_off_in_either_peer_is_invalid_naming_the_peers_field() {
    let yaml = world(None, "")
        + &peer(
            "TrafficPolicy",
            "tp-zero",
            "",
            &format!("{ON_ROUTE}  retry: {{attempts: 2, backoffBaseInterval: 0s}}\n"),
        )
        + &peer(
            "BackendTrafficPolicy",
            "btp-zero",
            "",
            &format!("{ON_ROUTE}  retry:\n    numRetries: 2\n    perRetry: {{backOff: {{baseInterval: 0ms}}}}\n"),
        )
        + &good();
    let inputs = inputs(&yaml);
    assert_eq!(
        fields(Severity::Error, &inputs),
        [
            "TrafficPolicy apps/tp-zero spec.retry.backoffBaseInterval",
            "BackendTrafficPolicy apps/btp-zero spec.retry.perRetry.backOff.baseInterval",
        ]
    );
    for e in with(Severity::Error, &inputs) {
        assert!(
            e.message.contains("Envoy refuses a zero base interval"),
            "{}",
            e.message
        );
    }
    assert_eq!(reason(&inputs, "tp-zero"), "Invalid");
    assert_eq!(reason(&inputs, "btp-zero"), "Invalid");
    assert_eq!(reason(&inputs, "good"), "Accepted");
    let r = resolve(&inputs, &key("apps/gw")).unwrap();
    assert_eq!(request_ms(entry(&r, A)), Some(6000));
    assert_eq!(
        attempts(entry(&r, A)),
        None,
        "neither zero back-off applies"
    );
}
