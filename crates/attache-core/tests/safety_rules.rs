//! What a policy may not do (docs/semantics.md, "What a policy may not do";
//! docs/security.md): each refused header name, value and retry count makes
//! its policy `Invalid` with the field path, and every other policy still
//! applies. These are issue 8's defects 1, 2, 3 and 6 at the resolver.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use attache_core::policy_status;
use common::*;

/// The condition reason of policy `name` in `attache status`.
fn accepted_reason(yaml: &str, name: &str) -> String {
    let report = policy_status(&inputs(yaml));
    let status = report
        .policies
        .iter()
        .find(|p| p.metadata.name == name)
        .unwrap_or_else(|| panic!("no status for {name}"));
    status.status.conditions[0].reason.clone()
}

/// A topology with a good policy (`good`, sets x-good and a timeout) and the
/// policy under test (`bad`).
fn with_bad(body: &str) -> String {
    topology("")
        + &policy(
            "good",
            At::Route,
            "defaults: {timeouts: {request: 7s}, requestHeaderModifier: {set: [{name: x-good, value: \"1\"}]}}",
            None,
            None,
        )
        + &policy("bad", At::Gateway, body, None, None)
}

fn assert_refused(body: &str, field: &str, says: &str) {
    let yaml = with_bad(body);
    let parsed = inputs(&yaml);
    let errors: Vec<String> = parsed.diagnostics.iter().map(|d| d.to_string()).collect();
    assert!(
        errors
            .iter()
            .any(|m| m.contains("RoutePolicy appns/bad") && m.contains(field) && m.contains(says)),
        "{body}: expected {field} / {says} in {errors:#?}"
    );
    assert_eq!(accepted_reason(&yaml, "bad"), "Invalid", "{body}");
    assert_eq!(accepted_reason(&yaml, "good"), "Accepted", "{body}");
    let r = resolve_yaml(&yaml, "appns/gw");
    let e = entry(&r, ENTRY);
    assert_eq!(request_ms(e), Some(7000), "{body}: the good policy applies");
    assert_eq!(set_header(e, "x-good").as_deref(), Some("1"), "{body}");
}

#[test]
fn smuggling_headers_are_refused() {
    for name in [
        "content-length",
        "Transfer-Encoding",
        "connection",
        "keep-alive",
        "proxy-connection",
        "upgrade",
        "te",
        "trailer",
    ] {
        assert_refused(
            &format!(
                "defaults: {{requestHeaderModifier: {{set: [{{name: {name}, value: \"0\"}}]}}}}"
            ),
            "spec.defaults.requestHeaderModifier.set[0].name",
            "request smuggling",
        );
    }
    assert_refused(
        "overrides: {responseHeaderModifier: {set: [{name: content-length, value: \"5\"}]}}",
        "spec.overrides.responseHeaderModifier.set[0].name",
        "request smuggling",
    );
    assert_refused(
        "defaults: {requestHeaderModifier: {remove: [transfer-encoding]}}",
        "spec.defaults.requestHeaderModifier.remove[0]",
        "hop-by-hop",
    );
}

#[test]
fn host_and_pseudo_headers_are_refused() {
    assert_refused(
        "defaults: {requestHeaderModifier: {set: [{name: host, value: internal-only}]}}",
        "requestHeaderModifier.set[0].name",
        "re-route",
    );
    assert_refused(
        "defaults: {requestHeaderModifier: {add: [{name: \":path\", value: /smuggled}]}}",
        "requestHeaderModifier.add[0].name",
        "pseudo-header",
    );
}

#[test]
fn router_control_headers_are_refused() {
    for name in [
        "x-envoy-upstream-stream-duration-ms",
        "x-envoy-upstream-rq-timeout-alt-response",
        "x-envoy-hedge-on-per-try-timeout",
        "X-Envoy-Max-Retries",
    ] {
        assert_refused(
            &format!(
                "overrides: {{requestHeaderModifier: {{set: [{{name: {name}, value: \"200\"}}]}}}}"
            ),
            "spec.overrides.requestHeaderModifier.set[0].name",
            "router control",
        );
    }
}

