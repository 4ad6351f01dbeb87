//! Listener names are Gateway API `SectionName`s. The renderer turns them
//! into file names (`rds/<listener>/routes.json`), so a name such as
//! `../../escaped` must be refused here, naming file, document, object and
//! field, and its Gateway dropped like any Gateway with a bad listener.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;

fn gateway(name: &str, listener: &str) -> String {
    format!(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {{name: {name}, namespace: appns}}\nspec:\n  gatewayClassName: gc\n  listeners:\n  - {{name: {listener:?}, port: 80, protocol: HTTP}}\n"
    )
}

fn yaml(listener: &str) -> String {
    format!(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {{name: gc}}\n---\n{}---\n{}",
        gateway("bad", listener),
        gateway("good", "http")
    )
}

fn errors(listener: &str) -> Vec<String> {
    inputs(&yaml(listener))
        .diagnostics
        .iter()
        .map(|d| format!("{}: {d}", d.severity))
        .collect()
}

#[test]
fn a_path_traversal_listener_name_is_an_error_and_drops_its_gateway_only() {
    let inputs = inputs(&yaml("../../escaped"));
    let all: Vec<String> = inputs
        .diagnostics
        .iter()
        .map(|d| format!("{}: {d}", d.severity))
        .collect();
    assert_eq!(all.len(), 1, "{all:#?}");
    let message = &all[0];
    assert!(
        message.starts_with(
            "error: test.yaml (document 2) Gateway appns/bad: spec.listeners[0].name: listener name \"../../escaped\" is not a Gateway API SectionName"
        ),
        "{message}"
    );
    assert!(message.contains("RFC 1123 subdomain"), "hint: {message}");
    assert!(!inputs.gateways.contains_key(&key("appns/bad")));
    assert!(inputs.gateways.contains_key(&key("appns/good")));
}

#[test]
fn names_outside_the_section_name_pattern_are_refused() {
    let too_long = "a".repeat(254);
    for bad in [
        "",
        ".",
        "..",
        "a/b",
        "a\\b",
        "a\0b",
        "HTTP",
        "a_b",
        "-a",
        "a-",
        "a.",
        ".a",
        "a..b",
        too_long.as_str(),
    ] {
        let all = errors(bad);
        assert_eq!(all.len(), 1, "{bad:?}: {all:#?}");
        assert!(
            all[0].contains("spec.listeners[0].name"),
            "{bad:?}: {all:?}"
        );
    }
}

#[test]
fn names_inside_the_section_name_pattern_are_kept() {
    let longest = format!("{}.{}", "a".repeat(126), "b".repeat(126));
    assert_eq!(longest.len(), 253);
    for good in [
        "http",
        "a",
        "0",
        "api-v1",
        "api.example.com",
        longest.as_str(),
    ] {
        let inputs = inputs(&yaml(good));
        assert!(
            inputs.diagnostics.is_empty(),
            "{good:?}: {:?}",
            inputs.diagnostics
        );
        assert!(inputs.gateways.contains_key(&key("appns/bad")), "{good:?}");
    }
}
