//! Refused documents: each message names the JSON path and the problem.

use serde_json::json;

use super::*;

fn with_entry(extra: serde_json::Value) -> String {
    doc(json!([entry("ok", json!({})), entry("bad", extra)])).to_string()
}

#[test]
fn wrong_schema_version() {
    let e = compile_err(r#"{"schemaVersion": 3, "gateway": "g", "routes": []}"#);
    assert_eq!(
        e,
        "$.schemaVersion: schemaVersion 3 is not supported: this filter reads schemaVersion 1 and the data-plane schemaVersion 2"
    );
}

#[test]
fn retry_code_outside_400_599() {
    let e = compile_err(&with_entry(json!({"retry": {"codes": [503, 302]}})));
    assert_eq!(
        e,
        "$.routes[1].retry.codes[1]: status code 302 cannot be retried: expected 400-599"
    );
}

#[test]
fn wrong_type_names_the_field() {
    let e = compile_err(&with_entry(json!({"timeouts": {"requestMs": "10s"}})));
    assert!(
        e.starts_with("$.routes[1].timeouts.requestMs: invalid type: string \"10s\""),
        "{e}"
    );
}

#[test]
fn missing_required_field_names_its_parent() {
    let e = compile_err(r#"{"schemaVersion": 1, "routes": []}"#);
    assert!(e.starts_with("$: missing field `gateway`"), "{e}");
}

#[test]
fn fractional_number_where_an_integer_belongs() {
    let e = compile_err(&with_entry(json!({"retry": {"attempts": 1.5}})));
    assert!(
        e.starts_with("$.routes[1].retry.attempts: invalid type: floating point `1.5`"),
        "{e}"
    );
}

#[test]
fn header_name_and_value_checks() {
    let e = compile_err(&with_entry(
        json!({"requestHeaders": {"set": [{"name": "bad name", "value": "v"}]}}),
    ));
    assert!(
        e.starts_with(
            "$.routes[1].requestHeaders.set[0].name: \"bad name\" is not a valid HTTP header name"
        ),
        "{e}"
    );
    let e = compile_err(&with_entry(
        json!({"responseHeaders": {"add": [{"name": "x", "value": "a\r\nx-evil: 1"}]}}),
    ));
    assert_eq!(e, "$.routes[1].responseHeaders.add[0].value: header value contains the control character 0x0D at byte 1");
    let e = compile_err(&with_entry(
        json!({"responseHeaders": {"remove": ["ok", ":status"]}}),
    ));
    assert!(
        e.starts_with("$.routes[1].responseHeaders.remove[1]: \":status\""),
        "{e}"
    );
}

#[test]
fn regexes_must_compile() {
    let e = compile_err(&with_entry(
        json!({"matches": [{}, {"path": {"type": "RegularExpression", "value": "/a("}}]}),
    ));
    assert!(
        e.starts_with("$.routes[1].matches[1].path.value: regular expression does not compile"),
        "{e}"
    );
    let e = compile_err(&with_entry(
        json!({"matches": [{"queryParams": [{"name": "q", "type": "RegularExpression", "value": "[z-a]"}]}]}),
    ));
    assert!(
        e.starts_with("$.routes[1].matches[0].queryParams[0].value: regular expression"),
        "{e}"
    );
}

#[test]
fn duplicate_route_names() {
    let d = doc(json!([
        entry("a", json!({})),
        entry("b", json!({})),
        entry("a", json!({}))
    ]));
    assert_eq!(
        compile_err(&d.to_string()),
        "$.routes[2].name: route name \"a\" is already used by routes[0]; names must be unique"
    );
}

#[test]
fn other_invalid_values_name_their_fields() {
    let cases = [
        (
            json!({"hostnames": ["ok.example.com", "bad host"]}),
            "$.routes[1].hostnames[1]: ",
        ),
        (
            json!({"matches": [{"path": {"type": "Exact", "value": "no-slash"}}]}),
            "$.routes[1].matches[0].path.value: ",
        ),
        (
            json!({"matches": [{"method": "GE T"}]}),
            "$.routes[1].matches[0].method: ",
        ),
        (
            json!({"matches": [{"headers": [{"name": "a:b", "value": "1"}]}]}),
            "$.routes[1].matches[0].headers[0].name: ",
        ),
        (
            json!({"retry": {"retryOn": ["5xx", "reset,connect-failure"]}}),
            "$.routes[1].retry.retryOn[1]: ",
        ),
        (
            json!({"matches": [{"path": {"type": "Glob", "value": "/x"}}]}),
            "$.routes[1].matches[0].path.type: unknown variant `Glob`",
        ),
    ];
    for (extra, prefix) in cases {
        let e = compile_err(&with_entry(extra));
        assert!(e.starts_with(prefix), "expected {prefix:?}, got {e:?}");
    }
}

#[test]
fn not_json_and_empty() {
    assert!(compile_err("{\"schemaVersion\": 1,")
        .starts_with("configuration is not JSON (line 1, column"));
    assert_eq!(
        compile_err(""),
        "configuration is empty: expected a schema-1 JSON document"
    );
    let e = compile_err("42");
    assert!(
        e.starts_with("$: invalid type: integer `42`, expected struct Document"),
        "{e}"
    );
    // serde reads a struct from an array positionally; the path stays readable.
    let e = compile_err("[1, 2]");
    assert!(e.starts_with("$[1]: invalid type: integer `2`"), "{e}");
}

#[test]
fn unknown_fields_are_ignored_everywhere() {
    let d = json!({"schemaVersion": 1, "gateway": "g", "future": {"x": [1, 2]},
        "options": {"trustClientControlHeaders": false, "newOption": 1},
        "routes": [entry("r", json!({"newField": true, "timeouts": {"requestMs": 7, "idleMs": 3},
            "retry": {"codes": [503], "jitter": "2ms"},
            "matches": [{"path": {"type": "Exact", "value": "/r", "caseInsensitive": true}, "extra": 1}]}))]});
    let c = compile(&d);
    let mut host = FakeHost::request("h", "/r", &[]);
    assert_eq!(routed(&c, &mut host).as_deref(), Some("r"));
    assert_eq!(
        host.request_values("x-envoy-upstream-rq-timeout-ms"),
        vec!["7"]
    );
}

#[test]
fn istio_struct_doubles_are_accepted_as_integers() {
    // What Istio hands over for a WasmPlugin.pluginConfig struct: every
    // number a double, objects instead of a string.
    let raw = r#"{"schemaVersion": 1.0, "gateway": "istio-system/gw", "routes": [
        {"name": "r", "listener": "http", "routeNamespace": "shop", "routeName": "r", "rule": "0",
         "timeouts": {"requestMs": 10000.0, "backendRequestMs": 2e3},
         "retry": {"attempts": 3.0, "codes": [503.0, 504.0], "backoffMs": 100.0}}]}"#;
    let c = CompiledConfig::from_bytes(raw.as_bytes()).unwrap();
    let c = Rc::new(c);
    let mut host = FakeHost::request("h", "/", &[]).with_route_name("r");
    request(&c, &mut host);
    assert_eq!(
        host.request_values("x-envoy-upstream-rq-timeout-ms"),
        vec!["10000"]
    );
    assert_eq!(
        host.request_values("x-envoy-upstream-rq-per-try-timeout-ms"),
        vec!["2000"]
    );
    assert_eq!(host.request_values("x-envoy-max-retries"), vec!["3"]);
    assert_eq!(
        host.request_values("x-envoy-retriable-status-codes"),
        vec!["503,504"]
    );
}

