//! The CRDs' header rules and CEL rules against the resolver's: what only
//! an API server's CEL evaluates is refused by the resolver too, and the
//! header name and value patterns say exactly what attache_contract::safety
//! says. (tests/crds.rs: the files, the examples, bad policies.)

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // test helpers fail by panicking
#[path = "support/crds.rs"]
mod crds;
mod support;

use attache_contract::safety;
use crds::{base_route_policy, mutated, Checker, D};
use serde_json::{json, Value};

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
        (
            "a zero back-off",
            "/properties/spec/properties/defaults/properties/retry/properties/backoff",
            "above 0s",
            mutated(
                &base,
                &format!("{D}/retry"),
                json!({"attempts": 2, "backoff": "0ms"}),
            ),
        ),
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
    names.push("x".repeat(safety::MAX_HEADER_NAME_BYTES));
    names.push("x".repeat(safety::MAX_HEADER_NAME_BYTES + 1));
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

/// The CEL rules, evaluated: the base policy passes all of them, and for
/// header names that differ only in case (which the list-map keys let
/// through) the cluster refuses exactly what the resolver refuses.
#[test]
fn the_cluster_refuses_case_insensitive_duplicate_names_as_the_resolver_does() {
    let checker = Checker::new("RoutePolicy");
    let base = base_route_policy();
    assert_eq!(checker.cel_failures(&base), Vec::<String>::new());
    let modifier = format!("{D}/requestHeaderModifier");
    let response = format!("{D}/responseHeaderModifier");
    let set = |names: &[&str]| {
        json!(names
            .iter()
            .map(|n| json!({"name": n, "value": "v"}))
            .collect::<Vec<_>>())
    };
    // (what, pointer, value, both accept?)
    let cases = [
        (
            "X-A and x-a in set",
            format!("{modifier}/set"),
            set(&["X-A", "x-a"]),
            false,
        ),
        (
            "X-B and x-b in add",
            format!("{modifier}/add"),
            set(&["X-B", "x-b"]),
            false,
        ),
        (
            "Server and server in remove",
            format!("{response}/remove"),
            json!(["Server", "server"]),
            false,
        ),
        (
            "three names, two alike",
            format!("{modifier}/set"),
            set(&["x-a", "x-c", "X-c"]),
            false,
        ),
        (
            "distinct names",
            format!("{modifier}/set"),
            set(&["x-a", "x-c", "x-d"]),
            true,
        ),
        (
            "one name, any case",
            format!("{modifier}/set"),
            set(&["X-Tenant"]),
            true,
        ),
    ];
    for (what, pointer, value, accepted) in cases {
        let policy = mutated(&base, &pointer, value);
        assert!(
            checker.schema_errors(&policy).is_empty(),
            "{what}: the JSON Schema part decides it; the CEL rule was meant to"
        );
        assert_eq!(
            checker.cluster_accepts(&policy),
            accepted,
            "{what}: cluster {:?}",
            checker.cel_failures(&policy)
        );
        assert_eq!(
            checker.resolver_accepts(&policy),
            accepted,
            "{what}: resolver"
        );
    }
    // The same name in set and in remove is two lists: both accept it.
    let across = mutated(&base, &format!("{modifier}/remove"), json!(["X-A"]));
    assert!(checker.cluster_accepts(&across));
    assert!(checker.resolver_accepts(&across));
}

/// Every CEL-only case above is refused by the evaluated rules too, not
/// only by the resolver.
#[test]
fn the_cel_only_cases_are_refused_when_evaluated() {
    let checker = Checker::new("RoutePolicy");
    let base = base_route_policy();
    let mut mixed = base.clone();
    mixed["spec"]["timeouts"] = json!({"request": "1s"});
    let mut no_target = base.clone();
    no_target["spec"]["targetRefs"] = json!([]);
    let cases = [
        (
            "a value of 6,000 bytes",
            mutated(
                &base,
                &format!("{D}/requestHeaderModifier/set/0/value"),
                json!("é".repeat(3000)),
            ),
        ),
        ("plain settings beside a stanza", mixed),
        ("no target", no_target),
        (
            "a zero back-off",
            mutated(
                &base,
                &format!("{D}/retry"),
                json!({"attempts": 2, "backoff": "0ms"}),
            ),
        ),
    ];
    for (what, policy) in cases {
        assert!(
            !checker.cel_failures(&policy).is_empty(),
            "{what}: every rule held"
        );
        assert!(
            !checker.resolver_accepts(&policy),
            "{what}: the resolver accepts it"
        );
    }
}

/// `spec.mergeStrategy` (GEP-713, 2025; docs/semantics.md, "Merge
/// strategies"): every value is taken by the evaluated rules and the
/// resolver alike; `None`, an unknown value and a stanza beside the field
/// are refused by both.
#[test]
fn merge_strategy_values_and_exclusions_agree_with_the_resolver() {
    let checker = Checker::new("RoutePolicy");
    let base = base_route_policy();
    let mut opted = base.clone();
    let spec = opted["spec"].as_object_mut().unwrap();
    let defaults = spec.remove("defaults").unwrap();
    spec.extend(defaults.as_object().unwrap().clone());
    for value in attache_core::model::strategy::STRATEGY_VALUES {
        let mut policy = opted.clone();
        policy["spec"]["mergeStrategy"] = json!(value);
        assert_eq!(
            checker.schema_errors(&policy),
            Vec::<String>::new(),
            "{value}"
        );
        assert_eq!(
            checker.cel_failures(&policy),
            Vec::<String>::new(),
            "{value}"
        );
        assert!(checker.resolver_accepts(&policy), "{value}");
    }
    let with = |value: &str| {
        let mut policy = opted.clone();
        policy["spec"]["mergeStrategy"] = json!(value);
        policy
    };
    let mut beside = with("AtomicDefaults");
    beside["spec"]["overrides"] = json!({"timeouts": {"request": "1s"}});
    let cases = [
        ("None", with("None"), "None is not a strategy"),
        ("an unknown value", with("Atomic"), "must be one of"),
        ("a stanza beside it", beside, "stanza beside mergeStrategy"),
    ];
    for (what, policy, message) in cases {
        let failures = checker.cel_failures(&policy);
        assert!(
            failures.iter().any(|f| f.contains(message)),
            "{what}: {failures:?}"
        );
        assert!(checker.schema_errors(&policy).is_empty(), "{what}");
        assert!(
            !checker.resolver_accepts(&policy),
            "{what}: the resolver accepts it"
        );
    }
}
