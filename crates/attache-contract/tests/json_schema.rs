//! The committed JSON Schema (docs/schema/schema-1.json) and these types must
//! describe the same document: a fully populated document validates, and each
//! kind of invalid value the schema promises to catch is caught.

// Test code, helpers included (clippy.toml exempts only #[test] fns).
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use attache_contract::*;
use serde_json::{json, Value};

fn schema() -> jsonschema::Validator {
    let text = include_str!("../../../docs/schema/schema-1.json");
    let schema: Value = serde_json::from_str(text).expect("schema is JSON");
    jsonschema::validator_for(&schema).expect("schema compiles")
}

fn full_document() -> Document {
    Document {
        schema_version: SCHEMA_VERSION,
        gateway: "infra/edge".into(),
        options: Options {
            trust_client_control_headers: true,
            istio_route_names: true,
            listener_ports: [("http".to_string(), 80)].into_iter().collect(),
        },
        routes: vec![
            RouteEntry {
                name: route_entry_name("http", "shop", "checkout", "0"),
                listener: "http".into(),
                listener_set: None,
                listener_set_kind: None,
                route_namespace: "shop".into(),
                route_name: "checkout".into(),
                rule: "0".into(),
                route_kind: None,
                hostnames: vec!["shop.example.com".into(), "*.example.com".into()],
                matches: vec![HttpRouteMatch {
                    path: Some(PathMatch {
                        kind: PathMatchType::RegularExpression,
                        value: "/a/[0-9]+".into(),
                    }),
                    headers: vec![HeaderMatch {
                        kind: StringMatchType::Exact,
                        name: "x-v".into(),
                        value: "2".into(),
                    }],
                    query_params: vec![QueryParamMatch {
                        kind: StringMatchType::RegularExpression,
                        name: "q".into(),
                        value: ".*".into(),
                    }],
                    method: Some("POST".into()),
                    grpc_method: None,
                }],
                sources: [(
                    "timeouts.requestMs".to_string(),
                    "RoutePolicy shop/slow".to_string(),
                )]
                .into(),
                settings: attache_contract::Settings {
                    timeouts: Some(Timeouts {
                        request_ms: Some(10_000),
                        backend_request_ms: Some(0),
                    }),
                    retry: Some(Retry {
                        attempts: Some(3),
                        codes: Some(vec![502, 503]),
                        backoff_ms: Some(100),
                        retry_on: Some(vec!["connect-failure".into()]),
                    }),
                    request_headers: Some(HeaderChanges {
                        set: vec![Header {
                            name: "x-a".into(),
                            value: "1".into(),
                        }],
                        add: vec![Header {
                            name: "x-b".into(),
                            value: "summer,winter".into(),
                        }],
                        remove: vec!["x-c".into()],
                    }),
                    response_headers: Some(HeaderChanges::default()),
                },
            },
            grpc_entry(),
        ],
    }
}

/// A GRPCRoute rule's entry: its kind, and a method match in place of a path.
fn grpc_entry() -> RouteEntry {
    RouteEntry {
        name: route_entry_name("http", "shop", "cart", "add"),
        listener: "http".into(),
        route_namespace: "shop".into(),
        route_name: "cart".into(),
        rule: "add".into(),
        route_kind: Some("GRPCRoute".into()),
        matches: vec![HttpRouteMatch {
            grpc_method: Some(GrpcMethodMatch {
                kind: StringMatchType::Exact,
                service: Some("shop.v1.Cart".into()),
                method: Some("Add".into()),
            }),
            ..HttpRouteMatch::default()
        }],
        settings: attache_contract::Settings {
            retry: Some(Retry {
                retry_on: Some(vec!["unavailable".into()]),
                ..Retry::default()
            }),
            ..Default::default()
        },
        ..RouteEntry::default()
    }
}

#[test]
fn a_fully_populated_document_is_valid() {
    let doc = serde_json::to_value(full_document()).expect("serialises");
    support::assert_valid(&schema(), &doc);
}

#[test]
fn the_schema_rejects_what_the_contract_forbids() {
    let validator = schema();
    let base = serde_json::to_value(full_document()).expect("serialises");
    let cases = [
        ("wrong schema version", "/schemaVersion", json!(2)),
        (
            "status code out of range",
            "/routes/0/retry/codes/0",
            json!(600),
        ),
        (
            "negative timeout",
            "/routes/0/timeouts/requestMs",
            json!(-1),
        ),
        (
            "upper-case header name",
            "/routes/0/requestHeaders/set/0/name",
            json!("X-A"),
        ),
        (
            "header value with a newline",
            "/routes/0/requestHeaders/set/0/value",
            json!("a\r\nx-evil: 1"),
        ),
        (
            "unknown path match type",
            "/routes/0/matches/0/path/type",
            json!("Prefix"),
        ),
        (
            "unknown route kind",
            "/routes/1/routeKind",
            json!("TCPRoute"),
        ),
        (
            "gRPC method match without service or method",
            "/routes/1/matches/0/grpcMethod",
            json!({"type": "Exact"}),
        ),
        (
            "route name without four parts",
            "/routes/0/name",
            json!("checkout"),
        ),
    ];
    support::assert_rejects(&validator, &base, &cases);
    let mut both = base.clone();
    both["routes"][1]["matches"][0]["path"] =
        json!({"type": "Exact", "value": "/shop.v1.Cart/Add"});
    assert!(
        !validator.is_valid(&both),
        "schema accepted a match with a path and a gRPC method"
    );
    let mut missing = base.clone();
    missing["routes"][0]
        .as_object_mut()
        .expect("object")
        .remove("rule");
    assert!(
        !validator.is_valid(&missing),
        "schema accepted a route without its rule"
    );
}

#[test]
fn what_the_schema_accepts_the_types_read_back_unchanged() {
    let doc = full_document();
    let text = serde_json::to_string(&doc).expect("serialises");
    let back: Document = serde_json::from_str(&text).expect("reads back");
    assert_eq!(back, doc);
}
