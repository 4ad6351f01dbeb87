use serde_json::json;

use super::*;
use crate::control::CLIENT_CONTROL_HEADERS;
use crate::host::Counter;

fn client_headers() -> Vec<(&'static str, &'static str)> {
    CLIENT_CONTROL_HEADERS
        .iter()
        .map(|name| (*name, "1"))
        .collect()
}

fn assert_none_left(host: &FakeHost) {
    for name in CLIENT_CONTROL_HEADERS {
        assert!(host.request_values(name).is_empty(), "{name} survived");
    }
}

#[test]
fn client_control_headers_are_stripped_on_unmatched_requests() {
    let c = compile(&doc(json!([entry(
        "r",
        json!({"matches": [{"path": {"type": "Exact", "value": "/only"}}]})
    )])));
    let mut host = FakeHost::request("h", "/elsewhere", &client_headers());
    request(&c, &mut host);
    assert_none_left(&host);
    assert_eq!(host.count(Counter::Unmatched), 1);
    assert_eq!(host.count(Counter::ClientControlHeadersStripped), 1);
}

#[test]
fn client_values_are_replaced_by_policy_on_matched_requests() {
    let c = compile(&doc(json!([entry(
        "r",
        json!({"timeouts": {"requestMs": 300}})
    )])));
    let mut host = FakeHost::request("h", "/", &client_headers()).with_route_name("r");
    request(&c, &mut host);
    assert_eq!(
        host.request_values("x-envoy-upstream-rq-timeout-ms"),
        vec!["300"]
    );
    assert!(host.request_values("x-envoy-max-retries").is_empty());
    assert!(host
        .request_values("x-envoy-hedge-on-per-try-timeout")
        .is_empty());
}

#[test]
fn stripping_happens_even_before_any_configuration() {
    let mut host = FakeHost::request("h", "/", &client_headers());
    Stream::new(None, 0).on_request_headers(&mut host);
    assert_none_left(&host);
}

#[test]
fn requests_without_control_headers_count_nothing_stripped() {
    let c = compile(&doc(json!([])));
    let mut host = FakeHost::request("h", "/", &[("x-envoy-original-path", "/keep")]);
    request(&c, &mut host);
    assert_eq!(host.count(Counter::ClientControlHeadersStripped), 0);
    assert_eq!(host.request_values("x-envoy-original-path"), vec!["/keep"]);
}

#[test]
fn trusted_mode_keeps_client_headers_but_policy_still_overwrites_its_own() {
    let mut d = doc(json!([entry("r", json!({"timeouts": {"requestMs": 300}}))]));
    d["options"] = json!({"trustClientControlHeaders": true});
    let c = compile(&d);
    let mut host = FakeHost::request("h", "/", &client_headers()).with_route_name("r");
    request(&c, &mut host);
    assert_eq!(host.request_values("x-envoy-max-retries"), vec!["1"]);
    assert_eq!(
        host.request_values("x-envoy-upstream-rq-timeout-ms"),
        vec!["300"]
    );
    assert_eq!(host.count(Counter::ClientControlHeadersStripped), 0);
}

#[test]
fn one_snapshot_replaces_the_per_name_lookups() {
    let c = compile(&doc(json!([entry("r", json!({}))])));
    let mut host = FakeHost::request("h", "/", &[("x-custom", "1")]).with_route_name("r");
    request(&c, &mut host);
    assert_eq!(*host.snapshots.borrow(), 1);
    assert_eq!(*host.lookups.borrow(), 0);
    assert_eq!(host.request_values("x-custom"), vec!["1"]);
}

#[test]
fn repeated_control_headers_are_all_removed_and_counted_once() {
    let mut host = FakeHost::request(
        "h",
        "/",
        &[
            ("x-envoy-max-retries", "5"),
            ("x-keep", "1"),
            ("x-envoy-max-retries", "9"),
            ("x-envoy-upstream-rq-timeout-ms", "1"),
        ],
    );
    Stream::new(None, 0).on_request_headers(&mut host);
    assert_none_left(&host);
    assert_eq!(host.request_values("x-keep"), vec!["1"]);
    assert_eq!(host.count(Counter::ClientControlHeadersStripped), 1);
}
