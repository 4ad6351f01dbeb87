//! Refused documents: each message names the JSON path and the problem.
//! Value checks are written as schema-1 fixtures and encoded as `attache
//! render` does (the bad entry's settings become `$.profiles[0]`, its route
//! `$.groups[1].routes[0]`); shape errors, which the encoder's types cannot
//! even hold, are written in the data-plane form directly.

use serde_json::json;

use super::*;

/// A fine entry, then `bad` with `extra`, encoded for the filter.
fn with_entry(extra: serde_json::Value) -> String {
    encoded_err(&doc(json!([entry("ok", json!({})), entry("bad", extra)])))
}

/// A data-plane document whose one route uses `profile`, as raw text.
fn with_profile(profile: serde_json::Value) -> String {
    json!({"schemaVersion": 2, "gateway": "g", "profiles": [profile],
        "groups": [{"profile": 0, "routes": [{"name": "http/shop/r/0"}]}]})
    .to_string()
}

#[test]
fn wrong_schema_version() {
    let e = compile_err(r#"{"schemaVersion": 3, "gateway": "g", "groups": []}"#);
    assert_eq!(
        e,
        "$.schemaVersion: schemaVersion 3 is not supported: this filter reads the data-plane schemaVersion 2 as JSON, and schema 3 as its binary table (`attache render ecds` writes either)"
    );
    let e = compile_err(r#"{"gateway": "g", "groups": []}"#);
    assert!(e.starts_with("$: missing field `schemaVersion`"), "{e}");
    // A table of a version this filter does not know.
    let e = CompiledConfig::from_bytes(b"AT\x04\x00rest")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("$.schemaVersion: schemaVersion 4 is not supported"),
        "{e}"
    );
}

#[test]
fn retry_code_outside_400_599() {
    let e = with_entry(json!({"retry": {"codes": [503, 302]}}));
    assert_eq!(
        e,
        "$.profiles[0].retry.codes[1]: status code 302 cannot be retried: expected 400-599"
    );
}

#[test]
fn wrong_type_names_the_field() {
    let e = compile_err(&with_profile(json!({"timeouts": {"requestMs": "10s"}})));
    assert!(
        e.starts_with("$.profiles[0].timeouts.requestMs: invalid type: string \"10s\""),
        "{e}"
    );
    let e = compile_err(
        r#"{"schemaVersion": 2, "gateway": "g", "groups": [{"routes": [{"name": 7}]}]}"#,
    );
    assert!(
        e.starts_with("$.groups[0].routes[0].name: invalid type: integer `7`"),
        "{e}"
    );
}

#[test]
fn missing_required_field_names_its_parent() {
    let e = compile_err(r#"{"schemaVersion": 2, "groups": []}"#);
    assert!(e.starts_with("$: missing field `gateway`"), "{e}");
    let e = compile_err(r#"{"schemaVersion": 2, "gateway": "g", "groups": [{}]}"#);
    assert!(e.starts_with("$.groups[0]: missing field `routes`"), "{e}");
}

#[test]
fn fractional_number_where_an_integer_belongs() {
    let e = compile_err(&with_profile(json!({"retry": {"attempts": 1.5}})));
    assert!(
        e.starts_with("$.profiles[0].retry.attempts: invalid type: floating point `1.5`"),
        "{e}"
    );
    let e = compile_err(
        r#"{"schemaVersion": 2, "gateway": "g", "groups": [{"profile": 0.5, "routes": []}]}"#,
    );
    assert!(e.starts_with("$.groups[0].profile: invalid type"), "{e}");
}

#[test]
fn header_name_and_value_checks() {
    let e = with_entry(json!({"requestHeaders": {"set": [{"name": "bad name", "value": "v"}]}}));
    assert!(
        e.starts_with(
            "$.profiles[0].requestHeaders.set[0].name: \"bad name\" is not a valid HTTP header name"
        ),
        "{e}"
    );
    let e =
        with_entry(json!({"responseHeaders": {"add": [{"name": "x", "value": "a\r\nx-evil: 1"}]}}));
    assert_eq!(e, "$.profiles[0].responseHeaders.add[0].value: header value contains the control character 0x0D at byte 1");
    let e = with_entry(json!({"responseHeaders": {"remove": ["ok", ":status"]}}));
    assert!(
        e.starts_with("$.profiles[0].responseHeaders.remove[1]: \":status\""),
        "{e}"
    );
}

/// Matches stay on the route: the bad entry, with no settings, shares the
/// fine entry's group.
#[test]
fn regexes_must_compile() {
    let e = with_entry(
        json!({"matches": [{}, {"path": {"type": "RegularExpression", "value": "/a("}}]}),
    );
    assert!(
        e.starts_with(
            "$.groups[0].routes[1].matches[1].path.value: regular expression does not compile"
        ),
        "{e}"
    );
    let e = with_entry(
        json!({"matches": [{"queryParams": [{"name": "q", "type": "RegularExpression", "value": "[z-a]"}]}]}),
    );
    assert!(
        e.starts_with("$.groups[0].routes[1].matches[0].queryParams[0].value: regular expression"),
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
        encoded_err(&d),
        "$.groups[0].routes[2].name: route name \"a\" is already used by $.groups[0].routes[0]; names must be unique"
    );
}

#[test]
fn other_invalid_values_name_their_fields() {
    let cases = [
        (
            json!({"hostnames": ["ok.example.com", "bad host"]}),
            "$.groups[1].hostnames[1]: ",
        ),
        (
            json!({"matches": [{"path": {"type": "Exact", "value": "no-slash"}}]}),
            "$.groups[0].routes[1].matches[0].path.value: ",
        ),
        (
            json!({"matches": [{"method": "GE T"}]}),
            "$.groups[0].routes[1].matches[0].method: ",
        ),
        (
            json!({"matches": [{"headers": [{"name": "a:b", "value": "1"}]}]}),
            "$.groups[0].routes[1].matches[0].headers[0].name: ",
        ),
        (
            json!({"retry": {"retryOn": ["5xx", "reset,connect-failure"]}}),
            "$.profiles[0].retry.retryOn[1]: ",
        ),
    ];
    for (extra, prefix) in cases {
        let e = with_entry(extra);
        assert!(e.starts_with(prefix), "expected {prefix:?}, got {e:?}");
    }
    let glob = r#"{"schemaVersion": 2, "gateway": "g", "groups": [{"routes": [
        {"name": "r", "matches": [{"path": {"type": "Glob", "value": "/x"}}]}]}]}"#;
    let e = compile_err(glob);
    assert!(
        e.starts_with("$.groups[0].routes[0].matches[0].path.type: unknown variant `Glob`"),
        "{e}"
    );
}

