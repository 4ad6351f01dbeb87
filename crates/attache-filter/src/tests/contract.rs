//! The filter reads exactly what the generator writes: both use the types of
//! attache-contract, so a document built and serialised with them must
//! compile here and enforce every field.

use std::collections::BTreeMap;

use attache_contract::{
    route_entry_name, Document, Header, HeaderChanges, HeaderMatch, HttpRouteMatch, Options,
    PathMatch, PathMatchType, QueryParamMatch, Retry, RouteEntry, StringMatchType, Timeouts,
    SCHEMA_VERSION,
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
            route_namespace: "shop".into(),
            route_name: "checkout".into(),
            rule: "0".into(),
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
            }],
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
            sources: BTreeMap::from([(
                "timeouts.requestMs".to_string(),
                "shop/TimeoutPolicy/t".to_string(),
            )]),
        }],
    }
}

#[test]
fn a_generated_document_compiles_and_enforces_every_field() {
    let bytes = serde_json::to_vec(&generated()).unwrap();
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
        stream.route().map(|r| r.name.as_str()),
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
    let doc = generated();
    let read = crate::document::parse(&serde_json::to_vec(&doc).unwrap()).unwrap();
    assert_eq!(read, doc);
}
