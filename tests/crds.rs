//! The CRDs (`attache crds`, deploy/crds/) against the resolver: every
//! example policy is valid for both, each bad policy is refused by both, and
//! the committed files are byte for byte what the generator writes.
//!
//! The CRD schema is OpenAPI v3 for Kubernetes; [`json_schema`] makes it a
//! JSON Schema the `jsonschema` crate checks. Two things differ: unknown
//! fields (Kubernetes prunes them, or refuses them under kubectl's default
//! `--validate=strict`; here `additionalProperties: false` stands for that)
//! and CEL rules (`x-kubernetes-validations`), which only an API server
//! evaluates. For those, the tests check that the rule sits where it should
//! and that the resolver refuses what the rule describes.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // test helpers fail by panicking
mod support;

use std::path::Path;

use attache_contract::safety;
use attache_core::source::{Origin, SourceDoc};
use serde_json::{json, Value};
use support::{attache_ok, scratch, text, workspace};

fn crd_files() -> Vec<(String, String)> {
    let dir = workspace().join("deploy/crds");
    let mut files: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("deploy/crds exists")
        .map(|e| {
            let path = e.expect("entry").path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&path).expect("read CRD"))
        })
        .collect();
    files.sort();
    files
}

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

/// The CRD's schema for `kind`, as the committed file has it.
fn crd_schema(kind: &str) -> Value {
    for (_, yaml) in crd_files() {
        let crd: Value = serde_yaml_ng::from_str(&yaml).unwrap();
        if crd["spec"]["names"]["kind"] == kind {
            return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone();
        }
    }
    panic!("no CRD for {kind}");
}

/// OpenAPI v3 (Kubernetes) to JSON Schema: unknown fields refused as
/// strict field validation does, `x-kubernetes-list-type: set` as unique
/// items. Not applied inside anyOf/not branches, which constrain the
/// fields of their parent rather than define an object.
fn json_schema(schema: &Value) -> Value {
    let mut out = schema.clone();
    let Some(object) = out.as_object_mut() else {
        return out;
    };
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        for sub in properties.values_mut() {
            *sub = json_schema(sub);
        }
        if !object.contains_key("x-kubernetes-preserve-unknown-fields") {
            object.insert("additionalProperties".into(), json!(false));
        }
    }
    if let Some(items) = object.get_mut("items") {
        *items = json_schema(items);
    }
    if object.get("x-kubernetes-list-type") == Some(&json!("set")) {
        object.insert("uniqueItems".into(), json!(true));
    }
    out
}

struct Checker {
    kind: &'static str,
    validator: jsonschema::Validator,
    openapi: Value,
}

impl Checker {
    fn new(kind: &'static str) -> Checker {
        let openapi = crd_schema(kind);
        let validator =
            jsonschema::validator_for(&json_schema(&openapi)).expect("a valid JSON Schema");
        Checker {
            kind,
            validator,
            openapi,
        }
    }

    fn schema_errors(&self, policy: &Value) -> Vec<String> {
        self.validator
            .iter_errors(policy)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect()
    }

    fn resolver_accepts(&self, policy: &Value) -> bool {
        assert_eq!(policy["kind"], self.kind);
        let doc = SourceDoc {
            origin: Origin {
                file: "mutated.yaml".into(),
                document: 1,
                item: None,
            },
            value: policy.clone(),
        };
        let inputs = attache_core::parse(&[doc]);
        inputs.policies.len() == 1 && inputs.policies[0].is_valid()
    }
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

/// A RoutePolicy with every setting, valid for both.
fn base_route_policy() -> Value {
    json!({
        "apiVersion": "policy.attache.dev/v1alpha1",
        "kind": "RoutePolicy",
        "metadata": {"name": "p", "namespace": "shop"},
        "spec": {
            "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "r"}],
            "defaults": {
                "timeouts": {"request": "10s", "backendRequest": "1m30s"},
                "retry": {"attempts": 10, "codes": [400, 599], "backoff": "100ms", "retryOn": ["5xx"]},
                "requestHeaderModifier": {"set": [{"name": "X-A", "value": "a b\tc"}], "add": [{"name": "x-b", "value": ""}], "remove": ["x-c"]},
                "responseHeaderModifier": {"remove": ["server"]}
            }
        }
    })
}

fn mutated(base: &Value, pointer: &str, value: Value) -> Value {
    let mut policy = base.clone();
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    let target = policy
        .pointer_mut(parent)
        .unwrap_or_else(|| panic!("{parent}"));
    match target {
        Value::Array(list) => list[key.parse::<usize>().unwrap()] = value,
        Value::Object(map) => {
            map.insert(key.to_string(), value);
        }
        _ => panic!("{pointer}"),
    }
    policy
}

const D: &str = "/spec/defaults";

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

/// The CEL rule at `pointer` (a schema node), by message.
fn cel_rule<'a>(openapi: &'a Value, pointer: &str, message_part: &str) -> &'a str {
    let rules = openapi
        .pointer(&format!("{pointer}/x-kubernetes-validations"))
        .and_then(Value::as_array)
        .unwrap_or_else(|| panic!("no CEL rules at {pointer}"));
    rules
        .iter()
        .find(|r| {
            r["message"]
                .as_str()
                .is_some_and(|m| m.contains(message_part))
        })
        .and_then(|r| r["rule"].as_str())
        .unwrap_or_else(|| panic!("no rule about {message_part:?} at {pointer}"))
}

