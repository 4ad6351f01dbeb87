//! Every document the generator writes loads in the filter: routes and
//! policies are generated with good and bad hostnames, paths, regexes,
//! methods, header matches, timeouts, retries and header changes; whatever
//! the resolver keeps, the filter must compile (a refused document would
//! freeze every route of the Gateway at the last good one). The resolver
//! refuses bad routes and policies itself (tests/route_syntax.rs,
//! tests/validation.rs); this checks it refuses at least what the filter does.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use attache_core::{resolve, resolve_for, select_gateway, DataPlane};
use attache_filter::CompiledConfig;
use common::*;
use proptest::prelude::*;

const GATEWAY: &str = r#"
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: edge, namespace: shop}
spec:
  gatewayClassName: gc
  listeners:
  - {name: http, port: 80, protocol: HTTP}
  - {name: api, port: 8080, protocol: HTTP, hostname: "*.example.com"}
"#;

fn hostname() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "shop.example.com",
        "*.example.com",
        "a.b.example.com",
        "Shop.Example.com",
        "shop.example.com:8080",
        "*",
        "bad host",
        "-a.com",
    ])
}

fn path() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "{type: PathPrefix, value: /}",
        "{type: PathPrefix, value: /api/}",
        "{type: Exact, value: /a}",
        "{type: PathPrefix, value: api}",
        "{type: RegularExpression, value: \"/v[0-9]+\"}",
        "{type: RegularExpression, value: \"/a(\"}",
        "{type: RegularExpression, value: \"\\\\p{Greek}\"}",
    ])
}

fn extra() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "",
        ", method: GET",
        ", method: \"GET POST\"",
        ", headers: [{name: x-a, value: v}]",
        ", headers: [{name: \"x a\", value: v}]",
        ", headers: [{name: x-a, type: RegularExpression, value: \"[\"}]",
        ", queryParams: [{name: q, type: RegularExpression, value: \"a+\"}]",
    ])
}

/// GRPCRoute matches, good and bad (docs/semantics.md, "GRPCRoute").
fn grpc_match() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "{method: {service: shop.v1.Cart, method: Add}}",
        "{method: {service: shop.v1.Cart}}",
        "{method: {method: Add}, headers: [{name: x-a, value: v}]}",
        "{method: {type: RegularExpression, service: \"shop\\\\..*|a\", method: \"A.*\"}}",
        "{method: {type: RegularExpression, method: \"((\"}}",
        "{method: {service: \"shop/v1\"}}",
        "{method: {type: Exact}}",
        "{headers: [{name: x-b, value: w}]}",
    ])
}

fn settings() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "timeouts: {request: 10s, backendRequest: 20s}",
        "timeouts: {request: 1h}",
        "timeouts: {request: banana}",
        "retry: {attempts: 3, codes: [503, 504], backoff: 100ms, retryOn: [reset]}",
        "retry: {attempts: 99}",
        "retry: {codes: [200]}",
        "retry: {retryOn: [\"5xx,reset\"]}",
        "requestHeaderModifier: {set: [{name: x-a, value: \"1\"}], remove: [x-b]}",
        "requestHeaderModifier: {set: [{name: host, value: evil}]}",
        "responseHeaderModifier: {add: [{name: x-c, value: \"a\\nb\"}]}",
    ])
}

/// One route `shop/r<i>` and one policy on it (or on the Gateway).
fn objects() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(hostname(), 0..3),
        prop::collection::vec((path(), extra()), 0..3),
        settings(),
        any::<bool>(),
        prop::option::of(prop::collection::vec(grpc_match(), 0..3)),
    )
        .prop_map(|(hosts, matches, settings, on_gateway, grpc)| {
            let hosts: Vec<String> = hosts.iter().map(|h| format!("\"{h}\"")).collect();
            let (kind, matches) = match grpc {
                // A GRPCRoute instead, with method matches.
                Some(methods) => ("GRPCRoute", methods.iter().map(|m| m.to_string()).collect()),
                None => (
                    "HTTPRoute",
                    matches
                        .iter()
                        .map(|(p, x)| format!("{{path: {p}{x}}}"))
                        .collect::<Vec<String>>(),
                ),
            };
            let target = if on_gateway {
                "{group: gateway.networking.k8s.io, kind: Gateway, name: edge}".to_string()
            } else {
                format!("{{group: gateway.networking.k8s.io, kind: {kind}, name: R}}")
            };
            format!(
                r#"---
apiVersion: gateway.networking.k8s.io/v1
kind: {kind}
metadata: {{name: R, namespace: shop}}
spec:
  parentRefs: [{{name: edge}}]
  hostnames: [{}]
  rules:
  - matches: [{}]
    backendRefs: [{{name: svc, port: 80}}]
---
apiVersion: policy.attache.dev/v1alpha1
kind: RoutePolicy
metadata: {{name: P, namespace: shop}}
spec:
  targetRefs: [{target}]
  defaults: {{{settings}}}
"#,
                hosts.join(", "),
                matches.join(", ")
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn the_filter_loads_every_document_the_resolver_writes(
        objects in prop::collection::vec(objects(), 1..4)
    ) {
        let mut yaml = GATEWAY.to_string();
        for (i, o) in objects.iter().enumerate() {
            yaml.push_str(&o.replace("name: R", &format!("name: r{i}")).replace("name: P", &format!("name: p{i}")));
        }
        let inputs = inputs(&yaml);
        let gw = select_gateway(&inputs, None).unwrap();
        for resolved in [resolve(&inputs, &gw), resolve_for(&inputs, &gw, DataPlane::Istio)] {
            let document = resolved.unwrap().resolution.document;
            // The filter reads the data-plane encoding, as `attache render` writes it.
            let bytes = serde_json::to_vec(&attache_contract::DataPlaneDocument::encode(&document)).unwrap();
            let loaded = CompiledConfig::from_bytes(&bytes);
            prop_assert!(loaded.is_ok(), "{:?}\n{yaml}", loaded.err());
        }
    }
}
