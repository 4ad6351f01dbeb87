//! GEP-713's (2025) cap of 16 ancestors (docs/status.md): the policy
//! applies under the first 16 in the GEP's order (creationTimestamp, absent
//! first, then group, kind, namespace, name, sectionName) and nowhere else;
//! each left-out one is a warning; the 16th entry names them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use attache_core::status::ANCESTOR_LIMIT_REACHED;
use attache_core::{policy_status, resolve, Severity};
use common::*;

/// 18 routes, r00 oldest; the policy names them newest first.
fn world(extra_route_created: Option<&str>) -> String {
    let mut y = topology("");
    for i in 0..18 {
        y.push_str(&format!(
            "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: r{i:02}, namespace: appns, creationTimestamp: \"2024-01-{:02}T00:00:00Z\"}}\nspec:\n  parentRefs: [{{name: gw}}]\n  hostnames: [r{i:02}.example.com]\n  rules:\n  - backendRefs: [{{name: svc, port: 80}}]\n",
            i + 1
        ));
    }
    if let Some(created) = extra_route_created {
        y.push_str(&format!(
            "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: zz, namespace: appns, creationTimestamp: \"{created}\"}}\nspec:\n  parentRefs: [{{name: gw}}]\n  hostnames: [zz.example.com]\n  rules:\n  - backendRefs: [{{name: svc, port: 80}}]\n"
        ));
    }
    let mut refs: Vec<String> = (0..18)
        .rev()
        .map(|i| {
            format!("  - {{group: gateway.networking.k8s.io, kind: HTTPRoute, name: r{i:02}}}")
        })
        .collect();
    if extra_route_created.is_some() {
        refs.push("  - {group: gateway.networking.k8s.io, kind: HTTPRoute, name: zz}".into());
    }
    y.push_str(&format!(
        "---\napiVersion: policy.attache.dev/v1alpha1\nkind: RoutePolicy\nmetadata: {{name: wide, namespace: appns}}\nspec:\n  targetRefs:\n{}\n  defaults: {{timeouts: {{request: 7s}}}}\n",
        refs.join("\n")
    ));
    y
}

fn with_timeout(yaml: &str) -> Vec<String> {
    let inputs = inputs(yaml);
    let doc = resolve(&inputs, &key("appns/gw"))
        .unwrap()
        .resolution
        .document;
    doc.routes
        .iter()
        .filter(|e| e.settings.timeouts.as_ref().and_then(|t| t.request_ms) == Some(7000))
        .map(|e| e.route_name.clone())
        .collect()
}

#[test]
fn the_policy_applies_under_the_oldest_sixteen_and_names_the_rest() {
    let yaml = world(None);
    let served = with_timeout(&yaml);
    let want: Vec<String> = (0..16).map(|i| format!("r{i:02}")).collect();
    assert_eq!(served, want);
    let inputs = inputs(&yaml);
    let warnings: Vec<String> = inputs
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Warning)
        .map(ToString::to_string)
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].contains("HTTPRoute r16 is left out"),
        "{warnings:?}"
    );
    let report = policy_status(&inputs);
    let ancestors = &report.policies[0].status.ancestors;
    assert_eq!(ancestors.len(), 16);
    assert_eq!(ancestors[0].ancestor_ref.name, "r00");
    let last = ancestors[15].conditions.last().unwrap();
    assert_eq!(last.kind, ANCESTOR_LIMIT_REACHED);
    assert_eq!(
        last.message,
        "at most 16 ancestors (GEP-713); the policy does not apply under: HTTPRoute appns/r16, HTTPRoute appns/r17"
    );
}

#[test]
fn a_newer_target_never_takes_the_policy_from_older_ones() {
    let before = with_timeout(&world(None));
    let after = with_timeout(&world(Some("2025-01-01T00:00:00Z")));
    assert_eq!(before, after);
}

/// A controller that finds 3 entries of other controllers keeps them and
/// counts them: the policy applies under its 13 oldest targets only.
#[test]
fn other_controllers_entries_count_towards_the_sixteen() {
    let mut inputs = inputs(&world(None));
    attache_core::limit_ancestors_with_foreign(&mut inputs, &|_| 3);
    let doc = resolve(&inputs, &key("appns/gw"))
        .unwrap()
        .resolution
        .document;
    let served: Vec<String> = doc
        .routes
        .iter()
        .filter(|e| e.settings.timeouts.as_ref().and_then(|t| t.request_ms) == Some(7000))
        .map(|e| e.route_name.clone())
        .collect();
    let want: Vec<String> = (0..13).map(|i| format!("r{i:02}")).collect();
    assert_eq!(served, want);
    assert_eq!(
        policy_status(&inputs).policies[0].status.ancestors.len(),
        13
    );
}
