//! The CRDs (`attache crds`, deploy/crds/) against the resolver: every
//! example policy is valid for both, each bad policy is refused by both, and
//! the committed files are byte for byte what the generator writes.
//!
//! The CRD schema is OpenAPI v3 for Kubernetes; `crds::json_schema`
//! (tests/support/crds.rs) makes it a
//! JSON Schema the `jsonschema` crate checks. Two things differ: unknown
//! fields (Kubernetes prunes them, or refuses them under kubectl's default
//! `--validate=strict`; here `additionalProperties: false` stands for that)
//! and CEL rules (`x-kubernetes-validations`), which only an API server
//! evaluates. For those, the tests check that the rule sits where it should
//! and that the resolver refuses what the rule describes (tests/crds_rules.rs,
//! with the header rules).

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // test helpers fail by panicking
#[path = "support/crds.rs"]
mod crds;
mod support;

use std::path::Path;

use crds::{base_route_policy, crd_files, mutated, Checker, D};
use serde_json::{json, Value};
use support::{attache_ok, scratch, text, workspace};

#[test]
fn deploy_crds_are_byte_for_byte_what_attache_crds_writes() {
    let dir = scratch("crds");
    attache_ok(&["crds", "-o", dir.to_str().unwrap()]);
    let mut written: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    let committed = crd_files();
    let names: Vec<&String> = committed.iter().map(|(n, _)| n).collect();
    assert_eq!(
        names.iter().map(|n| n.as_str()).collect::<Vec<_>>(),
        written.iter().map(|n| n.as_str()).collect::<Vec<_>>(),
        "deploy/crds/ holds other files than `attache crds -o` writes"
    );
    for (name, text_committed) in &committed {
        let fresh = std::fs::read_to_string(dir.join(name)).unwrap();
        assert!(
            *text_committed == fresh,
            "deploy/crds/{name} differs from `attache crds` output; run `attache crds -o deploy/crds/`"
        );
    }
    // The stream on standard output is the same documents.
    let stdout = text(&attache_ok(&["crds"]).stdout);
    let by_kind: Vec<&str> = ["routepolicies", "clusterroutepolicies"]
        .iter()
        .map(|plural| {
            let name = format!("policy.attache.dev_{plural}.yaml");
            committed
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, t)| t.as_str())
                .unwrap()
        })
        .collect();
    assert_eq!(stdout, by_kind.join("---\n"));
}

