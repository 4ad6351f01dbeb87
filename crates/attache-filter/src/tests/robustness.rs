//! Whatever a client sends, the filter neither panics nor lets a control
//! header through; garbage in a pseudo-header only means "no match".

use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::control::{CLIENT_CONTROL_HEADERS, NOT_STRIPPED_BY_ENVOY};
use crate::host::Counter;

fn config() -> Rc<CompiledConfig> {
    compile(&doc(json!([
        entry(
            "exact",
            json!({"hostnames": ["*.example.com"], "matches": [{"path": {"type": "Exact", "value": "/a"}}]})
        ),
        entry(
            "regex",
            json!({"matches": [{"path": {"type": "RegularExpression", "value": "/r/.*"},
            "headers": [{"name": "x-h", "type": "RegularExpression", "value": ".*"}],
            "queryParams": [{"name": "q", "type": "RegularExpression", "value": ".+"}]}],
            "responseHeaders": {"set": [{"name": "x-r", "value": "1"}]}})
        ),
    ])))
}

fn raw_request(
    authority: Vec<u8>,
    path: Vec<u8>,
    method: Vec<u8>,
    extra: Vec<(String, Vec<u8>)>,
) -> FakeHost {
    let mut host = FakeHost::default();
    host.request.push((":authority".into(), authority));
    host.request.push((":path".into(), path));
    host.request.push((":method".into(), method));
    host.request.extend(extra);
    host
}

#[test]
fn non_utf8_pseudo_headers_match_nothing_but_control_headers_still_go() {
    let c = config();
    let mut host = raw_request(
        vec![0xc3, 0x28],
        b"/r/\xff\xfe?q=\xff".to_vec(),
        vec![0x80],
        vec![
            ("x-h".into(), vec![0xff]),
            ("x-envoy-max-retries".into(), vec![0xff, 0x00]),
        ],
    )
    .internal();
    assert_eq!(routed(&c, &mut host), None);
    assert!(host.request_values("x-envoy-max-retries").is_empty());
    assert_eq!(host.count(Counter::Unmatched), 1);
}

#[test]
fn a_non_utf8_header_fails_only_its_own_condition() {
    let c = config();
    let mut ok = raw_request(
        b"h".to_vec(),
        b"/r/x?q=1".to_vec(),
        b"GET".to_vec(),
        vec![("x-h".into(), b"v".to_vec())],
    );
    assert_eq!(routed(&c, &mut ok).as_deref(), Some("regex"));
    let mut bad = raw_request(
        b"h".to_vec(),
        b"/r/x?q=1".to_vec(),
        b"GET".to_vec(),
        vec![("x-h".into(), vec![0xff])],
    );
    assert_eq!(routed(&c, &mut bad), None);
}

#[test]
fn a_huge_header_value_is_just_a_value() {
    let c = config();
    let huge = vec![b'a'; 1 << 20];
    let mut host = raw_request(
        b"h".to_vec(),
        b"/r/x?q=1".to_vec(),
        b"GET".to_vec(),
        vec![("x-h".into(), huge)],
    );
    assert_eq!(routed(&c, &mut host).as_deref(), Some("regex"));
}

proptest! {
    #[test]
    fn arbitrary_request_bytes_never_panic_and_never_keep_control_headers(
        authority in proptest::collection::vec(any::<u8>(), 0..64),
        path in proptest::collection::vec(any::<u8>(), 0..128),
        method in proptest::collection::vec(any::<u8>(), 0..8),
        header_value in proptest::collection::vec(any::<u8>(), 0..256),
        control in 0..CLIENT_CONTROL_HEADERS.len(),
        internal in any::<bool>(),
    ) {
        let c = config();
        let name = CLIENT_CONTROL_HEADERS[control];
        // As Envoy hands the request over: for a client it takes for
        // external it has already removed all but NOT_STRIPPED_BY_ENVOY.
        let reaches_filter = internal || NOT_STRIPPED_BY_ENVOY.contains(&name);
        let mut extra = vec![("x-h".to_string(), header_value.clone())];
        if reaches_filter {
            extra.push((name.to_string(), header_value));
        }
        let mut host = raw_request(authority, path, method, extra);
        if internal {
            host = host.internal();
        }
        let mut stream = request(&c, &mut host);
        stream.on_response_headers(&mut host);
        prop_assert!(host.request_values(name).is_empty());
        let outcomes = host.count(Counter::MatchedByFallback) + host.count(Counter::Unmatched);
        prop_assert_eq!(outcomes, 1);
    }

    #[test]
    fn arbitrary_configuration_bytes_are_refused_or_accepted_without_panicking(
        bytes in proptest::collection::vec(any::<u8>(), 0..512),
    ) {
        let _ = CompiledConfig::from_bytes(&bytes);
    }

    #[test]
    fn valid_paths_are_split_and_matched_consistently(segs in proptest::collection::vec("[a-z]{1,4}", 1..5)) {
        let c = config();
        let path = format!("/r/{}?q=1", segs.join("/"));
        let mut host = raw_request(b"h".to_vec(), path.into_bytes(), b"GET".to_vec(), vec![("x-h".into(), b"v".to_vec())]);
        let route = routed(&c, &mut host);
        prop_assert_eq!(route.as_deref(), Some("regex"));
    }
}
