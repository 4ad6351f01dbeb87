//! The enforcement matrix: every scalar setting of the core's table
//! (`attache_core::field::FieldKey::scalars`), written alone in a policy,
//! must change what reaches Envoy on each data plane:
//!
//! - plain Envoy: the filter's operations for the request, or the rendered
//!   route;
//! - Istio: the filter's operations (the route is istiod's), or the setting
//!   is declared not enforced there with its reason
//!   (`DataPlane::not_enforced`), and that declaration must be true.
//!
//! A new row in the table fails here until it is enforced (or declared not
//! enforced under Istio), rather than compiling and being silently dropped.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use attache_core::contract::RouteEntry;
use attache_core::field::FieldKey;
use attache_core::source::{Origin, SourceDoc};
use attache_core::topology::ObjectKey;
use attache_core::{parse, resolve_for, DataPlane};
use attache_filter::ops::HeaderOp;
use attache_filter::route::CompiledRoute;
use attache_render::backends::AddressBook;
use attache_render::resources::{gateway_resources, ListenerOptions};
use serde_json::{json, Value};

/// Two one-field policy settings for a scalar key, differing only in its
/// value: what reaches Envoy must differ between them, so a setting that is
/// dropped cannot hide behind another that the same stanza implies (a
/// retry section's default triggers). Exhaustive over [`FieldKey`]: a new
/// key does not compile until it has its pair here.
fn one_field(key: &FieldKey) -> [Value; 2] {
    match key {
        FieldKey::RequestTimeout => [
            json!({"timeouts": {"request": "7s"}}),
            json!({"timeouts": {"request": "8s"}}),
        ],
        FieldKey::BackendRequestTimeout => [
            json!({"timeouts": {"backendRequest": "2s"}}),
            json!({"timeouts": {"backendRequest": "3s"}}),
        ],
        FieldKey::RetryAttempts => [
            json!({"retry": {"attempts": 3}}),
            json!({"retry": {"attempts": 4}}),
        ],
        FieldKey::RetryCodes => [
            json!({"retry": {"codes": [503]}}),
            json!({"retry": {"codes": [502]}}),
        ],
        FieldKey::RetryBackoff => [
            json!({"retry": {"backoff": "40ms"}}),
            json!({"retry": {"backoff": "80ms"}}),
        ],
        FieldKey::RetryOn => [
            json!({"retry": {"retryOn": ["reset"]}}),
            json!({"retry": {"retryOn": ["connect-failure"]}}),
        ],
        FieldKey::HeaderSet(..) | FieldKey::HeaderAdd(..) | FieldKey::HeaderRemove(_) => {
            panic!("{key} is a header key, one per name, not a scalar of the table")
        }
    }
}

fn doc(value: Value, document: usize) -> SourceDoc {
    SourceDoc {
        origin: Origin {
            file: "matrix.yaml".into(),
            document,
            item: None,
        },
        value,
    }
}

/// A Gateway with one HTTP listener and one route, and the policy's
/// settings (if any) as `defaults` on that route.
fn input(settings: Option<Value>) -> Vec<SourceDoc> {
    let mut docs = vec![
        doc(
            json!({
                "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
                "metadata": {"namespace": "infra", "name": "edge"},
                "spec": {"gatewayClassName": "attache",
                         "listeners": [{"name": "http", "port": 8080, "protocol": "HTTP",
                                        "allowedRoutes": {"namespaces": {"from": "All"}}}]}
            }),
            1,
        ),
        doc(
            json!({
                "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
                "metadata": {"namespace": "shop", "name": "web"},
                "spec": {"parentRefs": [{"name": "edge", "namespace": "infra"}],
                         "rules": [{"backendRefs": [{"name": "web", "port": 80}]}]}
            }),
            2,
        ),
    ];
    if let Some(settings) = settings {
        docs.push(doc(
            json!({
                "apiVersion": "policy.attache.dev/v1alpha1", "kind": "RoutePolicy",
                "metadata": {"namespace": "shop", "name": "one-field"},
                "spec": {"targetRefs": [{"group": "gateway.networking.k8s.io",
                                         "kind": "HTTPRoute", "name": "web"}],
                         "defaults": settings}
            }),
            3,
        ));
    }
    docs
}

