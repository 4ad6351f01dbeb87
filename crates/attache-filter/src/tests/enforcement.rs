use serde_json::json;

use super::*;
use crate::host::{Counter, HeaderMap};

fn checkout() -> Rc<CompiledConfig> {
    compile(&doc(json!([entry(
        "http/shop/checkout/0",
        json!({
            "timeouts": {"requestMs": 10000, "backendRequestMs": 2000},
            "retry": {"attempts": 3, "codes": [502, 503], "backoffMs": 100, "retryOn": ["connect-failure"]},
            "requestHeaders": {"set": [{"name": "x-a", "value": "1"}], "add": [{"name": "x-tag", "value": "policy"}], "remove": ["x-b"]},
            "responseHeaders": {"set": [{"name": "cache-control", "value": "no-store"}],
                                "add": [{"name": "x-served-by", "value": "attache"}], "remove": ["server"]}
        })
    )])))
}

#[test]
fn timeouts_and_retry_become_router_control_headers() {
    let mut host = FakeHost::request("h", "/", &[]).with_route_name("http/shop/checkout/0");
    request(&checkout(), &mut host);
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
        host.request_values("x-envoy-retry-on"),
        vec!["connect-failure,retriable-status-codes"]
    );
    assert_eq!(
        host.request_values("x-envoy-retriable-status-codes"),
        vec!["502,503"]
    );
    for counter in [
        Counter::EnforcedTimeout,
        Counter::EnforcedRetry,
        Counter::EnforcedRequestHeaders,
    ] {
        assert_eq!(host.count(counter), 1, "{counter:?}");
    }
}

#[test]
fn zero_request_timeout_is_sent_as_zero_which_envoy_reads_as_none() {
    let c = compile(&doc(json!([entry(
        "r",
        json!({"timeouts": {"requestMs": 0}})
    )])));
    let mut host = FakeHost::request("h", "/", &[]).with_route_name("r");
    request(&c, &mut host);
    assert_eq!(
        host.request_values("x-envoy-upstream-rq-timeout-ms"),
        vec!["0"]
    );
    assert!(host
        .request_values("x-envoy-upstream-rq-per-try-timeout-ms")
        .is_empty());
    assert_eq!(host.count(Counter::EnforcedRetry), 0);
}

#[test]
fn request_header_changes_apply_remove_then_set_then_add() {
    let mut host = FakeHost::request(
        "h",
        "/",
        &[("x-a", "client"), ("x-b", "secret"), ("x-tag", "client")],
    )
    .with_route_name("http/shop/checkout/0");
    request(&checkout(), &mut host);
    assert_eq!(host.request_values("x-a"), vec!["1"]);
    assert!(host.request_values("x-b").is_empty());
    assert_eq!(host.request_values("x-tag"), vec!["client", "policy"]);
}

#[test]
fn one_header_named_by_remove_set_and_add_ends_with_set_then_added_value() {
    let c = compile(&doc(json!([entry(
        "r",
        json!({"requestHeaders": {
        "remove": ["x-h"], "set": [{"name": "X-H", "value": "set"}], "add": [{"name": "x-h", "value": "added"}]}})
    )])));
    let mut host =
        FakeHost::request("h", "/", &[("x-h", "client1"), ("x-h", "client2")]).with_route_name("r");
    request(&c, &mut host);
    assert_eq!(host.request_values("x-h"), vec!["set", "added"]);
}

#[test]
fn a_header_change_naming_a_control_header_is_refused_not_merely_outranked() {
    // Before the safety rules the control header was written after the
    // header change and won; now such a document never compiles, so no
    // ordering subtlety can let a policy steer the router.
    let e = encoded_err(&doc(json!([entry(
        "r",
        json!({
        "timeouts": {"requestMs": 500},
        "requestHeaders": {"set": [{"name": "x-envoy-upstream-rq-timeout-ms", "value": "99999"}]}})
    )])));
    assert_eq!(
        e,
        "$.profiles[0].requestHeaders.set[0].name: \"x-envoy-upstream-rq-timeout-ms\" is an Envoy router control header; router control is only through the typed timeouts and retry"
    );
}

