//! Precedence inside a level (weight, age, name), the backendRequest clamp,
//! explain data, and GEP-713 status reasons.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use attache_core::policy_status;
use attache_core::status::PolicyStatus;
use common::*;

fn reasons(s: &PolicyStatus) -> (String, Vec<(String, String)>) {
    let top = s.status.conditions[0].reason.clone();
    let per_target = s
        .status
        .ancestors
        .iter()
        .flat_map(|a| {
            a.conditions
                .iter()
                .map(|c| (c.kind.clone(), c.reason.clone()))
        })
        .collect();
    (top, per_target)
}

fn status_of<'a>(all: &'a [PolicyStatus], name: &str) -> &'a PolicyStatus {
    all.iter().find(|p| p.metadata.name == name).unwrap()
}

#[test]
fn weight_beats_age_and_age_beats_name() {
    let yaml = topology("")
        + &policy(
            "a-old",
            At::Gateway,
            "overrides: {timeouts: {request: 1s}}",
            Some("2020-01-01T00:00:00Z"),
            None,
        )
        + &policy(
            "b-heavy",
            At::Gateway,
            "overrides: {timeouts: {request: 2s}}",
            Some("2024-01-01T00:00:00Z"),
            Some(10),
        )
        + &policy(
            "c-old",
            At::Gateway,
            "defaults: {timeouts: {backendRequest: 300ms}}",
            Some("2020-01-01T00:00:00Z"),
            None,
        )
        + &policy(
            "d-new",
            At::Gateway,
            "defaults: {timeouts: {backendRequest: 400ms}}",
            Some("2024-01-01T00:00:00Z"),
            None,
        )
        + &policy(
            "e",
            At::Gateway,
            "defaults: {retry: {attempts: 5}}",
            None,
            None,
        )
        + &policy(
            "f",
            At::Gateway,
            "defaults: {retry: {attempts: 6}}",
            None,
            None,
        );
    let r = resolve_yaml(&yaml, "appns/gw");
    let e = entry(&r, ENTRY);
    let t = e.settings.timeouts.clone().unwrap();
    assert_eq!(
        t.request_ms,
        Some(2000),
        "higher weight wins although younger"
    );
    assert_eq!(
        t.backend_request_ms,
        Some(300),
        "same weight: the older wins"
    );
    assert_eq!(
        e.settings.retry.as_ref().unwrap().attempts,
        Some(5),
        "same weight and age: alphabetical"
    );
}

#[test]
fn overrides_beat_defaults_at_the_same_level() {
    let yaml = topology("")
        + &policy(
            "a",
            At::Gateway,
            "defaults: {timeouts: {request: 1s}}",
            None,
            Some(100),
        )
        + &policy(
            "b",
            At::Gateway,
            "overrides: {timeouts: {request: 2s}}",
            None,
            None,
        );
    let r = resolve_yaml(&yaml, "appns/gw");
    assert_eq!(request_ms(entry(&r, ENTRY)), Some(2000));
}

#[test]
fn backend_request_is_clamped_to_request_with_a_warning() {
    let yaml = topology("    timeouts: {request: 2s}")
        + &policy(
            "slow",
            At::Gateway,
            "overrides: {timeouts: {backendRequest: 5s}}",
            None,
            None,
        );
    let r = resolve_yaml(&yaml, "appns/gw");
    let t = entry(&r, ENTRY).settings.timeouts.clone().unwrap();
    assert_eq!(
        (t.request_ms, t.backend_request_ms),
        (Some(2000), Some(2000))
    );
    assert!(r.diagnostics.iter().any(|d| d
        .message
        .contains("backendRequest 5s exceeds timeouts.request 2s; clamped")));
    // 0s disables the request timeout: nothing to clamp to.
    let yaml = topology("    timeouts: {request: 0s}")
        + &policy(
            "slow",
            At::Gateway,
            "overrides: {timeouts: {backendRequest: 5s}}",
            None,
            None,
        );
    let r = resolve_yaml(&yaml, "appns/gw");
    let t = entry(&r, ENTRY).settings.timeouts.clone().unwrap();
    assert_eq!((t.request_ms, t.backend_request_ms), (Some(0), Some(5000)));
}

#[test]
fn explain_lists_every_field_and_every_loser_with_why() {
    let yaml = topology("    timeouts: {request: 30s}")
        + &policy(
            "ns-default",
            At::Namespace,
            "defaults: {timeouts: {request: 5s, backendRequest: 1s}}",
            None,
            None,
        )
        + &policy(
            "gw-override",
            At::Gateway,
            "overrides: {timeouts: {request: 10s}}",
            None,
            None,
        );
    let all =
        attache_core::explain_route(&inputs(&yaml), &key("appns/gw"), &key("appns/route")).unwrap();
    let x = &all[0];
    let fields: Vec<(&str, &str, &str)> = x
        .fields
        .iter()
        .map(|f| {
            (
                f.field.as_str(),
                f.value.as_str(),
                f.from[0].source.as_str(),
            )
        })
        .collect();
    assert_eq!(
        fields,
        [
            (
                "timeouts.requestMs",
                "10000ms",
                "RoutePolicy appns/gw-override"
            ),
            (
                "timeouts.backendRequestMs",
                "1000ms",
                "RoutePolicy appns/ns-default"
            )
        ]
    );
    let lost: Vec<(&str, &str, &str)> = x
        .lost
        .iter()
        .map(|l| {
            (
                l.value.as_str(),
                l.source.source.as_str(),
                l.beaten_by.source.as_str(),
            )
        })
        .collect();
    assert_eq!(
        lost,
        [
            (
                "30000ms",
                "HTTPRoute appns/route rule main",
                "RoutePolicy appns/gw-override"
            ),
            (
                "5000ms",
                "RoutePolicy appns/ns-default",
                "RoutePolicy appns/gw-override"
            ),
        ]
    );
    assert!(
        x.lost[1].why.contains("fills only unset fields"),
        "{}",
        x.lost[1].why
    );
}

