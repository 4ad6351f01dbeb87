//! A route author cannot make the resolver spend unbounded time or memory
//! (issue 8 defect 5; docs/security.md): delegation depth and the number of
//! entries of one Gateway are bounded, and exceeding them fails fast with a
//! message naming the route chain.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use attache_core::{resolve, ResolveError};
use common::*;

/// `levels` HTTPRoutes `r0 .. r{levels-1}` where each of `rules` rules of
/// route i delegates to route i+1; r0 attaches to Gateway appns/gw. Without
/// a bound this expands to rules^levels entries.
fn diamond(levels: usize, rules: usize) -> String {
    let mut yaml = topology("")
        .split("---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute")
        .next()
        .unwrap()
        .to_string();
    for i in 0..levels {
        let parent = if i == 0 {
            "[{name: gw}]".to_string()
        } else {
            format!(
                "[{{group: gateway.networking.k8s.io, kind: HTTPRoute, name: r{}}}]",
                i - 1
            )
        };
        yaml.push_str(&format!(
            "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: r{i}, namespace: appns}}\nspec:\n  parentRefs: {parent}\n  rules:\n"
        ));
        for j in 0..rules {
            let backend = if i + 1 < levels {
                format!(
                    "{{group: gateway.networking.k8s.io, kind: HTTPRoute, name: r{}}}",
                    i + 1
                )
            } else {
                "{name: svc, port: 80}".to_string()
            };
            yaml.push_str(&format!(
                "  - name: x{j}\n    matches: [{{path: {{type: PathPrefix, value: /}}}}]\n    backendRefs: [{backend}]\n"
            ));
        }
    }
    yaml
}

#[test]
fn the_thirty_level_two_rule_diamond_is_cut_at_the_depth_limit_naming_the_chain() {
    let inputs = inputs(&diamond(30, 2));
    let r = resolve(&inputs, &key("appns/gw")).unwrap();
    let too_deep: Vec<String> = r
        .diagnostics
        .iter()
        .chain(inputs.diagnostics.iter())
        .map(|d| d.to_string())
        .filter(|m| m.contains("delegation deeper than 8 levels"))
        .collect();
    assert_eq!(too_deep.len(), 1, "reported once: {too_deep:#?}");
    assert!(
        too_deep[0].contains(
            "HTTPRoute appns/r0 -> appns/r1 -> appns/r2 -> appns/r3 -> appns/r4 -> appns/r5 -> appns/r6 -> appns/r7 -> appns/r8 -> appns/r9"
        ),
        "{}",
        too_deep[0]
    );
    // Nothing below the cut is served.
    assert!(r.resolution.document.routes.is_empty());
}

#[test]
fn a_chain_within_the_depth_limit_is_served() {
    // r0 .. r8: eight delegation levels below r0, the most allowed.
    let inputs = inputs(&diamond(9, 1));
    let r = resolve(&inputs, &key("appns/gw")).unwrap();
    assert_eq!(names(&r), ["http/appns/r8/x0"]);
    let all: Vec<String> = r.diagnostics.iter().map(|d| d.to_string()).collect();
    assert!(!all.iter().any(|m| m.contains("deeper")), "{all:#?}");
}

#[test]
fn one_level_too_deep_is_refused() {
    let inputs = inputs(&diamond(10, 1));
    let r = resolve(&inputs, &key("appns/gw")).unwrap();
    assert!(names(&r).is_empty(), "{:?}", names(&r));
}

#[test]
fn a_gateway_over_the_entry_limit_fails_naming_the_chain() {
    // 4^5 = 1024 attachment paths within the depth limit.
    let mut inputs = inputs(&diamond(5, 4));
    inputs.limits.max_entries = 1000;
    match resolve(&inputs, &key("appns/gw")) {
        Err(ResolveError::TooManyEntries { limit, chain, .. }) => {
            assert_eq!(limit, 1000);
            assert!(
                chain.starts_with("HTTPRoute appns/r0 -> appns/r1"),
                "{chain}"
            );
        }
        other => panic!(
            "expected TooManyEntries, got {:?}",
            other.map(|r| names(&r).len())
        ),
    }
    // The limit counts every path expanded (that is the work), before the
    // paths that reach the same entry are folded into one.
    inputs.limits.max_entries = 1024;
    let r = resolve(&inputs, &key("appns/gw")).unwrap();
    assert_eq!(
        names(&r),
        [
            "http/appns/r4/x0",
            "http/appns/r4/x1",
            "http/appns/r4/x2",
            "http/appns/r4/x3"
        ]
    );
}

#[test]
fn status_reports_a_gateway_over_its_limit() {
    let mut inputs = inputs(&diamond(5, 4));
    inputs.limits.max_entries = 10;
    let report = attache_core::policy_status(&inputs);
    assert!(
        report
            .diagnostics
            .iter()
            .any(|d| d.to_string().contains("would have more than 10 entries")),
        "{:#?}",
        report.diagnostics
    );
}
