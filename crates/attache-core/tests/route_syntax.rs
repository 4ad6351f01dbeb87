//! A route the filter would refuse is refused by the resolver first, alone:
//! a hostname that is not a DNS name, a path that does not start with `/`,
//! a regex the filter's engine does not compile, a method or header name
//! that is not a token (attache_contract::route_syntax). Before, such a route
//! reached the document and the filter refused the whole document, every
//! route of the Gateway with it (the filter-side refusals are tested in
//! attache-filter's fallback.rs).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use attache_core::{resolve, Severity};
use common::*;

const GATEWAY: &str = r#"
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: edge, namespace: shop}
spec:
  gatewayClassName: gc
  listeners:
  - {name: http, port: 80, protocol: HTTP}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: good, namespace: shop}
spec:
  parentRefs: [{name: edge}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /good}}]
    backendRefs: [{name: svc, port: 80}]
"#;

/// Route `shop/bad` with `spec` lines `hostnames` and one rule's `matches`.
fn bad_route(hostnames: &str, matches: &str) -> String {
    format!(
        r#"---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: bad, namespace: shop}}
spec:
  parentRefs: [{{name: edge}}]
  hostnames: {hostnames}
  rules:
  - matches: {matches}
    backendRefs: [{{name: svc, port: 80}}]
"#
    )
}

/// The one error, its field, and the entries that still resolve.
fn refused(hostnames: &str, matches: &str) -> (String, String, Vec<String>) {
    let yaml = format!("{GATEWAY}{}", bad_route(hostnames, matches));
    let inputs = inputs(&yaml);
    let errors: Vec<_> = inputs
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .collect();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    let d = errors[0];
    assert_eq!(d.object.as_deref(), Some("HTTPRoute shop/bad"), "{d:#?}");
    assert!(d.hint.as_deref().is_some_and(|h| !h.is_empty()), "{d:#?}");
    let gw = attache_core::select_gateway(&inputs, None).unwrap();
    let names = resolve(&inputs, &gw)
        .unwrap()
        .resolution
        .document
        .routes
        .iter()
        .map(|e| e.name.clone())
        .collect();
    (
        d.field.clone().unwrap_or_default(),
        d.message.clone(),
        names,
    )
}

const PREFIX: &str = "[{path: {type: PathPrefix, value: /bad}}]";

#[test]
fn a_hostname_that_is_not_a_dns_name_refuses_the_route_alone() {
    let (field, message, names) = refused("[\"shop.example.com:8080\"]", PREFIX);
    assert_eq!(field, "spec.hostnames[0]");
    assert!(message.contains("shop.example.com:8080"), "{message}");
    assert_eq!(names, vec!["http/shop/good/0".to_string()]);
}

#[test]
fn a_path_without_a_leading_slash_is_refused_naming_the_match() {
    let (field, message, names) = refused("[]", "[{path: {type: PathPrefix, value: api}}]");
    assert_eq!(field, "spec.rules[0].matches[0].path.value");
    assert!(message.contains("does not start with /"), "{message}");
    assert_eq!(names, vec!["http/shop/good/0".to_string()]);
}

#[test]
fn a_regex_the_filter_cannot_compile_is_refused() {
    let (field, message, _) = refused("[]", "[{path: {type: RegularExpression, value: \"/a(\"}}]");
    assert_eq!(field, "spec.rules[0].matches[0].path.value");
    assert!(message.contains("does not parse"), "{message}");
    // A Unicode class: RE2 has it, the filter's engine (regex-lite) does not.
    let (field, _, _) = refused(
        "[]",
        "[{path: {type: PathPrefix, value: /a}, headers: [{name: x-a, type: RegularExpression, value: \"\\\\p{Greek}\"}]}]",
    );
    assert_eq!(field, "spec.rules[0].matches[0].headers[0].value");
    let (field, _, _) = refused(
        "[]",
        "[{path: {type: PathPrefix, value: /a}, queryParams: [{name: q, type: RegularExpression, value: \"[\"}]}]",
    );
    assert_eq!(field, "spec.rules[0].matches[0].queryParams[0].value");
}

#[test]
fn a_method_or_header_name_that_is_not_a_token_is_refused() {
    let (field, _, _) = refused(
        "[]",
        "[{path: {type: PathPrefix, value: /a}, method: \"GET POST\"}]",
    );
    assert_eq!(field, "spec.rules[0].matches[0].method");
    let (field, _, _) = refused(
        "[]",
        "[{path: {type: PathPrefix, value: /a}, headers: [{name: \"x a\", value: v}]}]",
    );
    assert_eq!(field, "spec.rules[0].matches[0].headers[0].name");
}

#[test]
fn valid_regexes_and_wildcards_still_resolve() {
    let yaml = format!(
        "{GATEWAY}{}",
        bad_route(
            "[\"*.example.com\"]",
            "[{path: {type: RegularExpression, value: \"/v[0-9]+/.*\"}}]"
        )
    );
    let inputs = inputs(&yaml);
    assert!(
        inputs
            .diagnostics
            .iter()
            .all(|d| d.severity != Severity::Error),
        "{:#?}",
        inputs.diagnostics
    );
}

/// Envoy refuses a regex whose RE2 program is over 100 instructions, and
/// with it the whole route configuration of the listener: every other
/// tenant's route would stop updating. The route is refused alone, here.
#[test]
fn a_regex_over_envoys_re2_program_size_is_refused_alone() {
    let (field, message, names) = refused(
        "[]",
        "[{path: {type: RegularExpression, value: \"/rx/[a-z]{300}\"}}]",
    );
    assert_eq!(field, "spec.rules[0].matches[0].path.value");
    assert_eq!(
        message,
        "regex \"/rx/[a-z]{300}\" compiles to an RE2 program of about 308 instructions; Envoy refuses more than 100"
    );
    assert_eq!(names, vec!["http/shop/good/0".to_string()]);
    // The same in a header's value.
    let (field, _, _) = refused(
        "[]",
        "[{path: {type: PathPrefix, value: /a}, headers: [{name: x-a, type: RegularExpression, value: \"[0-9]{200}\"}]}]",
    );
    assert_eq!(field, "spec.rules[0].matches[0].headers[0].value");
    // At the limit it resolves: /rx/ (4) + 92 ranges + the start (4) = 100.
    let yaml = format!(
        "{GATEWAY}{}",
        bad_route(
            "[]",
            "[{path: {type: RegularExpression, value: \"/rx/[a-z]{92}\"}}]"
        )
    );
    let inputs = inputs(&yaml);
    assert!(
        inputs
            .diagnostics
            .iter()
            .all(|d| d.severity != Severity::Error),
        "{:#?}",
        inputs.diagnostics
    );
}

/// Envoy's `RegexMatcher.regex` has `min_len: 1`.
#[test]
fn an_empty_regex_is_refused() {
    let (field, message, _) = refused("[]", "[{path: {type: RegularExpression, value: \"\"}}]");
    assert_eq!(field, "spec.rules[0].matches[0].path.value");
    assert_eq!(message, "the regex is empty");
}
