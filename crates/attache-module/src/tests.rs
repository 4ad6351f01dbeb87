//! The module's adapter against the `.wasm`'s path through the same core,
//! on every document the end-to-end corpus renders (tests/golden/*/ecds.json):
//! the same requests must leave with the same headers (timeouts and retries
//! are headers the router reads: `x-envoy-upstream-rq-timeout-ms`,
//! `x-envoy-max-retries`, …), the same responses likewise, and the same
//! counters must move.
//!
//! The `.wasm`'s side is its adapter's own dispatch (`Dispatcher`, which
//! `proxy.rs` only forwards to) over the core's in-memory host; the
//! module's side is its exported hooks driven by the in-process Envoy
//! (`fake_envoy`), so everything between Envoy's calls and the core is
//! exercised.

use std::path::{Path, PathBuf};

use attache_filter::dispatch::Dispatcher;
use attache_filter::host::{Counter, Gauge};
use attache_filter::testing::FakeHost;
use serde_json::Value;

use crate::fake_envoy::{self, FakeEnvoy, FakeStream};

type Headers = Vec<(String, Vec<u8>)>;

fn golden_documents() -> Vec<(PathBuf, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden");
    let mut found = Vec::new();
    for case in std::fs::read_dir(&root).expect("tests/golden") {
        let path = case.expect("entry").path().join("ecds.json");
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let ecds: Value = serde_json::from_str(&text).expect("ecds.json is JSON");
        let value = &ecds["resources"][0]["typed_config"]["config"]["configuration"]["value"];
        let document = value.as_str().expect("the document string");
        found.push((path, document.as_bytes().to_vec()));
    }
    found.sort();
    assert!(found.len() >= 10, "the golden corpus: {found:?}");
    found
}

/// Requests that reach every route of `document`: by its name, and without
/// one (fallback matching), each with client control headers the filter
/// must strip, as an internal client and not.
fn requests(document: &[u8]) -> Vec<(Option<String>, Headers)> {
    let document: Value = serde_json::from_slice(document).expect("JSON");
    let mut out = Vec::new();
    let groups = document["groups"].as_array().cloned().unwrap_or_default();
    for group in groups {
        let host = group["hostnames"][0]
            .as_str()
            .unwrap_or("shop.example.com")
            .replace('*', "any");
        for route in group["routes"].as_array().cloned().unwrap_or_default() {
            let name = route["name"].as_str().map(str::to_string);
            let path = route["matches"][0]["path"]["value"]
                .as_str()
                .unwrap_or("/")
                .to_string();
            for internal in [false, true] {
                let mut headers: Headers = vec![
                    (":authority".into(), host.clone().into_bytes()),
                    (":path".into(), path.clone().into_bytes()),
                    (":method".into(), b"GET".to_vec()),
                    ("x-envoy-upstream-rq-timeout-ms".into(), b"1".to_vec()),
                    ("x-envoy-max-retries".into(), b"9".to_vec()),
                    ("x-remove-me".into(), b"client".to_vec()),
                    ("x-added".into(), b"client".to_vec()),
                ];
                if internal {
                    headers.push(("x-envoy-internal".into(), b"true".to_vec()));
                }
                out.push((name.clone(), headers.clone()));
                out.push((None, headers));
            }
        }
    }
    out
}

fn response() -> Headers {
    vec![
        (":status".into(), b"200".to_vec()),
        ("server".into(), b"backend".to_vec()),
        ("x-internal".into(), b"secret".to_vec()),
    ]
}

/// The `.wasm`'s path: its dispatch table over the in-memory host.
fn through_wasm_path(document: &[u8], route: Option<&str>, request: &Headers) -> FakeHost {
    let mut host = FakeHost::default();
    let mut contexts = Dispatcher::new();
    contexts.create(1, 0);
    assert!(contexts.configure(&mut host, 1, document.to_vec()));
    host.counters.clear();
    host.request = request.clone();
    host.response = response();
    if let Some(route) = route {
        host = host.with_route_name(route);
    }
    contexts.create(2, 1);
    contexts.request_headers(&mut host, 2);
    contexts.response_headers(&mut host, 2);
    host
}

#[test]
fn both_adapters_give_the_same_headers_for_every_case_of_the_e2e_corpus() {
    let mut compared = 0;
    for (path, document) in golden_documents() {
        let envoy = FakeEnvoy::load(&document).expect("the module accepts the golden document");
        // The document's identity, published at load as the .wasm does.
        let mut wasm_load = FakeHost::default();
        let mut contexts = Dispatcher::new();
        contexts.configure(&mut wasm_load, 1, document.clone());
        let id = Gauge::DocumentId;
        assert_ne!(wasm_load.gauge(id), 0, "{}", path.display());
        assert_eq!(
            fake_envoy::gauge(id.metric_name()),
            wasm_load.gauge(id),
            "{}",
            path.display()
        );
        for (route, request) in requests(&document) {
            let wasm = through_wasm_path(&document, route.as_deref(), &request);
            let mut stream = FakeStream {
                request: request.clone(),
                response: response(),
                route_name: route.clone().map(String::into_bytes),
                ..FakeStream::default()
            };
            let before: Vec<u64> = Counter::ALL
                .iter()
                .map(|c| fake_envoy::count(c.metric_name()))
                .collect();
            envoy.exchange(&mut stream);
            let context = format!("{} route {route:?} request {request:?}", path.display());
            assert_eq!(stream.request, wasm.request, "request headers: {context}");
            assert_eq!(
                stream.response, wasm.response,
                "response headers: {context}"
            );
            for (counter, before) in Counter::ALL.iter().zip(before) {
                let moved = fake_envoy::count(counter.metric_name()) - before;
                assert_eq!(moved, wasm.count(*counter), "{counter:?}: {context}");
            }
            compared += 1;
        }
    }
    assert!(compared > 100, "only {compared} requests compared");
}

