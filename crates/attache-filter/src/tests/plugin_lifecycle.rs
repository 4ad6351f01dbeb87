use serde_json::json;

use super::*;
use crate::host::{Counter, LogLevel};
use crate::plugin::{fingerprint, Generations, Plugin};

fn good(ms: u64) -> Vec<u8> {
    filter_bytes(&doc(json!([entry(
        "r",
        json!({"timeouts": {"requestMs": ms}})
    )])))
}

/// The error log lines, text only.
fn error_lines(host: &FakeHost) -> Vec<String> {
    let lines = host.log_lines().into_iter();
    lines
        .filter(|(l, _)| *l == LogLevel::Error)
        .map(|(_, text)| text)
        .collect()
}

fn timeout_seen(plugin: &Plugin) -> Vec<String> {
    let mut host = FakeHost::request("h", "/", &[]).with_route_name("r");
    Stream::new(plugin.current(), plugin.generation()).on_request_headers(&mut host);
    host.request_values("x-envoy-upstream-rq-timeout-ms")
}

#[test]
fn accepted_configs_get_increasing_generations_and_one_info_line() {
    let generations = Generations::new();
    let mut plugin = Plugin::default();
    let mut host = FakeHost::default();
    assert!(plugin.configure(&mut host, &generations, good(100)));
    assert!(plugin.configure(&mut host, &generations, good(200)));
    assert_eq!(plugin.generation(), 2);
    assert_eq!(host.count(Counter::ConfigsAccepted), 2);
    let lines = host.log_lines();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1].0, LogLevel::Info);
    let expected = format!(
        "attache: configuration generation 2 (fingerprint {:08x}, document {}) accepted: gateway \"infra/edge\", 1 routes",
        fingerprint(&good(200)),
        plugin.current().unwrap().document_id()
    );
    assert!(lines[1].1.starts_with(&expected), "{}", lines[1].1);
    assert_eq!(timeout_seen(&plugin), vec!["200"]);
}

#[test]
fn the_accepted_line_says_how_long_the_load_took_and_how_large_the_vm_is() {
    let generations = Generations::new();
    let mut plugin = Plugin::default();
    let mut host = FakeHost {
        clock_step: 12_345_678,
        memory: Some(5 * 1024 * 1024 + 512 * 1024),
        ..FakeHost::default()
    };
    assert!(plugin.configure(&mut host, &generations, good(100)));
    let lines = host.log_lines();
    assert!(
        lines[0]
            .1
            .ends_with("; loaded in 12.3 ms, Wasm memory 5.5 MiB"),
        "{}",
        lines[0].1
    );
    // A host that can tell neither says so instead of printing a guess.
    let mut blind = FakeHost {
        clock_step: u64::MAX,
        clock: std::cell::Cell::new(1),
        ..FakeHost::default()
    };
    assert!(plugin.configure(&mut blind, &generations, good(100)));
    let line = &blind.log_lines()[0].1;
    assert!(
        line.ends_with("; load time unknown, Wasm memory unknown"),
        "{line}"
    );
}

#[test]
fn a_rejected_update_keeps_the_last_good_config_and_logs_one_error_line() {
    let generations = Generations::new();
    let mut plugin = Plugin::default();
    let mut host = FakeHost::default();
    assert!(plugin.configure(&mut host, &generations, good(100)));
    let bad = filter_bytes(&doc(json!([entry(
        "r",
        json!({"retry": {"codes": [200]}})
    )])));
    assert!(!plugin.configure(&mut host, &generations, bad.clone()));
    assert_eq!(plugin.generation(), 1);
    assert_eq!(timeout_seen(&plugin), vec!["100"]);
    assert_eq!(host.count(Counter::ConfigsRejected), 1);
    let errors = error_lines(&host);
    assert_eq!(errors.len(), 1);
    assert_eq!(
        errors[0],
        format!(
            "attache: configuration (fingerprint {:08x}) rejected (last accepted in this VM: generation 1): $.profiles[0].retry.codes[0]: status code 200 cannot be retried: expected 400-599",
            fingerprint(&bad)
        )
    );
}

