//! What the filter publishes about what it serves (docs/filter.md, "What
//! it serves"): the document's identity as a gauge, set at load whatever
//! form the document came in, and refusals counted by class.

use attache_contract::document_id::of_document;
use attache_contract::envelope::{seal, seal_chunks};
use attache_contract::{table, DataPlaneDocument};
use serde_json::{json, Value};

use super::*;
use crate::host::{Counter, Gauge};
use crate::plugin::{Generations, Plugin};

fn document(ms: u64) -> Vec<u8> {
    filter_bytes(&doc(json!([
        entry("r", json!({"timeouts": {"requestMs": ms}})),
        entry(
            "s",
            json!({"requestHeaders": {"set": [{"name": "x-t", "value": "v"}]}})
        )
    ])))
}

/// Every number as a double, as istiod hands a `pluginConfig` over.
fn as_doubles(value: Value) -> Value {
    match value {
        Value::Number(n) => json!(n.as_f64().unwrap()),
        Value::Array(items) => Value::Array(items.into_iter().map(as_doubles).collect()),
        Value::Object(map) => map.into_iter().map(|(k, v)| (k, as_doubles(v))).collect(),
        other => other,
    }
}

fn served_id(bytes: Vec<u8>) -> (bool, u64) {
    let mut host = FakeHost::default();
    let accepted = Plugin::default().configure(&mut host, &Generations::new(), bytes);
    (accepted, host.gauge(Gauge::DocumentId))
}

#[test]
fn every_form_of_one_document_publishes_the_identity_the_controller_computes() {
    let json = document(100);
    let parsed: DataPlaneDocument = serde_json::from_slice(&json).unwrap();
    // What the controller computes from the document it applied.
    let applied = of_document(&parsed);
    let table = table::encode(&parsed);
    let (cuts_table, cuts) = table::encode_with_cuts(&parsed);
    assert_eq!(cuts_table, table);
    let value: Value = serde_json::from_slice(&json).unwrap();
    let forms = [
        ("inline JSON", json.clone()),
        (
            "Istio's doubles",
            as_doubles(value.clone()).to_string().into_bytes(),
        ),
        (
            "a JSON string",
            Value::String(value.to_string()).to_string().into_bytes(),
        ),
        ("the table", table.clone()),
        ("sealed JSON", serde_json::to_vec(&seal(&json)).unwrap()),
        ("sealed table", serde_json::to_vec(&seal(&table)).unwrap()),
        (
            "the table in pieces",
            serde_json::to_vec(&seal_chunks(&table, &cuts)).unwrap(),
        ),
    ];
    for (form, bytes) in forms {
        assert_eq!(served_id(bytes), (true, applied), "{form}");
    }
    assert_ne!(served_id(document(200)).1, applied);
}

#[test]
fn an_update_moves_the_gauge_and_a_refused_one_leaves_it_and_counts_its_class() {
    let generations = Generations::new();
    let mut plugin = Plugin::default();
    let mut host = FakeHost::default();
    assert_eq!(host.gauge(Gauge::DocumentId), 0);
    assert!(plugin.configure(&mut host, &generations, document(100)));
    let first = host.gauge(Gauge::DocumentId);
    let first_config = plugin.current().unwrap();
    assert!(plugin.configure(&mut host, &generations, document(200)));
    let second = host.gauge(Gauge::DocumentId);
    assert_ne!(second, first);
    // The update kept the routes (the index and its groups' hash, reused):
    // the identity is still the one computed from the whole document.
    let parsed: DataPlaneDocument = serde_json::from_slice(&document(200)).unwrap();
    assert_eq!(second, of_document(&parsed));
    let current = plugin.current().unwrap();
    let reused = std::ptr::eq(first_config.index(), current.index());
    assert!(reused, "the update built its index again");

    let refusals = [
        (b"".to_vec(), Counter::RejectedSyntax),
        (b"not json".to_vec(), Counter::RejectedSyntax),
        (b"{}".to_vec(), Counter::RejectedSchema),
        (
            doc(json!([])).to_string().into_bytes(),
            Counter::RejectedSchema,
        ),
        (
            br#"{"encoding":"zlib+base64","length":4,"data":"!!"}"#.to_vec(),
            Counter::RejectedEncoding,
        ),
        (
            filter_bytes(&doc(json!([entry(
                "r",
                json!({"retry": {"codes": [200]}})
            )]))),
            Counter::RejectedInvalid,
        ),
    ];
    for (i, (bytes, class)) in refusals.into_iter().enumerate() {
        assert!(
            !plugin.configure(&mut host, &generations, bytes),
            "{class:?}"
        );
        assert_eq!(host.gauge(Gauge::DocumentId), second, "{class:?}");
        assert_eq!(host.count(Counter::ConfigsRejected), i as u64 + 1);
    }
    assert_eq!(host.count(Counter::RejectedSyntax), 2);
    assert_eq!(host.count(Counter::RejectedSchema), 2);
    assert_eq!(host.count(Counter::RejectedEncoding), 1);
    assert_eq!(host.count(Counter::RejectedInvalid), 1);
}

#[test]
fn requests_set_no_gauge() {
    let generations = Generations::new();
    let mut plugin = Plugin::default();
    let mut host = FakeHost::default();
    assert!(plugin.configure(&mut host, &generations, document(100)));
    assert_eq!(host.gauge_sets, 1);
    let mut request = FakeHost::request("h", "/", &[]).with_route_name("r");
    Stream::new(plugin.current(), plugin.generation()).on_request_headers(&mut request);
    assert_eq!(
        request.request_values("x-envoy-upstream-rq-timeout-ms"),
        ["100"]
    );
    assert_eq!(request.gauge_sets, 0);
}
