//! Which rule serves a request after the filter writes its headers
//! (SEMANTICS.md section 14: a policy never changes which rule serves a
//! request). Envoy's Wasm host clears the route cache on every request-
//! header write, so the router matches again with the policy's headers; the
//! dynamic module writes through the dynamic-modules ABI, which does not
//! clear it, and never calls `clear_route_cache`: the rule the request
//! first matched serves it.
//!
//! The bootstrap gets a route placed before every other, matching the
//! header the `shop/headers` policy sets (`x-set: policy`) and answering
//! 299 itself. A request without that header first matches the policy's
//! route; only a re-match after the filter's write reaches the 299.

use std::path::Path;

use crate::harness::filter::{build, Build};
use crate::harness::stack::Stack;
use crate::timeouts::basics;

/// Inserts the trap route first in every virtual host of the bootstrap.
fn trap_route(bootstrap: &Path) {
    let text = std::fs::read_to_string(bootstrap).unwrap();
    let mut config: serde_json::Value = serde_yaml_ng::from_str(&text).unwrap();
    let trap = serde_json::json!({
        "name": "trap",
        "match": {
            "prefix": "/headers",
            "headers": [{"name": "x-set", "string_match": {"exact": "policy"}}]
        },
        "direct_response": {"status": 299, "body": {"inline_string": "re-matched"}}
    });
    let mut trapped = 0;
    for listener in config["static_resources"]["listeners"]
        .as_array_mut()
        .unwrap()
    {
        for chain in listener["filter_chains"].as_array_mut().unwrap() {
            for filter in chain["filters"].as_array_mut().unwrap() {
                let hosts = &mut filter["typed_config"]["route_config"]["virtual_hosts"];
                for host in hosts.as_array_mut().into_iter().flatten() {
                    host["routes"]
                        .as_array_mut()
                        .unwrap()
                        .insert(0, trap.clone());
                    trapped += 1;
                }
            }
        }
    }
    assert!(trapped > 0, "no virtual host was given the trap route");
    std::fs::write(bootstrap, serde_yaml_ng::to_string(&config).unwrap()).unwrap();
}

#[test]
fn the_rule_a_request_first_matched_serves_it_unless_the_host_rematches() {
    let stack = Stack::start_patched(&basics(), &trap_route);
    // The trap itself works: a client sending the header is answered by it.
    let direct = stack.get("/headers", &[("x-set", "policy")]);
    assert_eq!(direct.status, 299, "{}", direct.body);
    let reply = stack.get("/headers", &[]);
    match build() {
        // The module: no re-match; the policy's route served it, with the
        // header the policy set.
        Build::DynamicModule => {
            assert_eq!(reply.status, 200, "{}", reply.body);
            assert_eq!(
                reply.echoed_header("x-set"),
                Some(vec!["policy".to_owned()])
            );
        }
        // The .wasm: Envoy's Wasm host re-matched after the write (the
        // documented behaviour the resolver's section-14 refusal covers).
        Build::Wasm => assert_eq!(reply.status, 299, "{}", reply.body),
    }
}
