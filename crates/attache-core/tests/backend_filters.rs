//! `backendRefs[].filters`: read with the same rules as a rule's own
//! filters, kept per backend, never dropped silently.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use attache_core::{resolve, Severity};
use common::*;

/// The fixture's route with `backend_refs` (YAML list items, indented as
/// rule fields) in place of its one backendRef.
fn with_backend_refs(backend_refs: &str) -> String {
    topology("").replace(
        "    backendRefs: [{name: svc, port: 80}]\n",
        &format!("    backendRefs:\n{backend_refs}"),
    )
}

#[test]
fn header_filters_stay_with_their_backend() {
    let yaml = with_backend_refs(
        "    - name: a\n      port: 80\n      filters:\n      - type: RequestHeaderModifier\n        requestHeaderModifier: {set: [{name: X-Via, value: a}], remove: [x-old]}\n    - name: b\n      port: 80\n",
    );
    let resolved = resolve_yaml(&yaml, "appns/gw");
    let backends = &resolved.resolution.backends[ENTRY];
    assert_eq!(backends.len(), 2);
    let a = backends[0].request_headers.as_ref().expect("a's filter");
    assert_eq!(
        (a.set[0].name.as_str(), a.set[0].value.as_str()),
        ("x-via", "a")
    );
    assert_eq!(a.remove, ["x-old"]);
    assert!(backends[1].request_headers.is_none());
    // The rule's own settings are not touched by a backend's filter.
    assert!(entry(&resolved, ENTRY).settings.request_headers.is_none());
}

#[test]
fn other_filter_types_on_a_backend_are_noted_where_they_sit() {
    let yaml = with_backend_refs(
        "    - name: a\n      port: 80\n      filters:\n      - type: RequestMirror\n        requestMirror: {backendRef: {name: shadow, port: 80}}\n",
    );
    let inputs = inputs(&yaml);
    let note = inputs
        .diagnostics
        .iter()
        .find(|d| d.to_string().contains("RequestMirror"))
        .expect("a note for the mirror filter");
    assert_eq!(note.severity, Severity::Note);
    assert!(
        note.to_string()
            .contains("spec.rules[0].backendRefs[0].filters[0].type"),
        "{note}"
    );
    assert!(resolve(&inputs, &key("appns/gw")).is_ok());
}

#[test]
fn a_backend_filter_breaking_the_header_rules_drops_the_route_with_its_path() {
    let yaml = with_backend_refs(
        "    - name: a\n      port: 80\n      filters:\n      - type: RequestHeaderModifier\n        requestHeaderModifier: {set: [{name: x-envoy-max-retries, value: \"9\"}]}\n",
    );
    let inputs = inputs(&yaml);
    let error = inputs
        .diagnostics
        .iter()
        .find(|d| d.severity == Severity::Error)
        .expect("an error");
    assert!(
        error
            .to_string()
            .contains("spec.rules[0].backendRefs[0].filters[0].requestHeaderModifier"),
        "{error}"
    );
    let resolved = resolve(&inputs, &key("appns/gw")).unwrap();
    assert!(
        resolved.resolution.document.routes.is_empty(),
        "the route is dropped"
    );
}
