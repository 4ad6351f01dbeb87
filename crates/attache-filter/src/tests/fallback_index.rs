//! The fallback index finds what a scan of the sorted candidates finds:
//! random route tables (hostnames exact, wildcard and absent; paths exact,
//! prefix, regex and absent; methods and headers; listeners on shared,
//! distinct and unknown ports) against random requests (on the document's
//! ports, on another, on none), the index's answer compared with
//! `FallbackTable::find_by_scan`.

use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;
use crate::request::RequestFacts;

const HOSTS: &[&str] = &[
    "a.example.com",
    "b.example.com",
    "example.com",
    "x.a.example.com",
];
const PATHS: &[&str] = &["/", "/a", "/a/", "/a/b", "/ab", "/a/b/c", "/b", ""];

fn hostname() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        Just(None),
        prop::sample::select(HOSTS).prop_map(|h| Some(h.to_string())),
        prop::sample::select(&["*.example.com", "*.a.example.com", "*.com"][..])
            .prop_map(|h| Some(h.to_string())),
    ]
}

fn route_match() -> impl Strategy<Value = Value> {
    let path = prop_oneof![
        Just(Value::Null),
        (
            prop::sample::select(&["Exact", "PathPrefix"][..]),
            prop::sample::select(&PATHS[..7])
        )
            .prop_map(|(kind, value)| json!({"type": kind, "value": value})),
        prop::sample::select(&["/a.*", "/b", "/[ab]/.*"][..])
            .prop_map(|re| json!({"type": "RegularExpression", "value": re})),
    ];
    let method = prop::option::of(prop::sample::select(&["GET", "POST"][..]));
    let header = prop::option::of(prop::sample::select(&["1", "2"][..]));
    (path, method, header).prop_map(|(path, method, header)| {
        let mut m = json!({});
        if !path.is_null() {
            m["path"] = path;
        }
        if let Some(method) = method {
            m["method"] = json!(method);
        }
        if let Some(value) = header {
            m["headers"] = json!([{"name": "x-h", "value": value}]);
        }
        m
    })
}

/// Listener `nop` has no port in the document.
fn table() -> impl Strategy<Value = Value> {
    let one = (
        prop::sample::select(&["http", "https", "alt", "nop"][..]),
        prop::collection::vec(hostname(), 0..3),
        prop::collection::vec(route_match(), 0..3),
    );
    prop::collection::vec(one, 1..12).prop_map(|entries| {
        let routes: Vec<Value> = entries
            .into_iter()
            .enumerate()
            .map(|(i, (listener, hosts, matches))| {
                let hostnames: Vec<String> = hosts.into_iter().flatten().collect();
                entry(
                    &format!("{listener}/ns/r{i}/0"),
                    json!({"hostnames": hostnames, "matches": matches}),
                )
            })
            .collect();
        let mut document = doc(json!(routes));
        document["options"] = json!({"listenerPorts": {"http": 80, "https": 443, "alt": 80}});
        document
    })
}

fn request() -> impl Strategy<Value = (FakeHost, Option<u16>)> {
    (
        prop::sample::select(
            &[
                "a.example.com",
                "b.example.com",
                "example.com",
                "x.a.example.com",
                "other.org",
            ][..],
        ),
        prop::sample::select(
            &[
                "/", "/a", "/a/", "/a/b", "/ab", "/a/b/c", "/b", "/c", "//a", "*",
            ][..],
        ),
        prop::sample::select(&["GET", "POST"][..]),
        prop::option::of(prop::sample::select(&["1", "2"][..])),
        prop::option::of(prop::sample::select(&[80, 443, 8080][..])),
    )
        .prop_map(|(host, path, method, header, port)| {
            let headers: Vec<(&str, &str)> = header.map(|v| ("x-h", v)).into_iter().collect();
            let fake = FakeHost::request(host, path, &headers).with_method(method);
            (fake, port)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn the_index_finds_what_the_scan_finds(document in table(), (host, port) in request()) {
        let config = compile(&document);
        let facts = RequestFacts::from_host(&host);
        let table = config.fallback();
        let indexed = table.find(&facts, port, &host);
        let scanned = table.find_by_scan(&facts, port, &host);
        prop_assert_eq!(indexed, scanned);
    }
}
