//! Arbitrary requests through the per-request path (strip, route lookup by
//! name and by fallback matching, header changes, response changes) against
//! a document that exercises every kind of match and setting, and a
//! document for Istio whose route names and fallback need the listener port.
//! Each request also goes through the dynamic module's exported hooks (its
//! in-process Envoy, `attache_module::fake_envoy`), which must leave the
//! same request and response headers as the core's path: the adapter's
//! header, attribute and filter-state mapping under arbitrary bytes.
#![no_main]

use std::rc::Rc;

use attache_filter::testing::FakeHost;
use attache_module::fake_envoy::{FakeEnvoy, FakeStream};
use attache_contract::{DataPlaneDocument, Document};
use attache_filter::{CompiledConfig, HeaderMap, Stream};
use libfuzzer_sys::fuzz_target;

/// Written in schema 1, the way people read policies, and handed to the
/// filter encoded as `attache render` does (the filter reads only that).
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

/// istiod's names: `a.r.0` on two listeners with different settings (picked
/// by port), `main` shared by two routes on one port (fallback), listeners
/// on a shared port and on their own.
const ISTIO_DOCUMENT: &str = r#"{"schemaVersion": 2, "gateway": "infra/edge",
 "options": {"istioRouteNames": true, "listenerPorts": {"http": 80, "https": 443, "alt": 80}},
 "strings": ["x-a", "1", "2"],
 "profiles": [{"requestHeaders": {"set": [[0, 1]]}}, {"requestHeaders": {"set": [[0, 2]]}}],
 "groups": [
  {"profile": 0, "hostnames": ["shop.example.com"], "routes": [
   {"name": "http/a/r/0", "matches": [{"path": {"type": "PathPrefix", "value": "/a"}}]},
   {"name": "alt/a/r/main"}]},
  {"profile": 1, "hostnames": ["*.example.com"], "routes": [
   {"name": "https/a/r/0", "matches": [{"path": {"type": "Exact", "value": "/a"}}]},
   {"name": "alt/a/s/main", "matches": [{"path": {"type": "RegularExpression", "value": "/r[0-9]+"}}]}]}
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
    static CONFIGS: Option<Vec<Rc<CompiledConfig>>> = [encoded(DOCUMENT), Some(ISTIO_DOCUMENT.into())]
        .iter()
        .map(|d| CompiledConfig::from_bytes(d.as_ref()?.as_bytes()).ok().map(Rc::new))
        .collect();
}

thread_local! {
    /// The same documents loaded through the module's configuration hook.
    static MODULES: Option<Vec<FakeEnvoy>> = [encoded(DOCUMENT), Some(ISTIO_DOCUMENT.into())]
        .iter()
        .map(|d| FakeEnvoy::load(d.as_ref()?.as_bytes()))
        .collect();
}

/// A schema-1 document in the data-plane encoding.
fn encoded(resolved: &str) -> Option<String> {
    let document: Document = serde_json::from_str(resolved).ok()?;
    serde_json::to_string(&DataPlaneDocument::encode(&document)).ok()
}

fuzz_target!(|bytes: &[u8]| {
    let Some(configs) = CONFIGS.with(Clone::clone) else {
        panic!("a fuzz document does not compile");
    };
    let modules = MODULES.with(|m| m.as_ref().map(Vec::len));
    assert_eq!(modules, Some(configs.len()), "the module refused a fuzz document");
    for (at, config) in configs.into_iter().enumerate() {
        let mut pairs = split(bytes).into_iter();
        // The first pair: its value is the route name, its name the
        // `destination.port` property's bytes, whose first byte also picks
        // the port the index and the scan are asked about.
        let route_name = pairs.next();
        let mut host = FakeHost::default();
        host.request = pairs.collect();
        let mut port = None;
        if let Some((port_bytes, value)) = route_name {
            host.properties
                .insert(vec!["xds".into(), "route_name".into()], value);
            port = port_bytes.bytes().next().map(|b| [80, 443, 8080][usize::from(b % 3)]);
            host.properties
                .insert(vec!["destination".into(), "port".into()], port_bytes.into_bytes());
        }
        // The fallback index must find what a scan of the sorted candidates
        // finds, for any request on any port.
        let facts = attache_filter::request::RequestFacts::from_host(&host);
        let indexed = config.fallback().find(&facts, port, &host);
        let scanned = config.fallback().find_by_scan(&facts, port, &host);
        assert_eq!(indexed, scanned, "index and scan disagree");
        let mut module_stream = FakeStream {
            request: host.request.clone(),
            route_name: host.properties.get(&["xds".to_string(), "route_name".to_string()][..]).cloned(),
            // Envoy hands the port over as an integer; the core reads the
            // Wasm host's 8 little-endian bytes.
            destination_port: host
                .properties
                .get(&["destination".to_string(), "port".to_string()][..])
                .and_then(|b| <[u8; 8]>::try_from(b.as_slice()).ok())
                .map(u64::from_le_bytes),
            ..FakeStream::default()
        };
        let mut stream = Stream::new(Some(config), 1);
        stream.on_request_headers(&mut host);
        host.response = host.request.clone();
        stream.on_response_headers(&mut host);
        let _ = host.values(HeaderMap::Response, "x-d");
        MODULES.with(|modules| {
            if let Some(module) = modules.as_ref().and_then(|m| m.get(at)) {
                module.exchange_then(&mut module_stream, |s| s.response = s.request.clone());
            }
        });
        assert_eq!(module_stream.request, host.request, "the module's request headers differ");
        assert_eq!(module_stream.response, host.response, "the module's response headers differ");
    }
});
