//! Arbitrary requests through the per-request path (strip, route lookup by
//! name and by fallback matching, header changes, response changes) against
//! a document that exercises every kind of match and setting.
#![no_main]

use std::rc::Rc;

use attache_filter::testing::FakeHost;
use attache_filter::{CompiledConfig, HeaderMap, Stream};
use libfuzzer_sys::fuzz_target;

const DOCUMENT: &str = r#"{"schemaVersion": 1, "gateway": "infra/edge", "routes": [
 {"name": "exact", "listener": "http", "routeNamespace": "a", "routeName": "r", "rule": "0",
  "hostnames": ["shop.example.com", "*.example.com"],
  "matches": [{"path": {"type": "Exact", "value": "/a"}, "method": "GET",
               "headers": [{"name": "x-h", "value": "v"}],
               "queryParams": [{"name": "q", "value": "1"}]}],
  "timeouts": {"requestMs": 500, "backendRequestMs": 100},
  "retry": {"attempts": 2, "codes": [503], "retryOn": ["connect-failure"]},
  "requestHeaders": {"set": [{"name": "x-a", "value": "1"}], "add": [{"name": "x-b", "value": "2"}], "remove": ["x-c"]},
  "responseHeaders": {"set": [{"name": "x-d", "value": "1"}], "remove": ["server"]}},
 {"name": "prefix", "listener": "http", "routeNamespace": "a", "routeName": "p", "rule": "0",
  "matches": [{"path": {"type": "PathPrefix", "value": "/api"}},
              {"path": {"type": "RegularExpression", "value": "/r[0-9]+/.*"},
               "headers": [{"type": "RegularExpression", "name": "x-re", "value": "a+b"}]}]},
 {"name": "any", "listener": "http", "routeNamespace": "a", "routeName": "any", "rule": "0"}
]}"#;

/// `name\0value\0...` pairs; the first pair's value (if any) is the route
/// name property, the next two are authority and path.
fn split(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut parts = bytes.split(|b| *b == 0);
    let mut out = Vec::new();
    while let (Some(name), Some(value)) = (parts.next(), parts.next()) {
        out.push((String::from_utf8_lossy(name).to_lowercase(), value.to_vec()));
    }
    out
}

thread_local! {
    /// Compiled once: the target is the request path, not configuration.
    static CONFIG: Option<Rc<CompiledConfig>> =
        CompiledConfig::from_bytes(DOCUMENT.as_bytes()).ok().map(Rc::new);
}

fuzz_target!(|bytes: &[u8]| {
    let Some(config) = CONFIG.with(Clone::clone) else {
        panic!("the fuzz document does not compile");
    };
    let mut pairs = split(bytes).into_iter();
    let route_name = pairs.next();
    let mut host = FakeHost::default();
    host.request = pairs.collect();
    if let Some((_, value)) = route_name {
        host.properties
            .insert(vec!["xds".into(), "route_name".into()], value);
    }
    // The fallback index must find what a scan of the sorted candidates
    // finds, for any request.
    let facts = attache_filter::request::RequestFacts::from_headers(&host.request);
    let indexed = config.fallback().find(&facts, &host).map(|r| r.name.clone());
    let scanned = config.fallback().find_by_scan(&facts, &host).map(|r| r.name.clone());
    assert_eq!(indexed, scanned, "index and scan disagree");
    let mut stream = Stream::new(Some(Rc::clone(&config)), 1);
    stream.on_request_headers(&mut host);
    host.response = host.request.clone();
    stream.on_response_headers(&mut host);
    let _ = host.values(HeaderMap::Response, "x-d");
});
