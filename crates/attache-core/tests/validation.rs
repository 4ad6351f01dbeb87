//! Bad input: each kind of problem is reported with file, document, object
//! and field, the bad object is dropped, and nothing else is affected.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use attache_core::{parse, Inputs};
use common::*;

fn messages(inputs: &Inputs) -> Vec<String> {
    inputs
        .diagnostics
        .iter()
        .map(|d| format!("{}: {d}", d.severity))
        .collect()
}

fn with_policies(policies: &[String]) -> String {
    let mut yaml = topology("");
    for p in policies {
        yaml.push_str(p);
    }
    yaml
}

/// The document number of the n-th policy appended to `topology` (3 objects first).
fn doc(n: usize) -> String {
    format!("test.yaml (document {})", 3 + n)
}

#[test]
fn bad_duration_names_file_document_object_field_and_the_valid_form() {
    let yaml = with_policies(&[
        policy(
            "good",
            At::Route,
            "defaults: {retry: {attempts: 2}}",
            None,
            None,
        ),
        policy(
            "fast",
            At::Route,
            "defaults: {timeouts: {request: 1.5s}}",
            None,
            None,
        ),
    ]);
    let inputs = inputs(&yaml);
    assert_eq!(
        messages(&inputs),
        [format!(
            "error: {} RoutePolicy appns/fast: spec.defaults.timeouts.request: \"1.5s\" is not a Gateway API duration; use e.g. 1500ms, 10s or 1m30s; 0s disables (pattern ^([0-9]{{1,5}}(h|m|s|ms)){{1,4}}$)",
            doc(2)
        )]
    );
    let r = attache_core::resolve(&inputs, &key("appns/gw")).unwrap();
    let e = entry(&r, ENTRY);
    assert_eq!(
        e.settings.retry.as_ref().and_then(|r| r.attempts),
        Some(2),
        "the good policy still applies"
    );
    assert_eq!(e.settings.timeouts, None, "the bad one is dropped whole");
}

#[test]
fn each_kind_of_bad_policy_is_invalid_with_its_field() {
    let cases: [(&str, At, &str, &str); 10] = [
        ("codes", At::Route, "defaults: {retry: {codes: [503, 600]}}", "spec.defaults.retry.codes[1]: 600 is not a retriable HTTP status code"),
        ("attempts", At::Route, "overrides: {retry: {attempts: -1}}", "spec.overrides.retry.attempts: -1 is not a valid number of retries"),
        ("header", At::Route, "defaults: {requestHeaderModifier: {set: [{name: \"x a\", value: v}]}}", "spec.defaults.requestHeaderModifier.set[0].name: \"x a\" is not an RFC 9110 header name (token)"),
        ("mixed", At::Route, "timeouts: {request: 1s}\n  defaults: {retry: {attempts: 1}}", "spec: settings directly under spec are mixed with a defaults/overrides stanza"),
        ("cross-ns", At::Route, "defaults: {}", "spec.targetRefs[0].namespace: cross-namespace target other/route from a policy in appns"),
        ("class", At::Gateway, "defaults: {}", "spec.targetRefs[0].kind: a RoutePolicy cannot target a GatewayClass"),
        ("typo", At::Route, "defaults: {timeout: {request: 1s}}", "spec.defaults.timeout: unknown field `timeout`"),
        ("trigger", At::Route, "defaults: {retry: {retryOn: [sometimes]}}", "spec.defaults.retry.retryOn[0]: \"sometimes\" is not an Envoy retry trigger"),
        ("backoff", At::Route, "defaults: {retry: {backoff: 1d}}", "spec.defaults.retry.backoff: \"1d\" is not a Gateway API duration"),
        // Envoy refuses base_interval 0s and, with it, the whole route configuration.
        ("zero-backoff", At::Route, "defaults: {retry: {attempts: 2, backoff: 0s}}", "spec.defaults.retry.backoff: \"0s\" is not a back-off: Envoy refuses a zero base interval; use at least 1ms, or leave backoff out for Envoy's default of 25ms"),
    ];
    for (name, at, body, expected) in cases {
        let mut p = policy(name, at, body, None, None);
        if name == "cross-ns" {
            p = p.replace("name: route}", "name: route, namespace: other}");
        }
        if name == "class" {
            p = p.replace(
                At::Gateway.target_ref(),
                "{group: gateway.networking.k8s.io, kind: GatewayClass, name: gc}",
            );
        }
        let inputs = inputs(&with_policies(&[p]));
        let all = messages(&inputs);
        assert!(
            all.iter().any(|m| m.starts_with(&format!(
                "error: {} RoutePolicy appns/{name}: {expected}",
                doc(1)
            ))),
            "{name}: {all:#?}"
        );
        assert!(!inputs.policies[0].is_valid(), "{name} should be invalid");
        assert!(
            inputs.by_target.values().all(|v| v.is_empty()),
            "{name} must not attach"
        );
    }
}

