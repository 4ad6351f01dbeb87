//! The generator's real output on the shipped example (Gateway infra/edge)
//! validates against the committed JSON Schema.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // test helpers fail by panicking

use serde_json::Value;

mod support;
use support::{attache_ok, workspace};

fn validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(workspace().join("docs/schema/schema-1.json"))
        .expect("schema file");
    jsonschema::validator_for(&serde_json::from_str(&text).expect("schema is JSON"))
        .expect("schema compiles")
}

fn resolve(dir: &str, gateway: &str) -> Value {
    let out = attache_ok(&["resolve", "-f", dir, "--gateway", gateway]);
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}

#[test]
fn example_shop_output_matches_the_schema() {
    let doc = resolve("examples/shop", "infra/edge");
    let routes = doc["routes"].as_array().map_or(0, Vec::len);
    assert!(routes > 0, "the example resolves to no routes: {doc}");
    let errors: Vec<String> = validator()
        .iter_errors(&doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "generator output breaks the schema: {errors:#?}"
    );
}
