//! What the filter serves, read as the controller reads it: Envoy's
//! `/stats/prometheus` after the first load, after an ECDS update and after
//! a refused update (docs/filter.md, "What it serves").

use std::thread;
use std::time::{Duration, Instant};

use attache_controller::served::document::of_plugin;
use attache_controller::served::stats::{self, ProxyStats};
use serde_json::{json, Value};

use crate::harness::client;
use crate::harness::stack::{Fixture, Stack};
use crate::hot_reload::replace_configuration;

const WITHIN: Duration = Duration::from_secs(15);

fn scraped(stack: &Stack) -> ProxyStats {
    let reply = client::get(&format!("{}/stats/prometheus", stack.envoy.admin), &[]);
    assert_eq!(reply.status, 200, "{}", reply.body);
    stats::parse(&reply.body)
}

/// The filter's configuration in the ECDS file, as Envoy hands it over.
fn configuration(ecds: &Value) -> Option<String> {
    match ecds {
        Value::Object(map) => map
            .get("configuration")
            .and_then(|c| c["value"].as_str())
            .map(str::to_owned)
            .or_else(|| map.values().find_map(configuration)),
        Value::Array(items) => items.iter().find_map(configuration),
        _ => None,
    }
}

/// The identity the controller computes for a configuration text.
fn identity(text: &str) -> u64 {
    let config: Value = serde_json::from_str(text).unwrap();
    of_plugin(&json!({"spec": {"pluginConfig": config}})).unwrap()
}

fn write_ecds(stack: &Stack, ecds: &Value, name: &str) {
    let tmp = stack.dir().join(name);
    std::fs::write(&tmp, serde_json::to_string(ecds).unwrap()).unwrap();
    std::fs::rename(&tmp, &stack.ecds).unwrap();
}

fn wait_until(stack: &Stack, what: &str, done: impl Fn(&ProxyStats) -> bool) -> ProxyStats {
    let started = Instant::now();
    loop {
        let now = scraped(stack);
        if done(&now) {
            return now;
        }
        assert!(
            started.elapsed() < WITHIN,
            "{what}: still {now:?}; envoy log:\n{}",
            stack.envoy.log_tail()
        );
        thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn envoy_publishes_the_identity_it_serves_and_counts_what_it_refused() {
    // The controller reads what a WasmPlugin's .wasm publishes
    // (`wasmcustom.` stats); the module is not delivered that way.
    if crate::harness::filter::wasm_only(
        "envoy_publishes_the_identity_it_serves_and_counts_what_it_refused",
    ) {
        return;
    }
    let fixture = Fixture::named("reload", "infra/edge", &["shop/echo"]);
    let stack = Stack::start(&fixture);
    let text = std::fs::read_to_string(&stack.ecds).unwrap();
    let mut ecds: Value = serde_yaml_ng::from_str(&text).unwrap();
    let first = configuration(&ecds).expect("a filter configuration in the ECDS file");
    let first_id = identity(&first);
    let at_start = wait_until(&stack, "the first document", |s| {
        s.document == Some(first_id)
    });
    assert_eq!(at_start.refused, [0; 4]);

    // An update: another document, another identity, served.
    let mut doc: Value = serde_json::from_str(&first).unwrap();
    doc["gateway"] = json!("infra/edge-updated");
    let second = doc.to_string();
    let second_id = identity(&second);
    assert_ne!(second_id, first_id);
    assert!(replace_configuration(&mut ecds, &second));
    write_ecds(&stack, &ecds, "update.tmp");
    wait_until(&stack, "the update", |s| s.document == Some(second_id));

    // A refused update: the identity stays, the class's counter moves.
    let schema_1 = "{\"schemaVersion\": 1, \"gateway\": \"infra/edge\", \"routes\": []}";
    assert!(replace_configuration(&mut ecds, schema_1));
    write_ecds(&stack, &ecds, "refused.tmp");
    let refused = wait_until(&stack, "the refusal", |s| s.refused[1] > 0);
    assert_eq!(refused.document, Some(second_id));
    assert_eq!(refused.refused[0], 0);
    assert_eq!(refused.refused[3], 0);
    for _ in 0..5 {
        assert_eq!(scraped(&stack).document, Some(second_id));
    }
}