fn example_policies() -> Vec<(String, Value)> {
    let mut found = Vec::new();
    let mut stack = vec![workspace().join("examples")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                read_policies(&path, &mut found);
            }
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

fn read_policies(path: &Path, out: &mut Vec<(String, Value)>) {
    let text = std::fs::read_to_string(path).unwrap();
    for (i, doc) in serde_yaml_ng::Deserializer::from_str(&text).enumerate() {
        let value: Value = serde::Deserialize::deserialize(doc).unwrap();
        let api = value["apiVersion"].as_str().unwrap_or_default();
        if api.starts_with("policy.attache.dev/") {
            out.push((format!("{} document {}", path.display(), i + 1), value));
        }
    }
}

#[test]
fn every_example_policy_is_valid_for_its_crd_and_the_resolver() {
    let checkers = [
        Checker::new("RoutePolicy"),
        Checker::new("ClusterRoutePolicy"),
    ];
    let policies = example_policies();
    assert!(
        policies.len() >= 5,
        "the examples have policies: {}",
        policies.len()
    );
    for (at, policy) in &policies {
        let checker = checkers.iter().find(|c| policy["kind"] == c.kind).unwrap();
        let errors = checker.schema_errors(policy);
        assert!(errors.is_empty(), "{at}: {errors:#?}");
        assert!(
            checker.resolver_accepts(policy),
            "{at}: the resolver refuses it"
        );
    }
}

#[test]
fn bad_policies_fail_the_schema_and_the_resolver() {
    let checker = Checker::new("RoutePolicy");
    let base = base_route_policy();
    assert!(
        checker.schema_errors(&base).is_empty(),
        "{:?}",
        checker.schema_errors(&base)
    );
    assert!(checker.resolver_accepts(&base));
    let cases: Vec<(&str, String, Value)> = vec![
        (
            "a duration with a fraction",
            format!("{D}/timeouts/request"),
            json!("1.5s"),
        ),
        (
            "a duration without a unit",
            format!("{D}/timeouts/backendRequest"),
            json!("10"),
        ),
        (
            "a number for a duration",
            format!("{D}/retry/backoff"),
            json!(10),
        ),
        (
            "six digits",
            format!("{D}/timeouts/request"),
            json!("100000s"),
        ),
        ("code 600", format!("{D}/retry/codes/1"), json!(600)),
        ("code 399", format!("{D}/retry/codes/0"), json!(399)),
        ("attempts 11", format!("{D}/retry/attempts"), json!(11)),
        ("attempts -1", format!("{D}/retry/attempts"), json!(-1)),
        (
            "an unknown retry trigger",
            format!("{D}/retry/retryOn/0"),
            json!("sometimes"),
        ),
        (
            "header content-length",
            format!("{D}/requestHeaderModifier/set/0/name"),
            json!("content-length"),
        ),
        (
            "header Host",
            format!("{D}/requestHeaderModifier/add/0/name"),
            json!("Host"),
        ),
        (
            "header X-Envoy-Retry-On",
            format!("{D}/requestHeaderModifier/set/0/name"),
            json!("X-Envoy-Retry-On"),
        ),
        (
            "pseudo-header :path",
            format!("{D}/requestHeaderModifier/remove/0"),
            json!(":path"),
        ),
        (
            "a header name with a space",
            format!("{D}/responseHeaderModifier/remove/0"),
            json!("x a"),
        ),
        (
            "a value with 0x01",
            format!("{D}/requestHeaderModifier/set/0/value"),
            json!("a\u{1}b"),
        ),
        (
            "a value with CR LF",
            format!("{D}/requestHeaderModifier/add/0/value"),
            json!("a\r\nx-injected: 1"),
        ),
        (
            "a value with a trailing space",
            format!("{D}/requestHeaderModifier/set/0/value"),
            json!("a "),
        ),
        (
            "a value of 4097 bytes",
            format!("{D}/requestHeaderModifier/set/0/value"),
            json!("v".repeat(4097)),
        ),
        (
            "an unknown field",
            format!("{D}/timeout"),
            json!({"request": "1s"}),
        ),
        (
            "an unknown spec field",
            "/spec/targetRefz".into(),
            json!([]),
        ),
        (
            "a Service target",
            "/spec/targetRefs/0/kind".into(),
            json!("Service"),
        ),
        (
            "a GatewayClass target from a RoutePolicy",
            "/spec/targetRefs/0/kind".into(),
            json!("GatewayClass"),
        ),
        (
            "the core group for an HTTPRoute",
            "/spec/targetRefs/0/group".into(),
            json!(""),
        ),
        (
            "a Namespace target in gateway.networking.k8s.io",
            "/spec/targetRefs/0".into(),
            json!({"group": "gateway.networking.k8s.io", "kind": "Namespace", "name": "shop"}),
        ),
        (
            "a Gateway target without its group",
            "/spec/targetRefs/0".into(),
            json!({"kind": "Gateway", "name": "edge"}),
        ),
        (
            "a sectionName on a Namespace",
            "/spec/targetRefs/0".into(),
            json!({"group": "", "kind": "Namespace", "name": "shop", "sectionName": "x"}),
        ),
    ];
    for (what, pointer, value) in cases {
        let policy = mutated(&base, &pointer, value);
        assert!(
            !checker.schema_errors(&policy).is_empty(),
            "{what}: the schema accepts it"
        );
        assert!(
            !checker.resolver_accepts(&policy),
            "{what}: the resolver accepts it"
        );
    }
}

#[test]
fn cluster_policies_may_target_only_cluster_level_objects() {
    let checker = Checker::new("ClusterRoutePolicy");
    let base = json!({
        "apiVersion": "policy.attache.dev/v1alpha1",
        "kind": "ClusterRoutePolicy",
        "metadata": {"name": "c"},
        "spec": {
            "targetRef": {"group": "gateway.networking.k8s.io", "kind": "GatewayClass", "name": "attache"},
            "override": {"retry": {"attempts": 2}}
        }
    });
    assert!(
        checker.schema_errors(&base).is_empty(),
        "{:?}",
        checker.schema_errors(&base)
    );
    assert!(checker.resolver_accepts(&base));
    let namespace = mutated(
        &base,
        "/spec/targetRef",
        json!({"kind": "Namespace", "name": "shop"}),
    );
    assert!(checker.schema_errors(&namespace).is_empty());
    assert!(checker.resolver_accepts(&namespace));
    for kind in ["Gateway", "HTTPRoute"] {
        let policy = mutated(&base, "/spec/targetRef/kind", json!(kind));
        assert!(!checker.schema_errors(&policy).is_empty(), "{kind}");
        assert!(!checker.resolver_accepts(&policy), "{kind}");
    }
}

/// What the CRD lets through that the resolver refuses (docs/istio.md,
/// "What the CRDs check"): a RoutePolicy's `targetRefs[].namespace` naming
/// another namespace. CEL at the root sees only `metadata.name` and
/// `metadata.generateName`, not the namespace to compare it with.
#[test]
fn a_cross_namespace_target_passes_the_crd_and_the_resolver_refuses_it() {
    let checker = Checker::new("RoutePolicy");
    let base = base_route_policy();
    let same = mutated(&base, "/spec/targetRefs/0/namespace", json!("shop"));
    assert!(checker.schema_errors(&same).is_empty());
    assert!(checker.resolver_accepts(&same));
    let other = mutated(&base, "/spec/targetRefs/0/namespace", json!("billing"));
    assert!(
        checker.schema_errors(&other).is_empty(),
        "the CRD now refuses it: update docs/istio.md"
    );
    assert!(!checker.resolver_accepts(&other));
}