#[test]
fn control_characters_whitespace_and_size_in_values_are_refused() {
    for (value, says) in [
        ("\"a\\u0001b\"", "0x01"),
        ("\"ab\\u007f\"", "0x7F"),
        ("\" padded\"", "whitespace"),
    ] {
        assert_refused(
            &format!(
                "defaults: {{requestHeaderModifier: {{set: [{{name: x-a, value: {value}}}]}}}}"
            ),
            "spec.defaults.requestHeaderModifier.set[0].value",
            says,
        );
    }
    let long = "v".repeat(4097);
    assert_refused(
        &format!("defaults: {{responseHeaderModifier: {{add: [{{name: x-a, value: {long}}}]}}}}"),
        "spec.defaults.responseHeaderModifier.add[0].value",
        "over the limit of 4096",
    );
}

#[test]
fn more_than_64_operations_per_direction_are_refused() {
    let names: Vec<String> = (0..65).map(|i| format!("x-h{i}")).collect();
    assert_refused(
        &format!(
            "defaults: {{requestHeaderModifier: {{remove: [{}]}}}}",
            names.join(", ")
        ),
        "spec.defaults.requestHeaderModifier",
        "65 header operations",
    );
    // 64 is the limit, not over it.
    let yaml = with_bad(&format!(
        "defaults: {{requestHeaderModifier: {{remove: [{}]}}}}",
        names[..64].join(", ")
    ));
    assert_eq!(accepted_reason(&yaml, "bad"), "Accepted");
}

#[test]
fn retry_attempts_above_ten_are_refused() {
    assert_refused(
        "overrides: {retry: {attempts: 1000000000}}",
        "spec.overrides.retry.attempts",
        "over the limit of 10",
    );
    assert_refused(
        "defaults: {retry: {attempts: 11}}",
        "spec.defaults.retry.attempts",
        "retry budget",
    );
    let yaml = with_bad("defaults: {retry: {attempts: 10}}");
    assert_eq!(accepted_reason(&yaml, "bad"), "Accepted");
}

#[test]
fn a_route_filter_breaking_the_rules_drops_that_route_with_an_error() {
    let yaml = topology(
        "    filters:\n    - type: RequestHeaderModifier\n      requestHeaderModifier:\n        set: [{name: content-length, value: \"0\"}]",
    );
    let parsed = inputs(&yaml);
    let errors: Vec<String> = parsed.diagnostics.iter().map(|d| d.to_string()).collect();
    assert!(
        errors
            .iter()
            .any(|m| m.contains("HTTPRoute appns/route") && m.contains("content-length")),
        "{errors:#?}"
    );
    let r = resolve_yaml(&yaml, "appns/gw");
    assert!(names(&r).is_empty(), "{:?}", names(&r));
}

#[test]
fn a_typo_in_a_known_groups_kind_or_version_is_an_error_not_a_note() {
    let typo = policy(
        "typo",
        At::Route,
        "defaults: {timeouts: {request: 1s}}",
        None,
        None,
    )
    .replace("kind: RoutePolicy", "kind: RoutePolcy");
    let old_route = "---\napiVersion: gateway.networking.k8s.io/v1alpha2\nkind: HTTPRoute\nmetadata: {name: old, namespace: appns}\nspec: {}\n";
    let other_kind =
        "---\napiVersion: gateway.networking.k8s.io/v1\nkind: TLSRoute\nmetadata: {name: g, namespace: appns}\nspec: {}\n";
    let parsed = inputs(&(topology("") + &typo + old_route + other_kind));
    let shown: Vec<String> = parsed
        .diagnostics
        .iter()
        .map(|d| format!("{}: {d}", d.severity))
        .collect();
    assert!(
        shown.iter().any(|m| m.starts_with("error: ")
            && m.contains("RoutePolcy: kind: \"RoutePolcy\" is not a kind of policy.attache.dev")),
        "{shown:#?}"
    );
    assert!(
        shown.iter().any(|m| m.starts_with("error: ")
            && m.contains(
                "HTTPRoute: apiVersion: gateway.networking.k8s.io/v1alpha2 is not a version"
            )),
        "{shown:#?}"
    );
    // A Gateway API kind the resolver does not read is still only a note.
    assert!(
        shown
            .iter()
            .any(|m| m.starts_with("note: ") && m.contains("TLSRoute is not read")),
        "{shown:#?}"
    );
}
