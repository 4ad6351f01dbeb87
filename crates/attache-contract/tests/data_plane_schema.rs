//! The committed JSON Schema of the data-plane encoding
//! (docs/schema/data-plane-2.json, which borrows schema-1's definitions) and
//! the types must describe the same document: an encoded document validates,
//! each kind of invalid value the schema promises to catch is caught, and
//! what the schema accepts reads back unchanged.

// Test code, helpers included (clippy.toml exempts only #[test] fns).
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use attache_contract::*;
use serde_json::{json, Value};

fn parse(text: &str) -> Value {
    serde_json::from_str(text).expect("schema is JSON")
}

/// Serves schema-1.json, the only document data-plane-2.json refers to.
struct Schema1;

impl jsonschema::Retrieve for Schema1 {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        assert_eq!(uri.as_str(), "https://attache.dev/schema/schema-1.json");
        Ok(parse(include_str!("../../../docs/schema/schema-1.json")))
    }
}

fn schema() -> jsonschema::Validator {
    let schema_2 = parse(include_str!("../../../docs/schema/data-plane-2.json"));
    jsonschema::options()
        .with_retriever(Schema1)
        .build(&schema_2)
        .expect("schema compiles")
}

fn encoded() -> DataPlaneDocument {
    let header = |name: &str, value: &str| Header {
        name: name.into(),
        value: value.into(),
    };
    let entry = |rule: &str| RouteEntry {
        name: route_entry_name("http", "shop", "checkout", rule),
        listener: "http".into(),
        listener_set: None,
        listener_set_kind: None,
        route_namespace: "shop".into(),
        route_name: "checkout".into(),
        rule: rule.into(),
        hostnames: vec!["shop.example.com".into()],
        matches: vec![HttpRouteMatch {
            path: Some(PathMatch {
                kind: PathMatchType::PathPrefix,
                value: "/a".into(),
            }),
            method: Some("POST".into()),
            ..HttpRouteMatch::default()
        }],
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
                set: vec![header("x-a", "1")],
                add: vec![header("x-b", "summer,winter")],
                remove: vec!["x-c".into()],
            }),
            response_headers: Some(HeaderChanges::default()),
        },
        ..RouteEntry::default()
    };
    let bare = RouteEntry {
        name: route_entry_name("http", "shop", "bare", "0"),
        ..RouteEntry::default()
    };
    DataPlaneDocument::encode(&Document {
        schema_version: SCHEMA_VERSION,
        gateway: "infra/edge".into(),
        options: Options {
            trust_client_control_headers: true,
            istio_route_names: true,
            listener_ports: [("http".to_string(), 80)].into_iter().collect(),
        },
        routes: vec![entry("0"), entry("1"), bare],
    })
}

#[test]
fn an_encoded_document_is_valid() {
    let doc = serde_json::to_value(encoded()).expect("serialises");
    support::assert_valid(&schema(), &doc);
}

#[test]
fn the_schema_rejects_what_the_contract_forbids() {
    let validator = schema();
    let base = serde_json::to_value(encoded()).expect("serialises");
    let cases = [
        ("schema version 1", "/schemaVersion", json!(1)),
        ("negative profile index", "/groups/0/profile", json!(-1)),
        (
            "a pair of three",
            "/profiles/0/requestHeaders/set/0",
            json!([0, 1, 2]),
        ),
        (
            "a string index",
            "/profiles/0/requestHeaders/remove/0",
            json!("x-c"),
        ),
        (
            "status code out of range",
            "/profiles/0/retry/codes/0",
            json!(600),
        ),
        (
            "route name without four parts",
            "/groups/0/routes/0/name",
            json!("checkout"),
        ),
    ];
    support::assert_rejects(&validator, &base, &cases);
}

#[test]
fn what_the_schema_accepts_the_types_read_back_unchanged() {
    let doc = encoded();
    assert_eq!(doc.profiles.len(), 1, "two routes share one profile");
    assert_eq!(
        doc.groups.len(),
        2,
        "and one group; the bare route has its own"
    );
    let text = serde_json::to_string(&doc).expect("serialises");
    let back: DataPlaneDocument = serde_json::from_str(&text).expect("reads back");
    assert_eq!(back, doc);
}