#[test]
fn response_headers_use_the_route_remembered_from_the_request() {
    let mut host = FakeHost::request("h", "/", &[]).with_route_name("http/shop/checkout/0");
    let mut stream = request(&checkout(), &mut host);
    // The response phase has no route name to look at: the stream remembers.
    host.properties.clear();
    host.response = vec![
        ("server".into(), b"upstream".to_vec()),
        ("cache-control".into(), b"max-age=60".to_vec()),
        ("x-served-by".into(), b"app".to_vec()),
    ];
    stream.on_response_headers(&mut host);
    assert!(host.values(HeaderMap::Response, "server").is_empty());
    assert_eq!(
        host.values(HeaderMap::Response, "cache-control"),
        vec!["no-store"]
    );
    assert_eq!(
        host.values(HeaderMap::Response, "x-served-by"),
        vec!["app", "attache"]
    );
    assert_eq!(host.count(Counter::EnforcedResponseHeaders), 1);
}

#[test]
fn a_route_without_response_changes_leaves_the_response_alone() {
    let c = compile(&doc(json!([entry(
        "r",
        json!({"timeouts": {"requestMs": 5}})
    )])));
    let mut host = FakeHost::request("h", "/", &[]).with_route_name("r");
    let mut stream = request(&c, &mut host);
    host.response = vec![("server".into(), b"upstream".to_vec())];
    stream.on_response_headers(&mut host);
    assert_eq!(host.values(HeaderMap::Response, "server"), vec!["upstream"]);
    assert_eq!(host.count(Counter::EnforcedResponseHeaders), 0);
}

#[test]
fn attempts_without_triggers_only_caps_retries() {
    let c = compile(&doc(json!([entry("r", json!({"retry": {"attempts": 0}}))])));
    let mut host = FakeHost::request("h", "/", &[]).with_route_name("r");
    request(&c, &mut host);
    assert_eq!(host.request_values("x-envoy-max-retries"), vec!["0"]);
    assert!(host.request_values("x-envoy-retry-on").is_empty());
}

// Host calls per request: the route name property, one read of
// `x-envoy-internal` and of each of the three control headers Envoy never
// strips, then one single-header write per change; never a copy of the
// whole map. The response path writes one header per change and nothing
// for a route without any.

/// The strip's reads on a request from an external client: `x-envoy-internal`
/// and `control::NOT_STRIPPED_BY_ENVOY`.
const STRIP_READS: usize = 4;

#[test]
fn a_matched_request_costs_one_property_read_the_strip_reads_and_one_write_per_change() {
    // As Envoy hands over an external request: it already removed the
    // client's x-envoy-max-retries (e2e control_headers.rs proves it).
    let mut host = FakeHost::request("h", "/", &[("x-b", "gone"), ("x-a", "client")])
        .with_route_name("http/shop/checkout/0");
    let mut stream = request(&checkout(), &mut host);
    // (property reads, header reads, header writes): remove x-b, set x-a,
    // add x-tag, two timeouts, three retry headers.
    assert_eq!(host.calls(), (1, STRIP_READS, 8));
    assert!(host.request_values("x-b").is_empty());
    assert_eq!(host.request_values("x-a"), vec!["1"]);
    assert_eq!(host.request_values("x-envoy-max-retries"), vec!["3"]);
    assert_eq!(host.request_values(":path"), vec!["/"]);
    assert_eq!(host.request_values(":authority"), vec!["h"]);
    stream.on_response_headers(&mut host);
    // remove server, set cache-control, add x-served-by: three single writes.
    assert_eq!(host.calls(), (1, STRIP_READS, 11));
}

#[test]
fn nothing_to_change_means_no_write() {
    // No write at all: Envoy keeps the route it cached, no re-match.
    let c = compile(&doc(json!([entry("r", json!({"responseHeaders": {}}))])));
    let mut host = FakeHost::request("h", "/", &[("x-keep", "1")]).with_route_name("r");
    let mut stream = request(&c, &mut host);
    assert_eq!(host.calls(), (1, STRIP_READS, 0));
    stream.on_response_headers(&mut host);
    assert_eq!(host.calls(), (1, STRIP_READS, 0));
    assert_eq!(host.request_values("x-keep"), vec!["1"]);
}

