//! Every mapped field of the peers' kinds survives YAML -> document, for
//! any value (the tables in model/peers.rs drive the property).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use attache_core::contract::RouteEntry;
use attache_core::model::peers::{BACKEND_TRAFFIC_POLICY, TRAFFIC_POLICY};
use common::peers::*;
use common::*;
use proptest::prelude::*;

/// A value for one of the project's settings, and how the entry shows it.
fn value_for(ours: &str) -> BoxedStrategy<(serde_json::Value, String)> {
    let duration =
        (1u64..=90).prop_map(|s| (serde_json::json!(format!("{s}s")), format!("{}", s * 1000)));
    match ours {
        "timeouts.request" | "timeouts.backendRequest" | "retry.backoff" => duration.boxed(),
        "retry.attempts" => (1u32..=5)
            .prop_map(|n| (serde_json::json!(n), n.to_string()))
            .boxed(),
        "retry.codes" => (400u16..=599)
            .prop_map(|c| (serde_json::json!([c]), format!("[{c}]")))
            .boxed(),
        "retry.retryOn" => {
            prop::sample::select(vec!["5xx", "gateway-error", "reset", "retriable-4xx"])
                .prop_map(|t| (serde_json::json!([t]), t.to_string()))
                .boxed()
        }
        _ => "[a-z][a-z0-9]{0,8}"
            .prop_map(|v| (serde_json::json!({"set": [{"name": "x-p", "value": v}]}), v))
            .boxed(),
    }
}

/// What the entry holds for one setting, in the form `value_for` gives.
fn shown(e: &RouteEntry, ours: &str) -> Option<String> {
    let t = e.timeouts.clone().unwrap_or_default();
    let r = e.retry.clone().unwrap_or_default();
    match ours {
        "timeouts.request" => t.request_ms.map(|v| v.to_string()),
        "timeouts.backendRequest" => t.backend_request_ms.map(|v| v.to_string()),
        "retry.backoff" => r.backoff_ms.map(|v| v.to_string()),
        "retry.attempts" => r.attempts.map(|v| v.to_string()),
        "retry.codes" => r.codes.map(|c| format!("{c:?}").replace(' ', "")),
        "retry.retryOn" => r.retry_on.and_then(|w| w.first().cloned()),
        "requestHeaderModifier" => set_header(e, "x-p"),
        _ => response_set(e, "x-p"),
    }
}

fn set_path(root: &mut serde_json::Value, path: &str, value: serde_json::Value) {
    let mut at = root;
    for part in path.split('.') {
        at = at
            .as_object_mut()
            .unwrap()
            .entry(part)
            .or_insert(serde_json::json!({}));
    }
    *at = value;
}

fn round_trip(
    kind: &str,
    mapping: &attache_core::model::peers::Mapping,
    value: serde_json::Value,
    expect: &str,
) -> Result<(), TestCaseError> {
    let mut spec = serde_json::json!({"targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "r"}]});
    set_path(&mut spec, mapping.theirs, value);
    let group = if kind == "TrafficPolicy" {
        "gateway.kgateway.dev"
    } else {
        "gateway.envoyproxy.io"
    };
    let doc = serde_json::json!({"apiVersion": format!("{group}/v1alpha1"), "kind": kind, "metadata": {"name": "p", "namespace": "apps"}, "spec": spec});
    let yaml = world(None, "") + "---\n" + &doc.to_string() + "\n";
    let r = resolved(&yaml);
    let e = entry(&r, A);
    prop_assert_eq!(
        shown(e, mapping.ours),
        Some(expect.to_string()),
        "{} {}",
        kind,
        mapping.theirs
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn every_mapped_traffic_policy_field_reaches_the_document(
        (i, (value, expect)) in (0..TRAFFIC_POLICY.len()).prop_flat_map(|i| (Just(i), value_for(TRAFFIC_POLICY[i].ours)))
    ) {
        round_trip("TrafficPolicy", &TRAFFIC_POLICY[i], value, &expect)?;
    }

    #[test]
    fn every_mapped_backend_traffic_policy_field_reaches_the_document(
        (i, (value, expect)) in (0..BACKEND_TRAFFIC_POLICY.len()).prop_flat_map(|i| (Just(i), value_for(BACKEND_TRAFFIC_POLICY[i].ours)))
    ) {
        round_trip("BackendTrafficPolicy", &BACKEND_TRAFFIC_POLICY[i], value, &expect)?;
    }
}