#[test]
fn not_json_and_empty() {
    assert!(compile_err("{\"schemaVersion\": 2,")
        .starts_with("configuration is not JSON (line 1, column"));
    assert_eq!(
        compile_err(""),
        "configuration is empty: expected a data-plane JSON document (schemaVersion 2; `attache render ecds` writes one)"
    );
    let e = compile_err("42");
    assert!(
        e.starts_with("$: invalid type: integer `42`, expected struct DataPlaneDocument"),
        "{e}"
    );
    // serde reads a struct from an array positionally; the path stays readable.
    let e = compile_err("[2, 2]");
    assert!(e.starts_with("$[1]: invalid type: integer `2`"), "{e}");
}

#[test]
fn unknown_fields_are_ignored_everywhere() {
    let d = json!({"schemaVersion": 2, "gateway": "g", "future": {"x": [1, 2]},
        "options": {"trustClientControlHeaders": false, "newOption": 1},
        "profiles": [{"newField": true, "timeouts": {"requestMs": 7, "idleMs": 3},
            "retry": {"codes": [503], "jitter": "2ms"}}],
        "groups": [{"profile": 0, "weight": 3, "routes": [{"name": "r", "newField": true,
            "matches": [{"path": {"type": "Exact", "value": "/r", "caseInsensitive": true}, "extra": 1}]}]}]});
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
    let raw = r#"{"schemaVersion": 2.0, "gateway": "istio-system/gw",
        "profiles": [{"timeouts": {"requestMs": 10000.0, "backendRequestMs": 2e3},
            "retry": {"attempts": 3.0, "codes": [503.0, 504.0], "backoffMs": 100.0}}],
        "groups": [{"profile": 0.0, "routes": [{"name": "r"}]}]}"#;
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
    let inner = filter_bytes(&doc(json!([entry(
        "r",
        json!({"timeouts": {"requestMs": 9}})
    )])));
    let outer = serde_json::to_string(&String::from_utf8(inner).unwrap()).unwrap();
    let c = Rc::new(CompiledConfig::from_bytes(outer.as_bytes()).unwrap());
    let mut host = FakeHost::request("h", "/", &[]).with_route_name("r");
    request(&c, &mut host);
    assert_eq!(
        host.request_values("x-envoy-upstream-rq-timeout-ms"),
        vec!["9"]
    );
    // Unwrapped once only: a string inside a string is a shape error.
    let twice = serde_json::to_string(&outer).unwrap();
    assert!(compile_err(&twice).starts_with("$: invalid type: string"));
}

#[test]
fn negative_and_overflowing_numbers_are_refused() {
    let e = compile_err(&with_profile(json!({"timeouts": {"requestMs": -1.0}})));
    assert!(
        e.starts_with("$.profiles[0].timeouts.requestMs: invalid value: integer `-1`"),
        "{e}"
    );
    let e = compile_err(&with_profile(json!({"retry": {"codes": [70000]}})));
    assert!(
        e.starts_with("$.profiles[0].retry.codes[0]: invalid value"),
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
        let e = with_entry(settings.clone());
        assert!(
            e.starts_with(&format!("$.profiles[0].{field}: ")) && e.contains(says),
            "{settings}: {e}"
        );
    }
    let many: Vec<String> = (0..65).map(|i| format!("x-h{i}")).collect();
    let e = with_entry(json!({"requestHeaders": {"remove": many}}));
    assert_eq!(
        e,
        "$.profiles[0].requestHeaders: 65 header operations, over the limit of 64"
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
        let doc = doc(json!([
            entry("ok", json!({})),
            entry("bad", settings.clone())
        ]));
        assert!(
            CompiledConfig::from_bytes(&filter_bytes(&doc)).is_ok(),
            "{settings}"
        );
    }
}