#[test]
fn an_internal_request_reads_every_control_header_and_removes_those_sent() {
    let c = compile(&doc(json!([entry("r", json!({}))])));
    let mut host = FakeHost::request("h", "/", &[("x-envoy-retry-on", "5xx")])
        .with_route_name("r")
        .internal();
    request(&c, &mut host);
    assert_eq!(
        host.calls(),
        (1, 1 + crate::control::CLIENT_CONTROL_HEADERS.len(), 1)
    );
    assert!(host.request_values("x-envoy-retry-on").is_empty());
}

#[test]
fn trusted_document_and_a_route_without_request_changes_cost_one_property_read() {
    let mut d = doc(json!([entry("r", json!({}))]));
    d["options"] = json!({"trustClientControlHeaders": true});
    let mut host = FakeHost::request("h", "/", &[]).with_route_name("r");
    let mut stream = request(&compile(&d), &mut host);
    stream.on_response_headers(&mut host);
    assert_eq!(host.calls(), (1, 0, 0));
    assert_eq!(stream.route().map(|r| &*r.name), Some("r"));
}

#[test]
fn fallback_matching_reads_the_three_pseudo_headers_one_by_one() {
    let c = compile(&doc(json!([entry(
        "r",
        json!({"matches": [{"path": {"type": "Exact", "value": "/a"}}],
               "requestHeaders": {"set": [{"name": "x-a", "value": "1"}]}})
    )])));
    let mut host = FakeHost::request("h", "/a", &[]).with_route_name("unknown");
    let stream = request(&c, &mut host);
    assert_eq!(stream.route().map(|r| &*r.name), Some("r"));
    assert_eq!(host.calls(), (1, STRIP_READS + 3, 1));
    assert_eq!(host.request_values("x-a"), vec!["1"]);
}

#[test]
fn fallback_matching_reads_a_header_only_where_a_match_names_it() {
    let c = compile(&doc(json!([entry(
        "r",
        json!({"matches": [{"path": {"type": "Exact", "value": "/a"},
                            "headers": [{"name": "x-v", "value": "2"}]}]})
    )])));
    let mut host = FakeHost::request("h", "/a", &[("x-v", "2")]);
    let stream = request(&c, &mut host);
    assert_eq!(stream.route().map(|r| &*r.name), Some("r"));
    // The route name property is asked for and absent.
    assert_eq!(host.calls(), (1, STRIP_READS + 3 + 1, 0));
}

#[test]
fn a_header_that_several_candidates_name_is_read_once() {
    // Both entries match `/a` and name `x-v`: the first (document order)
    // fails on it, the second matches. The header is asked for once.
    let c = compile(&doc(json!([
        entry(
            "r1",
            json!({"matches": [{"path": {"type": "Exact", "value": "/a"},
                                         "headers": [{"name": "x-v", "value": "1"}]}]})
        ),
        entry(
            "r2",
            json!({"matches": [{"path": {"type": "Exact", "value": "/a"},
                                         "headers": [{"name": "x-v", "value": "2"}]}]})
        ),
    ])));
    let mut host = FakeHost::request("h", "/a", &[("x-v", "2")]);
    let stream = request(&c, &mut host);
    assert_eq!(stream.route().map(|r| &*r.name), Some("r2"));
    // Before issue 24's read-once host: STRIP_READS + 3 + 2.
    assert_eq!(host.calls(), (1, STRIP_READS + 3 + 1, 0));
}

/// Two instances of the filter on one stream (both Istio objects live for a
/// moment during a switch of kinds, or the filter deployed twice): for a
/// route with an `add`, the first enforces and marks the stream, the second
/// leaves the request and its response alone, so the `add` is applied once. An instance without a
/// configuration leaves no mark, so the next one enforces: never none.
#[test]
fn a_second_instance_on_the_stream_changes_nothing() {
    let mut host =
        FakeHost::request("h", "/", &[("x-tag", "client")]).with_route_name("http/shop/checkout/0");
    let mut first = request(&checkout(), &mut host);
    let mut second = request(&checkout(), &mut host);
    assert_eq!(host.request_values("x-tag"), vec!["client", "policy"]);
    assert_eq!(host.count(Counter::EnforcedByAnotherInstance), 1);
    assert_eq!(host.count(Counter::EnforcedRequestHeaders), 1);
    assert!(second.route().is_none());
    first.on_response_headers(&mut host);
    second.on_response_headers(&mut host);
    assert_eq!(
        host.values(HeaderMap::Response, "x-served-by"),
        vec!["attache"]
    );
    // The mark: one read and one write on the first, one read on the second.
    assert_eq!(*host.mark_calls.borrow(), 3);

    let mut host = FakeHost::request("h", "/", &[]).with_route_name("http/shop/checkout/0");
    let mut unconfigured = Stream::new(None, 1);
    unconfigured.on_request_headers(&mut host);
    request(&checkout(), &mut host);
    assert_eq!(host.request_values("x-tag"), vec!["policy"]);
    assert_eq!(host.count(Counter::EnforcedByAnotherInstance), 0);

    // A client cannot send the mark: it is filter state, not a header.
    let mut host = FakeHost::request("h", "/", &[("attache_enforced", "1")])
        .with_route_name("http/shop/checkout/0");
    request(&checkout(), &mut host);
    assert_eq!(host.request_values("x-tag"), vec!["policy"]);
}