#[test]
fn a_document_inside_a_json_string_is_accepted() {
    let inner = doc(json!([entry("r", json!({"timeouts": {"requestMs": 9}}))])).to_string();
    let outer = serde_json::to_string(&inner).unwrap();
    let c = Rc::new(CompiledConfig::from_bytes(outer.as_bytes()).unwrap());
    let mut host = FakeHost::request("h", "/", &[]).with_route_name("r");
    request(&c, &mut host);
    assert_eq!(
        host.request_values("x-envoy-upstream-rq-timeout-ms"),
        vec!["9"]
    );
}

#[test]
fn negative_and_overflowing_numbers_are_refused() {
    let e = compile_err(&with_entry(json!({"timeouts": {"requestMs": -1.0}})));
    assert!(
        e.starts_with("$.routes[1].timeouts.requestMs: invalid value: integer `-1`"),
        "{e}"
    );
    let e = compile_err(&with_entry(json!({"retry": {"codes": [70000]}})));
    assert!(
        e.starts_with("$.routes[1].retry.codes[0]: invalid value"),
        "{e}"
    );
}

/// The filter refuses what the resolver refuses (docs/security.md): both
/// call `attache_contract::safety`, and this table is the one
/// `crates/attache-core/tests/safety_rules.rs` checks at the resolver.
#[test]
fn documents_breaking_the_safety_rules_are_refused_at_their_path() {
    let cases = [
        (
            json!({"requestHeaders": {"set": [{"name": "content-length", "value": "0"}]}}),
            "requestHeaders.set[0].name",
            "request smuggling",
        ),
        (
            json!({"requestHeaders": {"set": [{"name": "Transfer-Encoding", "value": "chunked"}]}}),
            "requestHeaders.set[0].name",
            "request smuggling",
        ),
        (
            json!({"requestHeaders": {"add": [{"name": "host", "value": "internal-only"}]}}),
            "requestHeaders.add[0].name",
            "re-route",
        ),
        (
            json!({"responseHeaders": {"set": [{"name": "content-length", "value": "5"}]}}),
            "responseHeaders.set[0].name",
            "request smuggling",
        ),
        (
            json!({"requestHeaders": {"remove": ["connection"]}}),
            "requestHeaders.remove[0]",
            "hop-by-hop",
        ),
        (
            json!({"requestHeaders": {"set": [{"name": "x-envoy-upstream-stream-duration-ms", "value": "200"}]}}),
            "requestHeaders.set[0].name",
            "router control",
        ),
        (
            json!({"requestHeaders": {"set": [{"name": "x-envoy-hedge-on-per-try-timeout", "value": "true"}]}}),
            "requestHeaders.set[0].name",
            "router control",
        ),
        (
            json!({"requestHeaders": {"set": [{"name": "x-a", "value": "a\u{1}b"}]}}),
            "requestHeaders.set[0].value",
            "0x01",
        ),
        (
            json!({"requestHeaders": {"set": [{"name": "x-a", "value": "ab\u{7f}"}]}}),
            "requestHeaders.set[0].value",
            "0x7F",
        ),
        (
            json!({"requestHeaders": {"set": [{"name": "x-a", "value": " padded"}]}}),
            "requestHeaders.set[0].value",
            "whitespace",
        ),
        (
            json!({"requestHeaders": {"set": [{"name": "x-a", "value": "v".repeat(4097)}]}}),
            "requestHeaders.set[0].value",
            "over the limit of 4096",
        ),
        (
            json!({"retry": {"attempts": 1_000_000_000u32}}),
            "retry.attempts",
            "over the limit of 10",
        ),
        (
            json!({"retry": {"attempts": 11}}),
            "retry.attempts",
            "11 retry attempts",
        ),
    ];
    for (settings, field, says) in cases {
        let e = compile_err(&with_entry(settings.clone()));
        assert!(
            e.starts_with(&format!("$.routes[1].{field}: ")) && e.contains(says),
            "{settings}: {e}"
        );
    }
    let many: Vec<String> = (0..65).map(|i| format!("x-h{i}")).collect();
    let e = compile_err(&with_entry(json!({"requestHeaders": {"remove": many}})));
    assert_eq!(
        e,
        "$.routes[1].requestHeaders: 65 header operations, over the limit of 64"
    );
}

#[test]
fn the_limits_themselves_are_allowed() {
    let many: Vec<String> = (0..64).map(|i| format!("x-h{i}")).collect();
    for settings in [
        json!({"retry": {"attempts": 10}}),
        json!({"requestHeaders": {"remove": many}}),
        json!({"requestHeaders": {"set": [{"name": "x-a", "value": "tab\tinside"}]}}),
    ] {
        let doc = with_entry(settings.clone());
        assert!(
            CompiledConfig::from_bytes(doc.as_bytes()).is_ok(),
            "{settings}"
        );
    }
}
