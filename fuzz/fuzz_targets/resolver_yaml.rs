//! Arbitrary text as manifests: YAML documents through the resolver's
//! parse, resolve of every Gateway, explain of every entry, and status.
#![no_main]

use attache_core::source::{Origin, SourceDoc};
use libfuzzer_sys::fuzz_target;
use serde::Deserialize;

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    let mut docs = Vec::new();
    for (i, document) in serde_yaml_ng::Deserializer::from_str(text).enumerate().take(64) {
        let Ok(value) = serde_json::Value::deserialize(document) else {
            return;
        };
        let origin = Origin {
            file: "fuzz.yaml".into(),
            document: i + 1,
            item: None,
        };
        docs.push(SourceDoc { origin, value });
    }
    let inputs = attache_core::parse(&docs);
    let _ = attache_core::policy_status(&inputs);
    for key in inputs.gateways.keys() {
        let _ = attache_core::resolve(&inputs, key);
        for route in inputs.routes.keys() {
            let _ = attache_core::explain_route(&inputs, key, route);
        }
    }
});
