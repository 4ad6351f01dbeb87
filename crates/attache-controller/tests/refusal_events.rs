//! A policy's request-header change refused on a rule (docs/semantics.md,
//! "A policy never changes which rule serves a request") is a Warning
//! Event on the policy, once while it holds, through the real controller
//! against the stand-in API server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail by panicking

use std::time::Duration;

use serde_json::{json, Value};

mod common;
use common::standin::{
    edit_policy, eventually, free_port, shop_server, start_controller, until_converged,
};

/// Events the controller published with `reason`.
fn events(server: &attache_apiserver::Handle, reason: &str) -> Vec<Value> {
    server
        .objects("events.k8s.io", "events")
        .into_iter()
        .filter(|e| e["reason"] == reason)
        .collect()
}

#[tokio::test]
async fn a_refused_header_change_is_one_warning_event_on_the_policy() {
    let server = shop_server().await;
    // examples/shop's storefront has a rule that matches on x-beta.
    server
        .seed([json!({
            "apiVersion": "policy.attache.dev/v1alpha1",
            "kind": "RoutePolicy",
            "metadata": {"name": "steer", "namespace": "shop"},
            "spec": {
                "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "storefront"}],
                "defaults": {"requestHeaderModifier": {"set": [{"name": "x-beta", "value": "true"}]}}
            }
        })])
        .unwrap();
    let controller = start_controller(&server, "refusal", free_port());
    until_converged(&server, Duration::from_secs(60)).await;
    eventually("the HeaderChangeRefused Event", || {
        !events(&server, "HeaderChangeRefused").is_empty()
    })
    .await;
    let all = events(&server, "HeaderChangeRefused");
    let event = &all[0];
    assert_eq!(event["type"], "Warning", "{event}");
    assert_eq!(event["regarding"]["kind"], "RoutePolicy", "{event}");
    assert_eq!(event["regarding"]["name"], "steer", "{event}");
    assert_eq!(event["regarding"]["namespace"], "shop", "{event}");
    let note = event["note"].as_str().unwrap();
    assert!(
        note.contains("requestHeaders.set.x-beta")
            && note.contains("HTTPRoute shop/storefront rule beta"),
        "{note}"
    );
    let first = all.len();

    // Another round (an unrelated edit) says nothing new about it.
    edit_policy(&server, "shop", "storefront", "7s");
    until_converged(&server, Duration::from_secs(60)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        events(&server, "HeaderChangeRefused").len(),
        first,
        "once while it holds"
    );
    controller.abort();
}