#[test]
fn cluster_policies_reach_only_cluster_scoped_targets() {
    let p = policy(
        "global",
        At::Class,
        "defaults: {timeouts: {request: 9s}}",
        None,
        None,
    ) + &policy("wrong", At::Class, "defaults: {}", None, None)
        .replace(At::Class.target_ref(), At::Gateway.target_ref());
    let inputs = inputs(&with_policies(&[p]));
    let all = messages(&inputs);
    assert!(all.iter().any(|m| m.contains("ClusterRoutePolicy wrong: spec.targetRefs[0].kind: a ClusterRoutePolicy cannot target a Gateway")), "{all:#?}");
    let r = attache_core::resolve(&inputs, &key("appns/gw")).unwrap();
    assert_eq!(request_ms(entry(&r, ENTRY)), Some(9000));
}

#[test]
fn missing_targets_are_target_not_found_with_what_exists() {
    let p = policy("ghost", At::Route, "defaults: {}", None, None)
        .replace("name: route}", "name: nope}")
        + &policy("no-listener", At::Listener, "defaults: {}", None, None)
            .replace("sectionName: http", "sectionName: https");
    let inputs = inputs(&with_policies(&[p]));
    assert_eq!(
        messages(&inputs),
        [
            format!("warning: {} RoutePolicy appns/ghost: spec.targetRefs[0]: target HTTPRoute appns/nope does not exist (TargetNotFound); HTTPRoutes in appns: route", doc(1)),
            format!("warning: {} RoutePolicy appns/no-listener: spec.targetRefs[0]: target Gateway appns/gw listener https does not exist (TargetNotFound); listeners of Gateway appns/gw: http", doc(2)),
        ]
    );
}

#[test]
fn unknown_priority_is_a_warning_and_the_default_applies() {
    let yaml = topology("    timeouts: {request: 1s}").replace(
        "metadata: {name: gw, namespace: appns}",
        "metadata: {name: gw, namespace: appns, annotations: {kgateway.dev/inherited-policy-priority: PreferParentPlease}}",
    ) + &policy("plain", At::Gateway, "timeouts: {request: 5s}", None, None);
    let inputs = inputs(&yaml);
    assert_eq!(
        messages(&inputs),
        ["warning: test.yaml (document 2) Gateway appns/gw: metadata.annotations[kgateway.dev/inherited-policy-priority]: \"PreferParentPlease\" is not a merge priority; using ShallowMergePreferChild; use one of ShallowMergePreferChild (default), ShallowMergePreferParent, DeepMergePreferChild, DeepMergePreferParent"]
    );
    let r = attache_core::resolve(&inputs, &key("appns/gw")).unwrap();
    assert_eq!(
        request_ms(entry(&r, ENTRY)),
        Some(1000),
        "default: prefer child"
    );
}

#[test]
fn invalid_routes_and_gateways_are_dropped_precisely() {
    let yaml = topology("    timeouts: {request: 10}\n    filters:\n    - type: RequestHeaderModifier")
        + "---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: broken, namespace: appns}\nspec:\n  listeners: []\n";
    let inputs = inputs(&yaml);
    let all = messages(&inputs);
    assert_eq!(
        all,
        [
            "error: test.yaml (document 3) HTTPRoute appns/route: spec.rules[0].timeouts.request: \"10\" is not a Gateway API duration; use e.g. 1500ms, 10s or 1m30s; 0s disables (pattern ^([0-9]{1,5}(h|m|s|ms)){1,4}$)",
            "error: test.yaml (document 3) HTTPRoute appns/route: spec.rules[0].filters[0].requestHeaderModifier: type RequestHeaderModifier needs its requestHeaderModifier field; add requestHeaderModifier: {set: [...], add: [...], remove: [...]}",
            "error: test.yaml (document 4) Gateway appns/broken: spec: missing field `gatewayClassName`; fix the field's spelling or type; the Gateway is ignored until then",
        ]
    );
    assert!(inputs.routes.is_empty());
    assert_eq!(inputs.gateways.len(), 1);
}

#[test]
fn other_kinds_are_skipped_with_one_note_per_kind() {
    let docs = docs(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n- just a list\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: quietly-known}\n",
    );
    let inputs = parse(&docs);
    let notes: Vec<String> = inputs
        .diagnostics
        .iter()
        .map(|d| format!("{}: {d}", d.severity))
        .collect();
    assert_eq!(notes.len(), 2, "{notes:#?}");
    assert!(notes.iter().all(|n| n.starts_with("note: ")));
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("note: test.yaml (document 2): not a Kubernetes object")),
        "{notes:#?}"
    );
    assert!(
        notes.iter().any(|n| n.starts_with(
            "note: test.yaml (document 1): 2 v1 ConfigMap objects are not read by the resolver"
        )),
        "{notes:#?}"
    );
}

#[test]
fn weight_and_timestamp_annotations_are_checked() {
    let p = policy("w", At::Route, "defaults: {}", Some("last tuesday"), None).replace(
        "metadata:\n",
        "metadata:\n  annotations: {policy.attache.dev/policy-weight: heavy}\n",
    );
    let all = messages(&inputs(&with_policies(&[p])));
    assert!(
        all.iter().any(|m| m.contains(
            "metadata.annotations[policy.attache.dev/policy-weight]: \"heavy\" is not an integer"
        )),
        "{all:#?}"
    );
    assert!(
        all.iter().any(|m| m.contains(
            "metadata.creationTimestamp: \"last tuesday\" is not a Kubernetes timestamp"
        )),
        "{all:#?}"
    );
}