#[test]
fn a_second_instance_leaves_what_the_first_set_for_an_internal_client() {
    // The second instance decides before its strip: it must not remove the
    // control headers the first one set and then leave the request alone.
    let mut host = FakeHost::request("h", "/", &[])
        .with_route_name("http/shop/checkout/0")
        .internal();
    request(&checkout(), &mut host);
    request(&checkout(), &mut host);
    assert_eq!(host.request_values("x-envoy-max-retries"), vec!["3"]);
    assert_eq!(
        host.request_values("x-envoy-upstream-rq-timeout-ms"),
        vec!["10000"]
    );
    assert_eq!(host.request_values("x-tag"), vec!["policy"]);
    assert_eq!(host.count(Counter::EnforcedByAnotherInstance), 1);
}

/// A route without an `add` gives the same headers applied once or twice:
/// it costs no mark, and each instance applies it (the second re-sets what
/// its strip removes from an internal client's request).
#[test]
fn a_route_without_an_add_is_applied_by_each_instance_without_a_mark() {
    let c = compile(&doc(json!([entry(
        "r",
        json!({
            "timeouts": {"requestMs": 700},
            "retry": {"attempts": 2},
            "requestHeaders": {"set": [{"name": "x-a", "value": "1"}], "remove": ["x-b"]},
            "responseHeaders": {"set": [{"name": "x-r", "value": "2"}]}
        })
    )])));
    for internal in [false, true] {
        let mut once = FakeHost::request("h", "/", &[("x-b", "client"), ("x-a", "client")])
            .with_route_name("r");
        let mut twice = FakeHost::request("h", "/", &[("x-b", "client"), ("x-a", "client")])
            .with_route_name("r");
        if internal {
            once = once.internal();
            twice = twice.internal();
        }
        request(&c, &mut once).on_response_headers(&mut once);
        let mut first = request(&c, &mut twice);
        let mut second = request(&c, &mut twice);
        first.on_response_headers(&mut twice);
        second.on_response_headers(&mut twice);
        assert_eq!(twice.request, once.request, "internal: {internal}");
        assert_eq!(twice.response, once.response, "internal: {internal}");
        assert_eq!(once.request_values("x-envoy-max-retries"), vec!["2"]);
        assert_eq!(*twice.mark_calls.borrow(), 0);
        assert_eq!(twice.count(Counter::EnforcedByAnotherInstance), 0);
        assert_eq!(twice.count(Counter::EnforcedTimeout), 2);
    }
}

/// The route is found before the strip writes anything; a fallback match
/// on a control header the strip removes sees it absent, as the router
/// will once it is removed.
#[test]
fn fallback_matching_sees_the_control_headers_as_the_strip_leaves_them() {
    let matching = |trust: bool| {
        let mut d = doc(json!([entry(
            "r",
            json!({"matches": [{"path": {"type": "Exact", "value": "/a"},
                                "headers": [{"name": "X-Envoy-Decorator-Operation", "value": "op"}]}]})
        )]));
        d["options"] = json!({"trustClientControlHeaders": trust});
        let mut host = FakeHost::request("h", "/a", &[("x-envoy-decorator-operation", "op")]);
        let stream = request(&compile(&d), &mut host);
        let kept = host.request_values("x-envoy-decorator-operation");
        (stream.route().map(|r| r.name.to_string()), kept)
    };
    assert_eq!(matching(false), (None, vec![]));
    assert_eq!(matching(true), (Some("r".into()), vec!["op".to_owned()]));
}
