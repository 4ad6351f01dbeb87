//! Resolve on generated topologies: routes in trees of three (parent >
//! child > grandchild delegation), policies spread over GatewayClass,
//! Namespace, Gateway, listener, HTTPRoute and rule levels.
//!
//! Run: cargo bench -p attache-core --bench resolve -- --sample-size 10

use std::hint::black_box;

use attache_core::source::{Origin, SourceDoc};
use attache_core::topology::ObjectKey;
use attache_core::{parse, resolve};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use serde_json::{json, Value};

const NAMESPACES: usize = 20;
const LISTENERS: usize = 4;

fn doc(i: usize, value: Value) -> SourceDoc {
    SourceDoc {
        origin: Origin {
            file: "generated.yaml".into(),
            document: i + 1,
            item: None,
        },
        value,
    }
}

fn ts(i: usize) -> String {
    format!("2024-01-01T00:{:02}:{:02}Z", (i / 60) % 60, i % 60)
}

/// `routes` HTTPRoutes (a third each parents, children, grandchildren) and
/// `policies` policies, deterministic.
pub fn topology(routes: usize, policies: usize) -> Vec<SourceDoc> {
    let mut values = vec![
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass", "metadata": {"name": "gc"}}),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
               "metadata": {"name": "edge", "namespace": "infra"},
               "spec": {"gatewayClassName": "gc", "listeners": (0..LISTENERS).map(|l| json!({
                   "name": format!("l{l}"), "port": 8000 + l, "protocol": "HTTP",
                   "allowedRoutes": {"namespaces": {"from": "All"}}})).collect::<Vec<_>>()}}),
    ];
    let trees = routes / 3;
    for t in 0..trees {
        values.extend(route_tree(t));
    }
    for i in 0..policies {
        values.push(policy(i, trees));
    }
    values
        .into_iter()
        .enumerate()
        .map(|(i, v)| doc(i, v))
        .collect()
}

/// One delegation tree `p{t}` -> `c{t}` -> `g{t}`: three routes, three entries.
fn route_tree(t: usize) -> Vec<Value> {
    let mut out = Vec::new();
    let ns = format!("ns{}", t % NAMESPACES);
    let delegate = |name: String| json!({"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": name});
    out.push(json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": format!("p{t}"), "namespace": ns, "creationTimestamp": ts(t)},
        "spec": {"parentRefs": [{"name": "edge", "namespace": "infra", "sectionName": format!("l{}", t % LISTENERS)}],
                 "rules": [{"name": "deleg", "matches": [{"path": {"type": "PathPrefix", "value": format!("/t{t}")}}],
                            "backendRefs": [delegate(format!("c{t}"))], "timeouts": {"request": "20s"}}]}}));
    out.push(json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": format!("c{t}"), "namespace": ns,
                     "annotations": {"kgateway.dev/inherited-policy-priority": "DeepMergePreferParent"}},
        "spec": {"rules": [
            {"name": "deleg", "backendRefs": [delegate(format!("g{t}"))],
             "filters": [{"type": "RequestHeaderModifier", "requestHeaderModifier": {"set": [{"name": "x-tree", "value": "child"}]}}]},
            {"name": "own", "backendRefs": [{"name": "svc", "port": 80}]}]}}));
    out.push(json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": format!("g{t}"), "namespace": ns},
        "spec": {"rules": [
            {"name": "a", "backendRefs": [{"name": "svc", "port": 80}], "retry": {"attempts": 2}},
            {"name": "b", "backendRefs": [{"name": "svc", "port": 80}],
             "filters": [{"type": "RequestHeaderModifier", "requestHeaderModifier": {"set": [{"name": "x-tree", "value": "leaf"}]}}]}]}}));
    out
}

/// Policy `pol{i}`: a setting by `i % 4`, a target level by `i % 10`.
fn policy(i: usize, trees: usize) -> Value {
    let stanza = if i % 3 == 0 { "overrides" } else { "defaults" };
    let settings = match i % 4 {
        0 => json!({"timeouts": {"request": format!("{}s", 1 + i % 30)}}),
        1 => json!({"retry": {"attempts": i % 5, "codes": [502, 503], "backoff": "100ms"}}),
        2 => {
            json!({"requestHeaderModifier": {"set": [{"name": format!("x-p{}", i % 7), "value": format!("v{i}")}]}})
        }
        _ => json!({"timeouts": {"backendRequest": format!("{}ms", 100 + i)}}),
    };
    let t = (i * 7919) % trees.max(1);
    let ns = format!("ns{}", t % NAMESPACES);
    // Mostly route and rule targets, some at the shared upper levels.
    let (kind, namespace, target) = match i % 10 {
        0 => (
            "ClusterRoutePolicy",
            None,
            json!({"group": "gateway.networking.k8s.io", "kind": "GatewayClass", "name": "gc"}),
        ),
        1 => (
            "RoutePolicy",
            Some("infra".to_string()),
            json!({"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "edge"}),
        ),
        2 => (
            "RoutePolicy",
            Some("infra".to_string()),
            json!({"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "edge", "sectionName": format!("l{}", i % LISTENERS)}),
        ),
        3 => (
            "RoutePolicy",
            Some("infra".to_string()),
            json!({"group": "", "kind": "Namespace", "name": "infra"}),
        ),
        4 | 5 => (
            "RoutePolicy",
            Some(ns.clone()),
            json!({"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": format!("p{t}")}),
        ),
        6 => (
            "RoutePolicy",
            Some(ns.clone()),
            json!({"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": format!("c{t}"), "sectionName": "deleg"}),
        ),
        _ => (
            "RoutePolicy",
            Some(ns.clone()),
            json!({"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": format!("g{t}")}),
        ),
    };
    let mut metadata = json!({"name": format!("pol{i}"), "creationTimestamp": ts(i)});
    if let Some(ns) = namespace {
        metadata["namespace"] = json!(ns);
    }
    json!({"apiVersion": "policy.attache.dev/v1alpha1", "kind": kind, "metadata": metadata,
           "spec": {"targetRefs": [target], stanza: settings}})
}

fn bench(c: &mut Criterion) {
    let gateway = ObjectKey {
        namespace: "infra".into(),
        name: "edge".into(),
    };
    let mut group = c.benchmark_group("parse_and_resolve");
    for (routes, policies) in [(1_000, 200), (2_000, 400), (10_000, 2_000), (20_000, 4_000)] {
        let docs = topology(routes, policies);
        // Sanity outside the timing: the topology resolves and is non-trivial.
        let inputs = parse(&docs);
        let entries = resolve(&inputs, &gateway)
            .map(|r| r.resolution.document.routes.len())
            .unwrap_or(0);
        assert_eq!(entries, routes / 3 * 3, "one entry per leaf rule");
        group.bench_with_input(
            BenchmarkId::from_parameter(format!("{routes}r_{policies}p")),
            &docs,
            |b, docs| {
                b.iter(|| {
                    let inputs = parse(black_box(docs));
                    black_box(
                        resolve(&inputs, &gateway).map(|r| r.resolution.document.routes.len()),
                    )
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
