use serde_json::json;

use super::*;
use crate::host::{Counter, LogLevel};
use crate::plugin::Plugin;

fn good(ms: u64) -> Vec<u8> {
    doc(json!([entry("r", json!({"timeouts": {"requestMs": ms}}))])).to_string().into_bytes()
}

fn timeout_seen(plugin: &Plugin) -> Vec<String> {
    let mut host = FakeHost::request("h", "/", &[]).with_route_name("r");
    Stream::new(plugin.current(), plugin.generation()).on_request_headers(&mut host);
    host.request_values("x-envoy-upstream-rq-timeout-ms")
}

#[test]
fn accepted_configs_get_increasing_generations_and_one_info_line() {
    let mut plugin = Plugin::default();
    let mut host = FakeHost::default();
    assert!(plugin.configure(&mut host, &good(100)));
    assert!(plugin.configure(&mut host, &good(200)));
    assert_eq!(plugin.generation(), 2);
    assert_eq!(host.count(Counter::ConfigsAccepted), 2);
    let lines = host.log_lines();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1].0, LogLevel::Info);
    assert!(lines[1].1.starts_with("attache: configuration generation 2 accepted: gateway \"infra/edge\", 1 routes"), "{}", lines[1].1);
    assert_eq!(timeout_seen(&plugin), vec!["200"]);
}

#[test]
fn a_rejected_update_keeps_the_last_good_config_and_logs_one_error_line() {
    let mut plugin = Plugin::default();
    let mut host = FakeHost::default();
    assert!(plugin.configure(&mut host, &good(100)));
    let bad = doc(json!([entry("r", json!({"retry": {"codes": [200]}}))])).to_string();
    assert!(!plugin.configure(&mut host, bad.as_bytes()));
    assert_eq!(plugin.generation(), 1);
    assert_eq!(timeout_seen(&plugin), vec!["100"]);
    assert_eq!(host.count(Counter::ConfigsRejected), 1);
    let errors: Vec<_> = host.log_lines().into_iter().filter(|(l, _)| *l == LogLevel::Error).collect();
    assert_eq!(errors.len(), 1);
    assert_eq!(
        errors[0].1,
        "attache: configuration rejected (generation 1 stays in force): $.routes[0].retry.codes[0]: status code 200 cannot be retried: expected 400-599"
    );
}

#[test]
fn a_rejected_first_config_says_nothing_is_in_force() {
    let mut plugin = Plugin::default();
    let mut host = FakeHost::default();
    assert!(!plugin.configure(&mut host, b""));
    assert!(plugin.current().is_none());
    assert!(host.log_lines()[0].1.contains("(no configuration in force)"));
}

#[test]
fn an_in_flight_stream_keeps_the_config_it_started_with() {
    let mut plugin = Plugin::default();
    let mut host = FakeHost::default();
    plugin.configure(&mut host, &good(100));
    let mut old = Stream::new(plugin.current(), plugin.generation());
    plugin.configure(&mut host, &good(200));
    let mut req = FakeHost::request("h", "/", &[]).with_route_name("r");
    old.on_request_headers(&mut req);
    assert_eq!(req.request_values("x-envoy-upstream-rq-timeout-ms"), vec!["100"]);
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
    assert_eq!(chatty.log_lines(), vec![(LogLevel::Debug, "attache: generation 1: route \"r\" found by route name".to_string())]);
}
