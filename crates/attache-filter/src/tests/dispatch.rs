//! The context table behind the filter's own exports (`crate::dispatch`):
//! streams and root contexts come and go as the host creates and deletes
//! them, each stream with its own root's configuration, and nothing stays
//! behind.

use serde_json::{json, Value};

use super::{doc, entry, filter_bytes};
use crate::dispatch::Dispatcher;
use crate::host::{Counter, HeaderMap};
use crate::testing::FakeHost;

/// One route `r` setting `x-a: value` on the request and `x-b: 2` on the
/// response.
fn document(value: &str) -> Vec<u8> {
    filter_bytes(&routes(value))
}

fn routes(value: &str) -> Value {
    doc(json!([entry(
        "r",
        json!({
            "requestHeaders": {"set": [{"name": "x-a", "value": value}]},
            "responseHeaders": {"set": [{"name": "x-b", "value": "2"}]}
        })
    )]))
}

/// A VM with root context 1 configured with [`document`]`("1")`.
fn configured() -> (Dispatcher, FakeHost) {
    let mut d = Dispatcher::new();
    let mut host = FakeHost::default();
    d.create(1, 0);
    assert!(d.configure(&mut host, 1, document("1")));
    (d, host)
}

fn to_r() -> FakeHost {
    FakeHost::request("a", "/", &[]).with_route_name("r")
}

#[test]
fn streams_are_freed_on_delete_so_the_table_does_not_grow() {
    let (mut d, _) = configured();
    for id in 2..10_002 {
        d.create(id, 1);
        assert_eq!(d.live(), (1, 1));
        let mut host = to_r();
        d.request_headers(&mut host, id);
        d.response_headers(&mut host, id);
        assert_eq!(host.request_values("x-a"), ["1"], "stream {id}");
        assert_eq!(host.values(HeaderMap::Response, "x-b"), ["2"]);
        assert!(!d.delete(id), "a stream is not reported as a root");
    }
    assert_eq!(d.live(), (1, 0));
    assert!(d.delete(1), "the root context is reported as a root");
    assert_eq!(d.live(), (0, 0));
}

#[test]
fn a_stream_reset_before_its_response_is_freed_too() {
    let (mut d, _) = configured();
    d.create(2, 1);
    d.request_headers(&mut to_r(), 2);
    assert_eq!(d.live(), (1, 1));
    assert!(!d.delete(2));
    assert_eq!(d.live(), (1, 0));
    // Callbacks for a deleted id make no host call at all.
    let mut later = to_r();
    d.request_headers(&mut later, 2);
    d.response_headers(&mut later, 2);
    assert_eq!(later.calls(), (0, 0, 0));
    assert!(!d.delete(2), "a second delete finds nothing");
}

#[test]
fn each_stream_gets_the_configuration_of_its_own_root() {
    let (mut d, mut host) = configured();
    // A second plugin in the same VM (another listener's filter) with
    // another document.
    d.create(7, 0);
    assert!(d.configure(&mut host, 7, document("other")));
    d.create(8, 1);
    d.create(9, 7);
    let (mut first, mut second) = (to_r(), to_r());
    d.request_headers(&mut first, 8);
    d.request_headers(&mut second, 9);
    assert_eq!(first.request_values("x-a"), ["1"]);
    assert_eq!(second.request_values("x-a"), ["other"]);
    // Deleting one root leaves the other's streams alone.
    assert!(d.delete(7));
    let mut third = to_r();
    d.request_headers(&mut third, 9);
    assert_eq!(third.request_values("x-a"), ["other"]);
}

#[test]
fn a_stream_started_before_an_update_keeps_its_configuration() {
    let (mut d, mut host) = configured();
    d.create(2, 1);
    assert!(d.configure(&mut host, 1, document("new")));
    d.create(3, 1);
    let (mut old, mut new) = (to_r(), to_r());
    d.request_headers(&mut old, 2);
    d.request_headers(&mut new, 3);
    assert_eq!(old.request_values("x-a"), ["1"]);
    assert_eq!(new.request_values("x-a"), ["new"]);
}

#[test]
fn a_rejected_configuration_is_refused_and_the_last_good_one_serves() {
    let (mut d, mut host) = configured();
    assert!(!d.configure(&mut host, 1, b"{not json".to_vec()));
    assert_eq!(host.count(Counter::ConfigsRejected), 1);
    d.create(2, 1);
    let mut req = to_r();
    d.request_headers(&mut req, 2);
    assert_eq!(req.request_values("x-a"), ["1"]);
}

#[test]
fn a_root_that_was_never_announced_is_created_by_its_configuration() {
    let mut d = Dispatcher::new();
    let mut host = FakeHost::default();
    assert!(d.configure(&mut host, 3, document("1")));
    assert_eq!(d.live(), (1, 0));
    d.create(4, 3);
    let mut req = to_r();
    d.request_headers(&mut req, 4);
    assert_eq!(req.request_values("x-a"), ["1"]);
}

#[test]
fn a_stream_of_an_unconfigured_or_unknown_root_matches_nothing_and_still_strips() {
    let mut d = Dispatcher::new();
    d.create(1, 0);
    d.create(2, 1);
    d.create(5, 4);
    for id in [2, 5] {
        let mut host = FakeHost::request("a", "/", &[("x-envoy-upstream-stream-duration-ms", "1")])
            .with_route_name("r");
        d.request_headers(&mut host, id);
        assert_eq!(host.count(Counter::MatchedByName), 0);
        assert!(host.request_values("x-a").is_empty());
        // As a stream without configuration always did: the client's
        // control headers are not trusted.
        assert!(host
            .request_values("x-envoy-upstream-stream-duration-ms")
            .is_empty());
    }
    assert_eq!(d.live(), (1, 2));
    d.delete(2);
    d.delete(5);
    assert_eq!(d.live(), (1, 0));
}
