//! Hostile input at the data plane (issue 8; docs/security.md): a document
//! that breaks the safety rules never reaches requests, and no client header
//! steers Envoy's router or grows its memory.

use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness::backend::unique_key;
use crate::harness::client;
use crate::harness::stack::Stack;
use crate::hot_reload::{replace_configuration, CONFIG_FAIL};
use crate::internal_clients::CONTROL_HEADERS;
use crate::timeouts::{basics, SLACK};

const REFUSED_WITHIN: Duration = Duration::from_secs(15);

/// The stack's filter document, decoded to schema 1 to edit it the way
/// people read it; [`push_refused`] encodes it back.
fn current_document(stack: &Stack) -> Value {
    let text = std::fs::read_to_string(&stack.ecds).unwrap();
    let ecds: Value = serde_yaml_ng::from_str(&text).unwrap();
    let found = find_configuration(&ecds).expect("a filter configuration in the ECDS file");
    let carried: attache_contract::DataPlaneDocument = serde_json::from_str(found).unwrap();
    serde_json::to_value(carried.decode().unwrap()).unwrap()
}

fn find_configuration(value: &Value) -> Option<&str> {
    match value {
        // The Wasm filter's `configuration`, the dynamic module's `filter_config`.
        Value::Object(map) => ["configuration", "filter_config"]
            .iter()
            .find_map(|key| map.get(*key))
            .and_then(|c| c.get("value"))
            .and_then(Value::as_str)
            .or_else(|| map.values().find_map(find_configuration)),
        Value::Array(items) => items.iter().find_map(find_configuration),
        _ => None,
    }
}

/// Writes the schema-1 `document`, in the data-plane encoding the filter
/// reads (as `attache render` writes it), into the ECDS file in one rename
/// and waits until Envoy reports that the filter refused it.
fn push_refused(stack: &Stack, original_ecds: &str, document: &Value, what: &str) {
    let resolved: attache_contract::Document = serde_json::from_value(document.clone()).unwrap();
    let encoded = attache_contract::DataPlaneDocument::encode(&resolved);
    let mut ecds: Value = serde_yaml_ng::from_str(original_ecds).unwrap();
    assert!(replace_configuration(
        &mut ecds,
        &serde_json::to_string(&encoded).unwrap()
    ));
    let failed_before = stack.envoy.stat(CONFIG_FAIL);
    let tmp = stack.dir().join("hostile.tmp");
    std::fs::write(&tmp, serde_json::to_string(&ecds).unwrap()).unwrap();
    std::fs::rename(&tmp, &stack.ecds).unwrap();
    let started = Instant::now();
    while stack.envoy.stat(CONFIG_FAIL) == failed_before {
        assert!(
            started.elapsed() < REFUSED_WITHIN,
            "{what}: Envoy never reported the document as refused ({CONFIG_FAIL}); log:\n{}",
            stack.envoy.log_tail()
        );
        thread::sleep(Duration::from_millis(50));
    }
}

