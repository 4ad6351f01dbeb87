//! Arbitrary input never crashes the resolver: objects of every kind it
//! reads, with random (mostly wrong) shapes in their spec, go through
//! parse, resolve, explain and status, which report instead of panicking.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use attache_core::source::{Origin, SourceDoc};
use attache_core::{explain_route, parse, policy_status, resolve};
use common::key;
use proptest::prelude::*;
use serde_json::{json, Value};

/// Field names the resolver looks for, so random values land where they matter.
const KEYS: &[&str] = &[
    "name",
    "namespace",
    "sectionName",
    "port",
    "group",
    "kind",
    "listeners",
    "protocol",
    "hostname",
    "allowedRoutes",
    "namespaces",
    "from",
    "selector",
    "matchLabels",
    "parentRefs",
    "hostnames",
    "rules",
    "matches",
    "path",
    "type",
    "value",
    "filters",
    "backendRefs",
    "timeouts",
    "request",
    "backendRequest",
    "retry",
    "attempts",
    "codes",
    "backoff",
    "retryOn",
    "targetRefs",
    "targetRef",
    "defaults",
    "overrides",
    "requestHeaderModifier",
    "set",
    "add",
    "remove",
    "gatewayClassName",
    "weight",
    // The peers' kinds (model/peers.rs).
    "targetSelectors",
    "headerModifiers",
    "statusCodes",
    "perTryTimeout",
    "timeout",
    "http",
    "requestTimeout",
    "numRetries",
    "perRetry",
    "mergeType",
];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-700i64..70000).prop_map(Value::from),
        prop_oneof![
            Just("edge"),
            Just("gw"),
            Just("r"),
            Just("1s"),
            Just("1.5s"),
            Just("http"),
            Just("/"),
            Just("HTTPRoute"),
            Just("Gateway"),
            Just("All"),
            Just("Selector"),
            Just("x a"),
            Just("503"),
            Just("")
        ]
        .prop_map(Value::from),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            proptest::collection::vec((proptest::sample::select(KEYS), inner), 0..6).prop_map(
                |pairs| {
                    Value::Object(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
                }
            ),
        ]
    })
}

fn object() -> impl Strategy<Value = Value> {
    let kinds = proptest::sample::select(vec![
        ("gateway.networking.k8s.io/v1", "Gateway"),
        ("gateway.networking.k8s.io/v1", "HTTPRoute"),
        ("gateway.networking.k8s.io/v1beta1", "GatewayClass"),
        ("v1", "Namespace"),
        ("policy.attache.dev/v1alpha1", "RoutePolicy"),
        ("policy.attache.dev/v1alpha1", "ClusterRoutePolicy"),
        ("gateway.kgateway.dev/v1alpha1", "TrafficPolicy"),
        ("gateway.envoyproxy.io/v1alpha1", "BackendTrafficPolicy"),
        ("v1", "ConfigMap"),
    ]);
    (kinds, proptest::sample::select(vec!["edge", "gw", "r", "p"]), value()).prop_map(|((api, kind), name, spec)| {
        json!({"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": "ns"}, "spec": spec})
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_objects_are_reported_not_crashed_on(objects in proptest::collection::vec(object(), 0..12)) {
        let docs: Vec<SourceDoc> = objects
            .into_iter()
            .enumerate()
            .map(|(i, value)| SourceDoc { origin: Origin { file: "fuzz.yaml".into(), document: i + 1, item: None }, value })
            .collect();
        let inputs = parse(&docs);
        for gw in inputs.gateways.keys() {
            let resolved = resolve(&inputs, gw).unwrap();
            for entry in &resolved.resolution.document.routes {
                let route = key(&format!("{}/{}", entry.route_namespace, entry.route_name));
                prop_assert!(!explain_route(&inputs, gw, &route).unwrap().is_empty());
            }
        }
        let status = policy_status(&inputs);
        prop_assert_eq!(status.policies.len(), inputs.policies.len());
    }
}
