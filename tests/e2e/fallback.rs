//! Fallback matching in real Envoy: with every rendered route renamed, no
//! `xds.route_name` is an entry of the document, so the filter finds each
//! request's entry by Gateway API matching on the `:authority`, `:path` and
//! `:method` it reads from the request's headers (docs/filter.md, "The
//! request path"), and enforces it as by name.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::stack::Stack;
use crate::headers::assert_request_headers_policy;
use crate::timeouts::basics;

use crate::harness::filter::stat;

/// Prefixes the name of every route of every virtual host in `value`;
/// returns how many it renamed.
fn rename(value: &mut Value) -> usize {
    let mut renamed = 0;
    match value {
        Value::Object(object) => {
            if let Some(Value::Array(hosts)) = object.get_mut("virtual_hosts") {
                for route in hosts
                    .iter_mut()
                    .flat_map(|host| host["routes"].as_array_mut().into_iter().flatten())
                {
                    if let Some(name) = route["name"].as_str() {
                        route["name"] = format!("renamed-{name}").into();
                        renamed += 1;
                    }
                }
            }
            renamed += object.values_mut().map(rename).sum::<usize>();
        }
        Value::Array(items) => renamed += items.iter_mut().map(rename).sum::<usize>(),
        _ => {}
    }
    renamed
}

fn rename_routes(bootstrap: &Path) {
    let text = std::fs::read_to_string(bootstrap).unwrap();
    let mut config: Value = serde_yaml_ng::from_str(&text).unwrap();
    assert!(rename(&mut config) > 0, "the bootstrap has no named route");
    std::fs::write(bootstrap, serde_yaml_ng::to_string(&config).unwrap()).unwrap();
}

#[test]
fn requests_envoy_routes_under_unknown_names_get_their_policy_by_fallback_matching() {
    let stack = Stack::start_patched(&basics(), &rename_routes);
    assert_request_headers_policy(&stack);
    let reply = stack.get(
        "/headers",
        &[("x-backend-respond-header", "x-internal: secret")],
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(reply.header_values("x-internal").is_empty());
    // A route without header policies is matched and left as it is.
    let plain = stack.get("/plain", &[("x-set", "client")]);
    assert_eq!(
        plain.echoed_header("x-set"),
        Some(vec!["client".to_owned()])
    );
    // The VM publishes its counts once a second.
    let started = Instant::now();
    let (by_name, by_fallback) = (
        stat("attache.requests.matched_by_name"),
        stat("attache.requests.matched_by_fallback"),
    );
    while stack.envoy.stat(&by_fallback) < 3 && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(stack.envoy.stat(&by_fallback), 3);
    assert_eq!(stack.envoy.stat(&by_name), 0);
}
