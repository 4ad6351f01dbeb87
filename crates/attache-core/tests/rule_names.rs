//! Rule names and entry names: an all-digit rule `name` would share its entry
//! name (`<listener>/<ns>/<route>/<rule>`) and istiod's route name
//! (`<ns>.<route>.<index>`) with another rule's index, and so its policies.

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
"#;

/// Route `shop/<name>` with two rules: the first named `first_name` on
/// `/a`, the second unnamed on `/b`.
fn route(name: &str, first_name: &str) -> String {
    format!(
        r#"---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: {name}, namespace: shop}}
spec:
  parentRefs: [{{name: edge}}]
  rules:
  - name: "{first_name}"
    matches: [{{path: {{type: PathPrefix, value: /a}}}}]
    backendRefs: [{{name: svc, port: 80}}]
  - matches: [{{path: {{type: PathPrefix, value: /b}}}}]
    backendRefs: [{{name: svc, port: 80}}]
"#
    )
}

#[test]
fn an_all_digit_rule_name_is_refused_naming_the_field() {
    let yaml = format!("{GATEWAY}{}", route("r", "1"));
    let inputs = inputs(&yaml);
    let errors: Vec<_> = inputs
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .collect();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    let d = errors[0];
    assert_eq!(d.field.as_deref(), Some("spec.rules[0].name"), "{d:#?}");
    assert_eq!(d.object.as_deref(), Some("HTTPRoute shop/r"), "{d:#?}");
    let origin = d.origin.as_ref().unwrap();
    assert_eq!((origin.file.as_str(), origin.document), ("test.yaml", 2));
    assert!(d.message.contains("\"1\" is all digits"), "{}", d.message);
    assert!(d.hint.as_deref().unwrap().contains("letter"), "{d:#?}");
    // The route is dropped whole, as other invalid routes are: no entry
    // takes the other rule's name, and nothing is "also reachable".
    let r = resolve(&inputs, &key("shop/edge")).unwrap();
    assert!(names(&r).is_empty(), "{:?}", names(&r));
    assert!(
        r.diagnostics
            .iter()
            .all(|d| !d.message.contains("reachable")),
        "{:#?}",
        r.diagnostics
    );
}

#[test]
fn only_the_route_with_the_digit_name_is_dropped() {
    let yaml = format!("{GATEWAY}{}{}", route("r", "007"), route("ok", "rule-1"));
    let r = resolve_yaml(&yaml, "shop/edge");
    assert_eq!(names(&r), ["http/shop/ok/rule-1", "http/shop/ok/1"]);
}

#[test]
fn names_with_digits_and_letters_are_kept() {
    for name in ["1a", "a1", "rule-1", "v2"] {
        let yaml = format!("{GATEWAY}{}", route("r", name));
        let inputs = inputs(&yaml);
        assert!(
            inputs.diagnostics.is_empty(),
            "{name}: {:#?}",
            inputs.diagnostics
        );
        let r = resolve(&inputs, &key("shop/edge")).unwrap();
        assert_eq!(
            names(&r),
            [format!("http/shop/r/{name}"), "http/shop/r/1".to_string()]
        );
    }
}

/// Defence in depth: should a colliding name reach the resolver by another
/// way (here, set on the parsed model), it is an error naming both rules, not
/// a warning about a second path to one rule.
#[test]
fn two_rules_with_one_entry_name_are_an_error() {
    let yaml = format!("{GATEWAY}{}", route("r", "a"));
    let mut inputs = inputs(&yaml);
    assert!(inputs.diagnostics.is_empty(), "{:#?}", inputs.diagnostics);
    let r = std::sync::Arc::make_mut(inputs.routes.get_mut(&key("shop/r")).unwrap());
    r.rules[0].name = Some("1".into());
    let resolved = resolve(&inputs, &key("shop/edge")).unwrap();
    let errors: Vec<_> = resolved
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .collect();
    assert_eq!(errors.len(), 1, "{:#?}", resolved.diagnostics);
    assert!(
        errors[0].message.contains(
            "http/shop/r/1 names two rules, HTTPRoute shop/r rule 0 and HTTPRoute shop/r rule 1"
        ),
        "{}",
        errors[0].message
    );
    assert!(resolved
        .diagnostics
        .iter()
        .all(|d| !d.message.contains("reachable")));
    assert_eq!(names(&resolved), ["http/shop/r/1"]);
}
