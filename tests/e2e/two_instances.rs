//! Two instances of the filter on one listener, as during the controller's
//! switch between Istio's WasmPlugin and TrafficExtension (both objects
//! live for a moment) or when the filter is deployed twice: every request
//! is enforced exactly once (docs/semantics.md, "The controller"). The
//! second instance is a separate VM with the same document, placed right
//! after the first, before the router.

use std::path::Path;

use crate::harness::stack::Stack;
use crate::timeouts::{assert_about, basics};

/// Inserts, after each listener's Attaché filter, a second one: the first
/// one's default configuration as a static filter with its own name and VM.
fn second_instance(bootstrap: &Path) {
    let text = std::fs::read_to_string(bootstrap).unwrap();
    let mut config: serde_json::Value = serde_yaml_ng::from_str(&text).unwrap();
    let mut patched = 0;
    for listener in config["static_resources"]["listeners"]
        .as_array_mut()
        .unwrap()
    {
        for chain in listener["filter_chains"].as_array_mut().unwrap() {
            for filter in chain["filters"].as_array_mut().unwrap() {
                let Some(http) = filter["typed_config"]["http_filters"].as_array_mut() else {
                    continue;
                };
                let first = http
                    .iter()
                    .position(|f| f["name"] == "attache")
                    .expect("the Attaché filter is in the chain");
                let mut copy = http[first]["config_discovery"]["default_config"].clone();
                // The Wasm filter: its own plugin and VM. The dynamic
                // module's configuration is only named by the filter.
                if copy.get("config").is_some() {
                    copy["config"]["name"] = "attache-second".into();
                    copy["config"]["vm_config"]["vm_id"] = "attache-second".into();
                }
                let second = serde_json::json!({"name": "attache-second", "typed_config": copy});
                http.insert(first + 1, second);
                patched += 1;
            }
        }
    }
    assert!(patched > 0, "no listener was given a second instance");
    std::fs::write(bootstrap, serde_yaml_ng::to_string(&config).unwrap()).unwrap();
}

#[test]
fn two_instances_on_one_listener_enforce_each_request_once() {
    let stack = Stack::start_patched(&basics(), &second_instance);
    // A route without an `add` (a timeout: a set of a control header) is
    // applied by both instances, without the mark, to the same effect: the
    // second re-sets what its strip would remove; nobody counts it as left
    // alone (asserted at the end).
    let slow = stack.get("/timeout", &[("x-backend-delay-ms", "2500")]);
    assert_eq!(slow.status, 504, "{}", slow.body);
    assert_about(slow.elapsed, std::time::Duration::from_millis(500));
    let quick = stack.get("/timeout", &[("x-backend-delay-ms", "300")]);
    assert_eq!(quick.status, 200, "{}", quick.body);
    const REQUESTS: u64 = 20;
    // The client's own `x-added`, and the backend's own `x-resp-added` on
    // the response: each instance would add the policy's value after them.
    const SENT: [(&str, &str); 2] = [
        ("x-added", "client"),
        ("x-backend-respond-header", "x-resp-added: backend"),
    ];
    for i in 0..REQUESTS {
        let reply = stack.get("/headers", &SENT);
        assert_eq!(reply.status, 200, "request {i}: {}", reply.body);
        assert_eq!(
            reply.echoed_header("x-added"),
            Some(vec!["client".to_owned(), "policy".to_owned()]),
            "request {i}: the add applied once"
        );
        assert_eq!(
            reply.header_values("x-resp-added"),
            ["backend", "policy"],
            "request {i}: the response add applied once"
        );
        assert_eq!(
            reply.echoed_header("x-set"),
            Some(vec!["policy".to_owned()]),
            "request {i}"
        );
    }
    // Each request was left alone by the other instance, which says so
    // (counters are published once a second).
    let stat = crate::harness::filter::stat("attache.requests.enforced_by_another_instance");
    let stat = stat.as_str();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while stack.envoy.stat(stat) < REQUESTS {
        assert!(
            std::time::Instant::now() < deadline,
            "{stat} = {} after {REQUESTS} requests",
            stack.envoy.stat(stat)
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(stack.envoy.stat(stat), REQUESTS);
}
