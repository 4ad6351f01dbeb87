use serde_json::json;

use super::*;
use crate::control::CLIENT_CONTROL_HEADERS;
use crate::host::Counter;

/// Every control header, as sent by a client Envoy took for internal (the
/// fake adds `x-envoy-internal` through `.internal()`): Envoy then left them
/// all in place, so the filter must remove them all.
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
    let mut host = FakeHost::request("h", "/elsewhere", &client_headers()).internal();
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
    let mut host = FakeHost::request("h", "/", &client_headers())
        .internal()
        .with_route_name("r");
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
    let mut host = FakeHost::request("h", "/", &client_headers()).internal();
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
    let mut host = FakeHost::request("h", "/", &client_headers())
        .internal()
        .with_route_name("r");
    request(&c, &mut host);
    assert_eq!(host.request_values("x-envoy-max-retries"), vec!["1"]);
    assert_eq!(
        host.request_values("x-envoy-upstream-rq-timeout-ms"),
        vec!["300"]
    );
    assert_eq!(host.count(Counter::ClientControlHeadersStripped), 0);
}

#[test]
fn an_external_request_loses_the_headers_envoy_never_strips() {
    // No x-envoy-internal: Envoy ran cleanInternalHeaders on this request,
    // which leaves exactly these three (docs/filter.md).
    let mut host = FakeHost::request(
        "h",
        "/",
        &[
            ("x-envoy-upstream-stream-duration-ms", "1"),
            ("x-envoy-original-dst-host", "10.0.0.1:80"),
            ("x-envoy-decorator-operation", "op"),
            ("x-custom", "1"),
        ],
    );
    Stream::new(None, 0).on_request_headers(&mut host);
    for name in crate::control::NOT_STRIPPED_BY_ENVOY {
        assert!(host.request_values(name).is_empty(), "{name} survived");
    }
    assert_eq!(host.request_values("x-custom"), vec!["1"]);
    assert_eq!(host.count(Counter::ClientControlHeadersStripped), 1);
    // Read x-envoy-internal and the three; removed the three.
    assert_eq!(host.calls(), (0, 4, 3));
}

#[test]
fn an_external_request_with_nothing_to_strip_writes_nothing() {
    let c = compile(&doc(json!([entry("r", json!({}))])));
    let mut host = FakeHost::request("h", "/", &[("x-custom", "1")]).with_route_name("r");
    request(&c, &mut host);
    assert_eq!(host.header_writes, 0);
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
    )
    .internal();
    Stream::new(None, 0).on_request_headers(&mut host);
    assert_none_left(&host);
    assert_eq!(host.request_values("x-keep"), vec!["1"]);
    assert_eq!(host.count(Counter::ClientControlHeadersStripped), 1);
}

#[test]
fn the_strip_list_names_the_headers_that_let_a_client_steer_envoy() {
    // Issue 8: each of these was obeyed for a trusted client before.
    for name in [
        "x-envoy-upstream-alt-stat-name",
        "x-envoy-upstream-stream-duration-ms",
        "x-envoy-upstream-rq-timeout-alt-response",
        "x-envoy-hedge-on-per-try-timeout",
        "x-envoy-retriable-header-names",
        "x-envoy-force-trace",
        "x-envoy-original-dst-host",
    ] {
        assert!(
            CLIENT_CONTROL_HEADERS.contains(&name),
            "{name} is not stripped"
        );
        let c = compile(&doc(json!([entry("r", json!({}))])));
        let mut host = FakeHost::request("h", "/", &[(name, "x")])
            .with_route_name("r")
            .internal();
        request(&c, &mut host);
        assert!(host.request_values(name).is_empty(), "{name} survived");
    }
}

#[test]
fn headers_envoy_sets_before_the_filter_are_kept() {
    // Envoy's HTTP connection manager sets these for this very request
    // (x-envoy-internal, x-envoy-external-address), and an internal redirect
    // re-runs the filter with x-envoy-original-url set by Envoy.
    let kept = [
        ("x-envoy-internal", "true"),
        ("x-envoy-external-address", "192.0.2.1"),
        ("x-envoy-original-url", "http://h/a"),
    ];
    let c = compile(&doc(json!([entry("r", json!({}))])));
    let mut host = FakeHost::request("h", "/", &kept).with_route_name("r");
    request(&c, &mut host);
    for (name, value) in kept {
        assert_eq!(host.request_values(name), vec![value], "{name}");
    }
}