#[test]
fn status_reasons_accepted_invalid_target_not_found_conflicted() {
    let yaml = topology("")
        + &policy(
            "attached",
            At::Gateway,
            "defaults: {retry: {attempts: 1}}",
            None,
            None,
        )
        + &policy(
            "merged",
            At::Namespace,
            "defaults: {retry: {attempts: 2, backoff: 1s}}",
            None,
            None,
        )
        + &policy(
            "overridden",
            At::Route,
            "defaults: {retry: {attempts: 3}}",
            None,
            None,
        )
        + &policy(
            "top",
            At::Class,
            "overrides: {retry: {attempts: 9}}",
            None,
            None,
        )
        + &policy(
            "peer-a",
            At::Listener,
            "defaults: {timeouts: {request: 1s}}",
            None,
            None,
        )
        + &policy(
            "peer-b",
            At::Listener,
            "defaults: {timeouts: {request: 2s}}",
            None,
            None,
        )
        + &policy(
            "bad",
            At::Gateway,
            "defaults: {timeouts: {request: soon}}",
            None,
            None,
        )
        + &policy("lost", At::Route, "defaults: {}", None, None)
            .replace("name: route}", "name: gone}");
    let report = policy_status(&inputs(&yaml));
    let all = &report.policies;
    let a = |t: &str, r: &str| (t.to_string(), r.to_string());
    assert_eq!(
        reasons(status_of(all, "top")),
        (
            "Accepted".into(),
            vec![a("Accepted", "Accepted"), a("Attached", "Attached")]
        )
    );
    // attempts taken by the class override; "attached" loses its only field to it.
    assert_eq!(
        reasons(status_of(all, "attached")),
        (
            "Accepted".into(),
            vec![a("Accepted", "Accepted"), a("Attached", "Overridden")]
        )
    );
    assert_eq!(
        reasons(status_of(all, "merged")),
        (
            "Accepted".into(),
            vec![a("Accepted", "Accepted"), a("Attached", "Merged")]
        )
    );
    assert_eq!(
        reasons(status_of(all, "peer-a")),
        (
            "Accepted".into(),
            vec![a("Accepted", "Accepted"), a("Attached", "Attached")]
        )
    );
    assert_eq!(
        reasons(status_of(all, "peer-b")),
        (
            "Conflicted".into(),
            vec![a("Accepted", "Conflicted"), a("Attached", "Overridden")]
        )
    );
    assert_eq!(reasons(status_of(all, "bad")), ("Invalid".into(), vec![]));
    assert_eq!(
        reasons(status_of(all, "lost")),
        (
            "TargetNotFound".into(),
            vec![a("Accepted", "TargetNotFound")]
        )
    );
    let merged = &status_of(all, "merged").status.ancestors[0].conditions[1].message;
    assert!(
        merged.contains("1 of 2 field values")
            && merged.contains("ClusterRoutePolicy top (overrides @ GatewayClass gc)"),
        "{merged}"
    );
    let conflicted = &status_of(all, "peer-b").status.ancestors[0].conditions[0].message;
    assert!(
        conflicted.contains("ranks below RoutePolicy appns/peer-a"),
        "{conflicted}"
    );
    assert!(status_of(all, "bad").status.conditions[0]
        .message
        .contains("spec.defaults.timeouts.request"));
}

/// The shared-fold status counts equal the full fold's on a topology with
/// several routes, listeners and delegation (the CLI's shop fixture).
#[test]
fn shared_and_full_status_counts_agree_on_the_shop_fixture() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/cli");
    let mut yaml = String::new();
    for file in ["shop.yaml", "bad-policies.yaml"] {
        yaml.push_str(&std::fs::read_to_string(root.join(file)).unwrap());
        yaml.push_str("\n---\n");
    }
    // More policies on the shared levels, so upper folds are reused.
    for (i, at) in ["Gateway", "Gateway"].iter().enumerate() {
        yaml.push_str(&format!(
            "apiVersion: policy.attache.dev/v1alpha1\nkind: RoutePolicy\nmetadata: {{name: extra{i}, namespace: infra}}\nspec:\n  targetRefs: [{{group: gateway.networking.k8s.io, kind: {at}, name: edge}}]\n  requestHeaderModifier: {{set: [{{name: x-checkout, value: edge{i}}}]}}\n  timeouts: {{request: {}s}}\n---\n",
            i + 1
        ));
    }
    let inputs = inputs(&yaml);
    let gw = key("infra/edge");
    let shared = attache_core::resolve::contributions_shared(&inputs, &gw).unwrap();
    let full = attache_core::resolve::contributions_full(&inputs, &gw).unwrap();
    assert!(shared.len() >= 6, "{shared:#?}");
    assert_eq!(shared, full);
}