/// Issue 8 defects 1, 2, 3 and 6 at the data plane: each document is what
/// the old resolver let through. The filter refuses it, and the routes keep
/// the last good configuration (the /headers route keeps its header).
#[test]
fn documents_breaking_the_safety_rules_are_refused_and_the_last_good_one_serves() {
    let stack = Stack::start(&basics());
    let good = stack.get("/headers", &[]);
    assert_eq!(good.status, 200, "{}", good.body);
    let good_headers = good.echoed_header("x-set");
    let hostile: [(&str, Value); 7] = [
        (
            "content-length",
            json!({"set": [{"name": "content-length", "value": "0"}]}),
        ),
        (
            "transfer-encoding",
            json!({"set": [{"name": "transfer-encoding", "value": "chunked"}]}),
        ),
        (
            "host",
            json!({"set": [{"name": "host", "value": "internal-only"}]}),
        ),
        (
            "stream duration",
            json!({"set": [{"name": "x-envoy-upstream-stream-duration-ms", "value": "200"}]}),
        ),
        (
            "alt response",
            json!({"set": [{"name": "x-envoy-upstream-rq-timeout-alt-response", "value": "204"}]}),
        ),
        (
            "control character",
            json!({"set": [{"name": "x-a", "value": "a\u{1}b"}]}),
        ),
        ("DEL", json!({"add": [{"name": "x-a", "value": "a\u{7f}"}]})),
    ];
    let original = current_document(&stack);
    // Each refused document is derived from the good file: what is written
    // holds raw DEL bytes, which a YAML reader refuses to read back.
    let original_ecds = std::fs::read_to_string(&stack.ecds).unwrap();
    for (what, changes) in hostile {
        let mut document = original.clone();
        document["routes"][0]["requestHeaders"] = changes;
        push_refused(&stack, &original_ecds, &document, what);
        let reply = stack.get("/headers", &[]);
        assert_eq!(reply.status, 200, "{what}: {}", reply.body);
        assert_eq!(reply.echoed_header("x-set"), good_headers, "{what}");
    }
    // Defect 6: a billion retries.
    let mut document = original.clone();
    document["routes"][0]["retry"] = json!({"attempts": 1_000_000_000u32, "codes": [503]});
    push_refused(&stack, &original_ecds, &document, "attempts");
    let key = unique_key("bounded");
    let reply = stack.get(
        "/retry",
        &[("x-backend-key", &key), ("x-backend-fail-times", "100")],
    );
    assert_eq!(reply.status, 503, "{}", reply.body);
    assert_eq!(
        stack.backend.attempts(&key),
        3,
        "the fixture's 2 retries, not more"
    );
}

/// The number of stats Envoy's admin lists.
fn stats_count(stack: &Stack) -> usize {
    client::get(&format!("{}/stats", stack.envoy.admin), &[])
        .body
        .lines()
        .count()
}

/// Issue 8 defect 4: each distinct `x-envoy-upstream-alt-stat-name` used to
/// create 8 stats that are never freed (160,000 for 20,000 requests).
#[test]
fn client_alt_stat_names_do_not_grow_envoys_stats() {
    let stack = Stack::start(&basics());
    for _ in 0..20 {
        assert_eq!(stack.get("/plain", &[]).status, 200);
    }
    let before = stats_count(&stack);
    for i in 0..300 {
        let name = format!("tenant-{i}");
        let reply = stack.get("/plain", &[("x-envoy-upstream-alt-stat-name", &name)]);
        assert_eq!(reply.status, 200, "{}", reply.body);
    }
    let after = stats_count(&stack);
    println!("stats: {before} before, {after} after 300 distinct alt stat names");
    assert!(
        after < before + 20,
        "stats grew from {before} to {after}: the client's stat names were obeyed"
    );
}

/// Router control a client might send: Envoy no longer acts on it.
#[test]
fn client_router_control_headers_are_not_acted_on() {
    let stack = Stack::start(&basics());
    // A timeout turned into 204 by the client: still the policy's 504.
    let reply = stack.get(
        "/timeout",
        &[
            ("x-envoy-upstream-rq-timeout-alt-response", "204"),
            ("x-backend-delay-ms", "2000"),
        ],
    );
    assert_eq!(reply.status, 504, "{}", reply.body);
    // A route without a timeout cut short by the client: not cut.
    let started = Instant::now();
    let reply = stack.get(
        "/no-timeout",
        &[
            ("x-envoy-upstream-stream-duration-ms", "100"),
            ("x-backend-delay-ms", "600"),
        ],
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(started.elapsed() >= Duration::from_millis(600));
    assert!(started.elapsed() < Duration::from_millis(600) + SLACK);
}

/// No client-sent control header reaches the backend with the client's value
/// (Envoy may set some of them itself, e.g. x-envoy-expected-rq-timeout-ms).
#[test]
fn no_client_control_header_reaches_the_backend() {
    let stack = Stack::start(&basics());
    let names = CONTROL_HEADERS;
    let sent: Vec<(&str, &str)> = names.iter().map(|n| (*n, "777")).collect();
    let reply = stack.get("/plain", &sent);
    assert_eq!(reply.status, 200, "{}", reply.body);
    for name in names {
        let echoed = reply.echoed_header(name).unwrap_or_default();
        assert!(
            !echoed.iter().any(|v| v == "777"),
            "{name} reached the backend as the client sent it: {echoed:?}"
        );
    }
}