/// Schema 1 (`attache resolve`'s document) handed to the filter: one error
/// line naming the problem and the command to use, and the last good
/// document keeps serving.
#[test]
fn a_schema_1_update_is_refused_with_a_hint_and_the_last_good_keeps_serving() {
    let generations = Generations::new();
    let mut plugin = Plugin::default();
    let mut host = FakeHost::default();
    assert!(plugin.configure(&mut host, &generations, good(100)));
    let resolved = doc(json!([entry("r", json!({"timeouts": {"requestMs": 200}}))]));
    let bytes = resolved.to_string().into_bytes();
    assert!(!plugin.configure(&mut host, &generations, bytes));
    assert_eq!(plugin.generation(), 1);
    assert_eq!(timeout_seen(&plugin), vec!["100"]);
    assert_eq!(host.count(Counter::ConfigsRejected), 1);
    let errors = error_lines(&host);
    assert_eq!(errors.len(), 1, "{errors:?}");
    let line = &errors[0];
    assert!(
        line.contains("$.schemaVersion: schemaVersion 1 (`attache resolve`'s document) is not read by the filter"),
        "{line}"
    );
    assert!(line.contains("`attache render ecds`"), "{line}");
}

#[test]
fn a_fresh_root_context_continues_the_vms_generations() {
    // Envoy starts a new root context for every configuration update.
    let generations = Generations::new();
    let mut host = FakeHost::default();
    let mut first = Plugin::default();
    assert!(first.configure(&mut host, &generations, good(100)));
    let mut second = Plugin::default();
    assert!(second.configure(&mut host, &generations, good(200)));
    assert_eq!(second.generation(), 2);
    let mut third = Plugin::default();
    assert!(!third.configure(&mut host, &generations, b"{}".to_vec()));
    assert!(third.current().is_none());
    let last = host.log_lines().pop().unwrap().1;
    let expected = format!(
        "attache: configuration (fingerprint {:08x}) rejected (last accepted in this VM: generation 2): $: missing field",
        fingerprint(b"{}")
    );
    assert!(last.starts_with(&expected), "{last}");
}

#[test]
fn a_rejected_first_config_says_nothing_is_in_force() {
    let generations = Generations::new();
    let mut plugin = Plugin::default();
    let mut host = FakeHost::default();
    assert!(!plugin.configure(&mut host, &generations, Vec::new()));
    assert!(plugin.current().is_none());
    assert!(host.log_lines()[0]
        .1
        .contains("rejected (none accepted in this VM): configuration is empty"));
}

#[test]
fn an_in_flight_stream_keeps_the_config_it_started_with() {
    let generations = Generations::new();
    let mut plugin = Plugin::default();
    let mut host = FakeHost::default();
    plugin.configure(&mut host, &generations, good(100));
    let mut old = Stream::new(plugin.current(), plugin.generation());
    plugin.configure(&mut host, &generations, good(200));
    let mut req = FakeHost::request("h", "/", &[]).with_route_name("r");
    old.on_request_headers(&mut req);
    assert_eq!(
        req.request_values("x-envoy-upstream-rq-timeout-ms"),
        vec!["100"]
    );
}

#[test]
fn request_logs_respect_the_host_log_level() {
    let c = compile(&doc(json!([entry("r", json!({}))])));
    let mut quiet = FakeHost::request("h", "/", &[]).with_route_name("r");
    quiet.level = LogLevel::Info;
    request(&c, &mut quiet);
    assert!(quiet.log_lines().is_empty());
    let mut chatty = FakeHost::request("h", "/", &[]).with_route_name("r");
    chatty.level = LogLevel::Debug;
    request(&c, &mut chatty);
    assert_eq!(
        chatty.log_lines(),
        vec![(
            LogLevel::Debug,
            "attache: generation 1: route \"r\" found by route name".to_string()
        )]
    );
}

/// Routes are compiled as the parsed document is consumed; a document
/// refused half-way (its first routes already compiled) is dropped whole:
/// the last good one keeps serving, and no route of the refused one is
/// ever found.
#[test]
fn a_document_refused_half_way_never_serves_its_first_routes() {
    let generations = Generations::new();
    let mut plugin = Plugin::default();
    let mut host = FakeHost::default();
    assert!(plugin.configure(&mut host, &generations, good(100)));
    let mut routes = vec![
        entry("r", json!({"timeouts": {"requestMs": 200}})),
        entry("only-in-refused", json!({"timeouts": {"requestMs": 300}})),
    ];
    routes.extend((0..50).map(|i| entry(&format!("fine-{i}"), json!({}))));
    routes.push(entry(
        "bad",
        json!({"matches": [{"path": {"type": "RegularExpression", "value": "/a("}}]}),
    ));
    let refused = filter_bytes(&doc(serde_json::Value::Array(routes)));
    assert!(!plugin.configure(&mut host, &generations, refused));
    assert_eq!(plugin.generation(), 1);
    assert_eq!(timeout_seen(&plugin), vec!["100"]);
    let config = plugin.current().unwrap();
    assert!(config.route_named("only-in-refused").is_none());
    assert_eq!(config.route_count(), 1);
    let error = &host.log_lines()[1].1;
    assert!(
        error.contains(".matches[0].path.value: regular expression"),
        "{error}"
    );
}