#[test]
fn a_route_with_a_timeout_leaves_with_the_router_header_and_the_client_one_stripped() {
    let (_, document) = golden_documents()
        .into_iter()
        .find(|(p, _)| p.to_string_lossy().contains("e2e-basics"))
        .expect("e2e-basics");
    let envoy = FakeEnvoy::load(&document).expect("accepted");
    let mut stream = FakeStream {
        request: vec![
            (":path".into(), b"/timeout".to_vec()),
            ("x-envoy-upstream-rq-timeout-ms".into(), b"1".to_vec()),
            ("x-envoy-internal".into(), b"true".to_vec()),
        ],
        route_name: Some(b"http/shop/timeout/0".to_vec()),
        ..FakeStream::default()
    };
    envoy.exchange(&mut stream);
    let timeouts: Vec<_> = stream
        .request
        .iter()
        .filter(|(n, _)| n == "x-envoy-upstream-rq-timeout-ms")
        .map(|(_, v)| v.clone())
        .collect();
    assert_eq!(timeouts, vec![b"500".to_vec()]);
}

#[test]
fn a_refused_document_refuses_the_configuration_and_says_why() {
    fake_envoy::set_log_level(0);
    assert!(FakeEnvoy::load(b"not json").is_none());
    assert!(FakeEnvoy::load(b"").is_none());
    let logs = fake_envoy::logs();
    assert!(
        logs.iter()
            .any(|(level, line)| *level == 4 && line.contains("rejected")),
        "{logs:?}"
    );
    assert!(fake_envoy::count(Counter::ConfigsRejected.metric_name()) >= 2);
}

#[test]
fn a_panic_in_a_hook_is_caught_and_the_fallback_returned() {
    let caught = crate::exports::guarded("test hook", || 7, || -> u32 { panic!("core bug") });
    assert_eq!(caught, 7);
    assert!(fake_envoy::logs()
        .iter()
        .any(|(level, line)| *level == 4 && line.contains("internal error in test hook")));
}

#[test]
fn a_worker_thread_compiles_its_own_copy_of_the_document() {
    use crate::config::ModuleConfig;
    use crate::host::CounterIds;
    let (_, document) = golden_documents()
        .into_iter()
        .find(|(p, _)| p.to_string_lossy().contains("e2e-basics"))
        .expect("e2e-basics");
    // Loaded (and checked) on this thread, as Envoy's main thread does.
    let config = ModuleConfig::load(None, CounterIds::default(), document).expect("accepted");
    let timeout = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let mut stream = config.stream();
                let mut host = FakeHost::request("shop.example.com", "/timeout", &[])
                    .with_route_name("http/shop/timeout/0");
                stream.on_request_headers(&mut host);
                host.request_values("x-envoy-upstream-rq-timeout-ms")
            })
            .join()
            .expect("worker")
    });
    assert_eq!(timeout, vec!["500".to_string()]);
}

/// The stream host reads the map once and keeps it current: reads after a
/// write see the write, a removal of an absent header makes no call, and
/// the set of an absent header goes over as an add (one call either way).
#[test]
fn the_stream_host_answers_reads_from_one_copy_of_the_map_and_skips_empty_removals() {
    use attache_filter::host::{HeaderMap, Host};

    use crate::abi::FilterPtr;
    use crate::host::{CounterIds, StreamHost};

    let mut stream = FakeStream {
        request: vec![("x-a".into(), b"1".to_vec()), ("x-b".into(), b"2".to_vec())],
        response: vec![("server".into(), b"backend".to_vec())],
        ..FakeStream::default()
    };
    let ids = CounterIds::default();
    let envoy: *mut FakeStream = &mut stream;
    let mut host = StreamHost::new(FilterPtr(envoy.cast()), &ids);
    assert_eq!(host.header(HeaderMap::Request, "X-A"), Some(b"1".to_vec()));
    host.set_header(HeaderMap::Request, "x-absent", None);
    host.set_header(HeaderMap::Request, "x-new", Some("v"));
    host.set_header(HeaderMap::Request, "x-a", Some("one"));
    host.set_header(HeaderMap::Request, "x-b", None);
    host.add_header(HeaderMap::Request, "x-new", "w");
    assert_eq!(
        host.header(HeaderMap::Request, "x-a"),
        Some(b"one".to_vec())
    );
    assert_eq!(host.header(HeaderMap::Request, "x-b"), None);
    assert_eq!(
        host.header(HeaderMap::Request, "x-new"),
        Some(b"v".to_vec())
    );
    // Another map than the one taken is asked header by header.
    assert_eq!(
        host.header(HeaderMap::Response, "server"),
        Some(b"backend".to_vec())
    );
    drop(host);
    assert_eq!(
        stream.header_writes, 4,
        "no call for the absent header's removal"
    );
    let mut request = stream.request.clone();
    request.sort();
    assert_eq!(
        request,
        vec![
            ("x-a".to_string(), b"one".to_vec()),
            ("x-new".to_string(), b"v".to_vec()),
            ("x-new".to_string(), b"w".to_vec()),
        ]
    );
}