#[test]
fn what_only_cel_states_is_refused_by_the_resolver() {
    let checker = Checker::new("RoutePolicy");
    let base = base_route_policy();
    let spec = "/properties/spec";
    let modifier = "/properties/spec/properties/defaults/properties/requestHeaderModifier";
    let value = format!("{modifier}/properties/set/items/properties/value");
    // (what, the schema node whose CEL rule refuses it, a word of its message, the policy)
    let mut too_many = base.clone();
    too_many["spec"]["defaults"]["requestHeaderModifier"]["remove"] =
        json!((0..64).map(|i| format!("x-{i}")).collect::<Vec<_>>());
    let mut mixed = base.clone();
    mixed["spec"]["timeouts"] = json!({"request": "1s"});
    let mut both_spellings = base.clone();
    both_spellings["spec"]["default"] = json!({"timeouts": {"request": "1s"}});
    let mut no_target = base.clone();
    no_target["spec"]["targetRefs"] = json!([]);
    let cases = [
        // 3,000 two-byte characters: under maxLength (characters), over the byte limit.
        (
            "a value of 6,000 bytes",
            value.as_str(),
            "bytes",
            mutated(
                &base,
                &format!("{D}/requestHeaderModifier/set/0/value"),
                json!("é".repeat(3000)),
            ),
        ),
        ("65 header operations", modifier, "at most 64", too_many),
        ("plain settings beside a stanza", spec, "mixed", mixed),
        (
            "default and defaults",
            spec,
            "spelled two ways",
            both_spellings,
        ),
        ("no target", spec, "targets nothing", no_target),
    ];
    for (what, pointer, message, policy) in cases {
        let rule = cel_rule(&checker.openapi, pointer, message);
        assert!(
            checker.schema_errors(&policy).is_empty(),
            "{what}: the JSON Schema part refuses it; the CEL rule {rule:?} was meant to"
        );
        assert!(
            !checker.resolver_accepts(&policy),
            "{what}: the resolver accepts it"
        );
    }
    // The limits in the rules are the resolver's own.
    let bytes = cel_rule(&checker.openapi, &value, "bytes");
    assert!(
        bytes.contains(&safety::MAX_HEADER_VALUE_BYTES.to_string()),
        "{bytes}"
    );
    let count = cel_rule(&checker.openapi, modifier, "at most");
    assert!(
        count.ends_with(&format!("<= {}", safety::MAX_HEADER_OPERATIONS)),
        "{count}"
    );
    // And what they allow, the resolver allows: 64 operations, 4,096 bytes.
    let mut at_limit = base.clone();
    at_limit["spec"]["defaults"]["requestHeaderModifier"]["remove"] =
        json!((0..62).map(|i| format!("x-{i}")).collect::<Vec<_>>());
    at_limit["spec"]["defaults"]["requestHeaderModifier"]["set"][0]["value"] =
        json!("é".repeat(2048));
    assert!(checker.schema_errors(&at_limit).is_empty());
    assert!(checker.resolver_accepts(&at_limit));
}

#[test]
fn header_names_and_values_follow_the_safety_rules_exactly() {
    let checker = Checker::new("RoutePolicy");
    let base = base_route_policy();
    let mut names: Vec<String> = [
        "x-request-id",
        "X-Season",
        "cache-control",
        "x-envoyish",
        "x-envoy",
        "x_custom.1~",
        "HOST",
        "hOsT",
        "hosts",
        "x-envoy-",
        "X-ENVOY-A",
        ":authority",
        "",
        "a,b",
        "é",
        "te",
        "TE",
        "tea",
        "trailers",
        "content-length2",
        "`x`",
        "a|b",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for framing in safety::FRAMING_HEADERS {
        names.push(framing.to_string());
        names.push(framing.to_ascii_uppercase());
        names.push(format!("x-{framing}"));
    }
    for name in &names {
        let policy = mutated(
            &base,
            &format!("{D}/requestHeaderModifier/set/0/name"),
            json!(name),
        );
        let schema_ok = checker.schema_errors(&policy).is_empty();
        let rule_ok = safety::check_policy_header_name(name).is_ok();
        assert_eq!(schema_ok, rule_ok, "header name {name:?}");
        assert_eq!(
            checker.resolver_accepts(&policy),
            rule_ok,
            "header name {name:?}"
        );
    }
    let values = [
        "",
        "a",
        "a b",
        "a\tb",
        "\ta",
        "a\t",
        " ",
        "é ü",
        "\u{7f}",
        "a\u{0}b",
        "x\u{1f}",
        "\"quoted\"",
    ];
    for value in values {
        let policy = mutated(
            &base,
            &format!("{D}/requestHeaderModifier/set/0/value"),
            json!(value),
        );
        let schema_ok = checker.schema_errors(&policy).is_empty();
        assert_eq!(
            schema_ok,
            safety::check_header_value(value).is_ok(),
            "header value {value:?}"
        );
        assert_eq!(
            checker.resolver_accepts(&policy),
            schema_ok,
            "header value {value:?}"
        );
    }
}
