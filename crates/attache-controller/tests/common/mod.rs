//! The fixture both test files share.
#![allow(dead_code, clippy::unwrap_used)]

use attache_controller::kinds::named;
use serde_json::{json, Value};

/// examples/shop, each object as the API returns it.
pub fn shop() -> Vec<Value> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/shop");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    paths.sort();
    let mut docs = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        attache_input::parse_text(&path.display().to_string(), &text, &mut docs).unwrap();
    }
    docs.into_iter()
        .map(|d| {
            let mut v = d.value;
            let name = v["metadata"]["name"].as_str().unwrap_or("").to_string();
            v["metadata"]["uid"] = json!(format!("uid-{name}"));
            v["metadata"]["resourceVersion"] = json!("1");
            v["metadata"]["generation"] = json!(1);
            v
        })
        .filter(|v| named(v["kind"].as_str().unwrap_or("")).is_some())
        .collect()
}

pub mod proxies;
pub mod standin;