/// What reaches Envoy for the route: the filter's request operations and
/// the rendered Envoy route.
struct Applied {
    request_ops: Vec<HeaderOp>,
    route: Value,
}

fn applied(settings: Option<Value>, data_plane: DataPlane) -> Applied {
    let inputs = parse(&input(settings));
    let gateway = ObjectKey {
        namespace: "infra".into(),
        name: "edge".into(),
    };
    let resolved = resolve_for(&inputs, &gateway, data_plane).unwrap();
    let warnings: Vec<String> = resolved.diagnostics.iter().map(|d| d.to_string()).collect();
    let [entry]: [RouteEntry; 1] = resolved
        .resolution
        .document
        .routes
        .clone()
        .try_into()
        .unwrap();
    let request_ops = CompiledRoute::render(&entry.settings).request_ops.to_vec();
    let mut book = AddressBook::default();
    book.overrides.add("*=127.0.0.1:9000").unwrap();
    let options = ListenerOptions {
        listen_address: "0.0.0.0".into(),
        listener_ports: Default::default(),
    };
    let resources = gateway_resources(&resolved.resolution, &book, &options).unwrap();
    let routes = &resources.listeners[0].chains[0].route_config["virtual_hosts"][0]["routes"];
    assert_eq!(routes.as_array().map(Vec::len), Some(1), "{warnings:?}");
    Applied {
        request_ops,
        route: routes[0].clone(),
    }
}

#[test]
fn every_scalar_setting_is_enforced_or_declared_not_enforced() {
    let mut problems = Vec::new();
    for data_plane in [DataPlane::Envoy, DataPlane::Istio] {
        for key in FieldKey::scalars() {
            let [one, other] = one_field(key).map(|v| applied(Some(v), data_plane));
            let ops_change = one.request_ops != other.request_ops;
            let route_change = one.route != other.route;
            let declared = data_plane.not_enforced(key);
            let enforced = match data_plane {
                DataPlane::Envoy => ops_change || route_change,
                // istiod writes the route under Istio: only the filter counts.
                DataPlane::Istio => ops_change,
            };
            match (enforced, declared) {
                (true, None) | (false, Some(_)) => {}
                (false, None) => problems.push(format!(
                    "{key} under {data_plane:?}: two policies that differ only in it give the same filter operations and the same route; enforce it (attache-filter control.rs, attache-render resources.rs `envoy_route`) or declare it in DataPlane::not_enforced with the reason"
                )),
                (true, Some(reason)) => problems.push(format!(
                    "{key} under {data_plane:?} is enforced but declared not enforced ({reason}); drop it from DataPlane::not_enforced"
                )),
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_one_field_policy_reaches_envoy_at_all() {
    // Against no policy: the samples are read (a typo would leave both of
    // a pair without effect and equal).
    for data_plane in [DataPlane::Envoy, DataPlane::Istio] {
        let none = applied(None, data_plane);
        for key in FieldKey::scalars() {
            let [one, _] = one_field(key).map(|v| applied(Some(v), data_plane));
            assert!(
                one.request_ops != none.request_ops || one.route != none.route,
                "{key} under {data_plane:?}"
            );
        }
    }
}

#[test]
fn the_matrix_sees_a_setting_the_filter_does_not_apply() {
    // The check itself can fail: the back-off changes only the route, so
    // under Istio, where only the filter counts, it must be declared.
    let [one, other] =
        one_field(&FieldKey::RetryBackoff).map(|v| applied(Some(v), DataPlane::Istio));
    assert_eq!(one.request_ops, other.request_ops);
    assert_ne!(one.route, other.route);
    assert!(DataPlane::Istio
        .not_enforced(&FieldKey::RetryBackoff)
        .is_some_and(|why| why.contains("istiod")));
    assert_eq!(DataPlane::Envoy.not_enforced(&FieldKey::RetryBackoff), None);
}
