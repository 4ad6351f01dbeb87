//! The filter reads exactly what the generator writes: both use the types of
//! attache-contract, so a schema-1 document built with them, encoded by the
//! contract's data-plane encoder (as `attache render` does), must compile
//! here and enforce every field.

use std::collections::BTreeMap;

use attache_contract::{
    route_entry_name, DataPlaneDocument, Document, Header, HeaderChanges, HeaderMatch,
    HttpRouteMatch, Options, PathMatch, PathMatchType, QueryParamMatch, Retry, RouteEntry,
    StringMatchType, Timeouts, SCHEMA_VERSION,
};

use super::*;
use crate::host::HeaderMap;

fn generated() -> Document {
    let name = route_entry_name("http", "shop", "checkout", "0");
    Document {
        schema_version: SCHEMA_VERSION,
        gateway: "infra/edge".into(),
        options: Options::default(),
        routes: vec![RouteEntry {
            name: name.clone(),
            listener: "http".into(),
            listener_set: None,
            listener_set_kind: None,
            route_namespace: "shop".into(),
            route_name: "checkout".into(),
            rule: "0".into(),
            route_kind: None,
            hostnames: vec!["shop.example.com".into()],
            matches: vec![HttpRouteMatch {
                path: Some(PathMatch {
                    kind: PathMatchType::PathPrefix,
                    value: "/checkout".into(),
                }),
                headers: vec![HeaderMatch {
                    kind: StringMatchType::Exact,
                    name: "x-env".into(),
                    value: "prod".into(),
                }],
                query_params: vec![QueryParamMatch {
                    kind: StringMatchType::RegularExpression,
                    name: "step".into(),
                    value: "[0-9]".into(),
                }],
                method: Some("POST".into()),
                grpc_method: None,
            }],
            sources: BTreeMap::from([(
                "timeouts.requestMs".to_string(),
                "shop/TimeoutPolicy/t".to_string(),
            )]),
            settings: attache_contract::Settings {
                timeouts: Some(Timeouts {
                    request_ms: Some(10_000),
                    backend_request_ms: Some(2_000),
                }),
                retry: Some(Retry {
                    attempts: Some(3),
                    codes: Some(vec![502, 503]),
                    backoff_ms: Some(100),
                    retry_on: Some(vec!["reset".into()]),
                }),
                request_headers: Some(HeaderChanges {
                    set: vec![Header {
                        name: "x-a".into(),
                        value: "1".into(),
                    }],
                    add: vec![],
                    remove: vec!["x-b".into()],
                }),
                response_headers: Some(HeaderChanges {
                    set: vec![],
                    add: vec![Header {
                        name: "x-c".into(),
                        value: "2".into(),
                    }],
                    remove: vec![],
                }),
            },
        }],
    }
}

#[test]
fn a_generated_document_compiles_and_enforces_every_field() {
    let bytes = serde_json::to_vec(&DataPlaneDocument::encode(&generated())).unwrap();
    let config = Rc::new(CompiledConfig::from_bytes(&bytes).unwrap());
    // Found through fallback matching, which exercises hostnames and matches.
    let mut host = FakeHost::request(
        "shop.example.com",
        "/checkout/pay?step=2",
        &[("x-env", "prod"), ("x-b", "1")],
    )
    .with_method("POST");
    let mut stream = request(&config, &mut host);
    assert_eq!(
        stream.route().map(|r| &*r.name),
        Some("http/shop/checkout/0")
    );
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
        vec!["reset,retriable-status-codes"]
    );
    assert_eq!(
        host.request_values("x-envoy-retriable-status-codes"),
        vec!["502,503"]
    );
    assert_eq!(host.request_values("x-a"), vec!["1"]);
    assert!(host.request_values("x-b").is_empty());
    stream.on_response_headers(&mut host);
    assert_eq!(host.values(HeaderMap::Response, "x-c"), vec!["2"]);
}

#[test]
fn the_filter_reads_the_very_type_the_generator_writes() {
    let encoded = DataPlaneDocument::encode(&generated());
    let read = crate::document::parse(&serde_json::to_vec(&encoded).unwrap()).unwrap();
    assert_eq!(read, encoded);
}

/// Schema 1 is for people and tools: handed to the filter, it is refused
/// with a hint naming the command that writes what the filter reads.
#[test]
fn a_schema_1_document_is_refused_with_a_hint() {
    let bytes = serde_json::to_vec(&generated()).unwrap();
    let e = CompiledConfig::from_bytes(&bytes).unwrap_err().to_string();
    assert!(e.starts_with("$.schemaVersion: schemaVersion 1 "), "{e}");
    assert!(e.contains("attache render ecds"), "{e}");
    // Istio's double, and one inside a JSON string, alike.
    let istio = r#"{"schemaVersion": 1.0, "gateway": "g", "routes": []}"#;
    assert_eq!(compile_err(istio), e);
    assert_eq!(compile_err(&serde_json::to_string(istio).unwrap()), e);
}

