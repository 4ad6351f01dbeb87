//! Who applies a rule's own header filters (docs/semantics.md, "Who applies
//! what"): under Istio, istiod does, so the document leaves out what only
//! the rule supplies and keeps what a policy supplies; a policy header the
//! rule also names is a warning, since the route's filter runs after the
//! Attaché filter.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use attache_core::contract::RouteEntry;
use attache_core::{resolve_for, DataPlane, Severity};
use common::*;

const OWN_FILTER: &str = "    filters:
    - type: RequestHeaderModifier
      requestHeaderModifier:
        add: [{name: x-own-add, value: \"1\"}]
        set: [{name: x-clash, value: route}]
        remove: [x-own-remove]
    - type: ResponseHeaderModifier
      responseHeaderModifier:
        add: [{name: x-own-response, value: \"1\"}]
    timeouts: {request: 9s}";

fn yaml() -> String {
    topology(OWN_FILTER)
        + &policy(
            "platform",
            At::Gateway,
            "overrides: {requestHeaderModifier: {set: [{name: x-clash, value: policy}, {name: x-policy, value: p}]}}",
            None,
            None,
        )
}

fn names(changes: Option<&attache_core::contract::HeaderChanges>) -> Vec<String> {
    let Some(c) = changes else { return Vec::new() };
    let mut all: Vec<String> = c.set.iter().chain(&c.add).map(|h| h.name.clone()).collect();
    all.extend(c.remove.iter().cloned());
    all.sort();
    all
}

fn entry_for(data_plane: DataPlane) -> (RouteEntry, Vec<attache_core::Diagnostic>) {
    let inputs = inputs(&yaml());
    let resolved = resolve_for(&inputs, &key("appns/gw"), data_plane).unwrap();
    let entry = resolved.resolution.document.routes[0].clone();
    (entry, resolved.diagnostics)
}

#[test]
fn plain_envoy_documents_carry_the_rules_own_filters() {
    let (entry, diagnostics) = entry_for(DataPlane::Envoy);
    assert_eq!(
        names(entry.settings.request_headers.as_ref()),
        ["x-clash", "x-own-add", "x-own-remove", "x-policy"]
    );
    assert_eq!(
        names(entry.settings.response_headers.as_ref()),
        ["x-own-response"]
    );
    assert!(diagnostics.iter().all(|d| d.severity != Severity::Warning));
}

#[test]
fn istio_documents_leave_the_rules_own_filters_to_istiod_and_keep_policies() {
    let (entry, _) = entry_for(DataPlane::Istio);
    // x-clash stays: the policy's override won it, not the rule.
    assert_eq!(
        names(entry.settings.request_headers.as_ref()),
        ["x-clash", "x-policy"]
    );
    assert_eq!(set_header(&entry, "x-clash").as_deref(), Some("policy"));
    assert!(entry.settings.response_headers.is_none(), "{entry:?}");
    // Timeouts stay: the filter's header replaces the route's value.
    assert_eq!(request_ms(&entry), Some(9000));
    assert!(!entry.sources.contains_key("requestHeaders.add.x-own-add"));
}

#[test]
fn a_policy_header_the_rule_also_names_is_a_warning_under_istio() {
    let (_, diagnostics) = entry_for(DataPlane::Istio);
    let warnings: Vec<String> = diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Warning)
        .map(|d| d.to_string())
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("request header x-clash"),
        "{}",
        warnings[0]
    );
    assert!(
        warnings[0].contains("spec.rules[0].filters"),
        "{}",
        warnings[0]
    );
    assert!(!warnings[0].contains("x-policy"), "{}", warnings[0]);
}