/// By route name, too: the encoded document's settings replace a client's
/// control header.
#[test]
fn the_encoded_document_enforces_by_route_name() {
    let config = compile(&serde_json::to_value(generated()).unwrap());
    let mut host = FakeHost::request(
        "shop.example.com",
        "/checkout/pay",
        &[("x-env", "prod"), ("x-envoy-max-retries", "9")],
    )
    .internal()
    .with_route_name("http/shop/checkout/0");
    let mut stream = request(&config, &mut host);
    assert_eq!(
        stream.route().map(|r| &*r.name),
        Some("http/shop/checkout/0")
    );
    assert_eq!(host.request_values("x-envoy-max-retries"), vec!["3"]);
    assert_eq!(host.request_values("x-a"), vec!["1"]);
    stream.on_response_headers(&mut host);
    assert_eq!(host.values(HeaderMap::Response, "x-c"), vec!["2"]);
}

#[test]
fn entries_of_one_profile_share_their_operations() {
    let mut doc = generated();
    let mut second = doc.routes[0].clone();
    second.name = route_entry_name("http", "shop", "checkout", "1");
    doc.routes.push(second);
    let encoded = DataPlaneDocument::encode(&doc);
    assert_eq!(encoded.profiles.len(), 1);
    let config = compile(&serde_json::to_value(&encoded).unwrap());
    let first = config.route_named("http/shop/checkout/0").unwrap();
    let other = config.route_named("http/shop/checkout/1").unwrap();
    assert!(Rc::ptr_eq(&first.request_ops, &other.request_ops));
    assert!(Rc::ptr_eq(&first.response_ops, &other.response_ops));
}

#[test]
fn a_data_plane_document_keeps_every_validation_and_names_the_profile() {
    let bad_code = r#"{"schemaVersion":2,"gateway":"g","profiles":[{},{"retry":{"codes":[302]}}],
        "groups":[{"profile":1,"routes":[{"name":"a/b/c/0"}]}]}"#;
    assert_eq!(
        compile_err(bad_code),
        "$.profiles[1].retry.codes[0]: status code 302 cannot be retried: expected 400-599"
    );
    let bad_name = r#"{"schemaVersion":2,"gateway":"g","strings":["X Y","1"],
        "profiles":[{"requestHeaders":{"set":[[0,1]]}}],"groups":[]}"#;
    assert!(
        compile_err(bad_name).starts_with("$.profiles[0].requestHeaders.set[0].name:"),
        "{}",
        compile_err(bad_name)
    );
    let past_strings = r#"{"schemaVersion":2,"gateway":"g","strings":["x-a"],
        "profiles":[{"requestHeaders":{"remove":[4]}}],"groups":[]}"#;
    assert_eq!(
        compile_err(past_strings),
        "$.profiles[0].requestHeaders.remove[0]: index 4 is past the end of strings (1 entries)"
    );
    let past_profiles = r#"{"schemaVersion":2,"gateway":"g","groups":[{"profile":0,"routes":[{"name":"a/b/c/0"}]}]}"#;
    assert_eq!(
        compile_err(past_profiles),
        "$.groups[0].profile: index 0 is past the end of profiles (0 entries)"
    );
    let duplicate = r#"{"schemaVersion":2,"gateway":"g","groups":[{"routes":[{"name":"a/b/c/0"}]},
        {"hostnames":["h"],"routes":[{"name":"a/b/c/0"}]}]}"#;
    assert_eq!(
        compile_err(duplicate),
        "$.groups[1].routes[0].name: route name \"a/b/c/0\" is already used by $.groups[0].routes[0]; names must be unique"
    );
    let bad_host = r#"{"schemaVersion":2,"gateway":"g","groups":[{"hostnames":["a b"],"routes":[{"name":"a/b/c/0"}]}]}"#;
    assert!(
        compile_err(bad_host).starts_with("$.groups[0].hostnames[0]:"),
        "{}",
        compile_err(bad_host)
    );
}

#[test]
fn istio_struct_numbers_are_read_as_indices() {
    let doc = r#"{"schemaVersion":2.0,"gateway":"g","strings":["x-a","1"],
        "profiles":[{"requestHeaders":{"set":[[0.0,1.0]]}}],"groups":[{"profile":0.0,"routes":[{"name":"a/b/c/0"}]}]}"#;
    let config = Rc::new(CompiledConfig::from_bytes(doc.as_bytes()).unwrap());
    let mut host = FakeHost::request("h", "/", &[]).with_route_name("a/b/c/0");
    request(&config, &mut host);
    assert_eq!(host.request_values("x-a"), vec!["1"]);
}

#[test]
fn a_bad_setting_in_schema_1_names_its_path() {
    // `Settings` is flattened into the entry on the wire, but read flat
    // (no buffered map), so a tool reading schema 1 still hears where.
    let text = r#"{"schemaVersion":1,"gateway":"g","routes":[{"name":"n","listener":"l",
        "routeNamespace":"a","routeName":"b","rule":"0","retry":{"attempts":"x"}}]}"#;
    let mut de = serde_json::Deserializer::from_str(text);
    let err = serde_path_to_error::deserialize::<_, Document>(&mut de).unwrap_err();
    assert_eq!(err.path().to_string(), "routes[0].retry.attempts");
}
