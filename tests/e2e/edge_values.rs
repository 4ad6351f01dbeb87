//! Every field the renderer writes from a tenant's input, at the edge of
//! what the resolver accepts, is accepted by Envoy's own `--mode validate`
//! (docs/semantics.md, "What Envoy would refuse"); and just past each edge
//! the resolver refuses the object, not Envoy the configuration.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::Path;

use attache_contract::safety;
use attache_core::re2_program::{program_size, ENVOY_MAX_PROGRAM_SIZE};

use crate::harness::envoy;
use crate::harness::generator::{self, RenderEnvoy};
use crate::harness::paths;
use crate::harness::scratch::Scratch;

/// A regex of `/rx/` and `n` ranges; its RE2 program is 8 + n.
fn ranges(n: usize) -> String {
    format!("/rx/[a-z]{{{n}}}")
}

/// The largest `ranges(n)` the resolver lets through.
fn regex_at_limit() -> String {
    let n = (1..200)
        .take_while(|&n| program_size(&ranges(n)).is_ok_and(|s| s <= ENVOY_MAX_PROGRAM_SIZE))
        .last()
        .unwrap();
    ranges(n)
}

fn label(c: char, len: usize) -> String {
    std::iter::repeat_n(c, len).collect()
}

/// The manifests: one Gateway, listeners on the lowest and highest ports,
/// one route per edge, and policies at the edges of their settings.
fn manifests(regex: &str, backoff: &str) -> String {
    // 253 characters: the longest DNS name (four labels of 63, three dots... minus one).
    let long_host = format!(
        "{}.{}.{}.{}",
        label('a', 63),
        label('b', 63),
        label('c', 63),
        label('d', 61)
    );
    assert_eq!(long_host.len(), 253);
    let value = "é".repeat(safety::MAX_HEADER_VALUE_BYTES / 2);
    // The longest header name a policy or a route may use (Gateway API's 256 bytes).
    let long_name = format!("x-{}", label('n', safety::MAX_HEADER_NAME_BYTES - 2));
    let gone_name = format!("x-{}", label('g', safety::MAX_HEADER_NAME_BYTES - 2));
    let long_path = format!("/{}", label('p', 1023));
    let mut yaml = String::new();
    write!(
        yaml,
        r#"apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {{name: attache}}
spec: {{controllerName: attache.dev/gateway-controller}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: edge, namespace: infra}}
spec:
  gatewayClassName: attache
  listeners:
  - {{name: low, port: 1, protocol: HTTP, allowedRoutes: {{namespaces: {{from: All}}}}}}
  - {{name: high, port: 65535, protocol: HTTP, hostname: "*.example.com", allowedRoutes: {{namespaces: {{from: All}}}}}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: edges, namespace: shop}}
spec:
  parentRefs: [{{name: edge, namespace: infra, sectionName: low}}]
  hostnames: ["{long_host}", "*.w.example.org"]
  rules:
  - name: regex
    matches:
    - path: {{type: RegularExpression, value: "{regex}"}}
      headers: [{{name: x-re, type: RegularExpression, value: "{regex}"}}]
      queryParams: [{{name: q, type: RegularExpression, value: "{regex}"}}]
    backendRefs: [{{name: echo, port: 1, weight: 1000000}}, {{name: other, port: 65535, weight: 0}}]
  - name: long
    matches:
    - path: {{type: PathPrefix, value: "{long_path}"}}
      method: OPTIONS
      headers: [{{name: "{long_name}", value: "{value}"}}]
    filters:
    - type: RequestHeaderModifier
      requestHeaderModifier:
        set: [{{name: "{long_name}", value: "{value}"}}]
        add: [{{name: x-add, value: "a	b c"}}]
        remove: ["{gone_name}"]
    - type: ResponseHeaderModifier
      responseHeaderModifier:
        set: [{{name: x-res, value: "{value}"}}]
    backendRefs:
    - name: echo
      port: 8080
      filters:
      - type: RequestHeaderModifier
        requestHeaderModifier: {{set: [{{name: "{long_name}", value: "{value}"}}], remove: [x-b]}}
  - name: exact
    matches: [{{path: {{type: Exact, value: /}}}}]
    timeouts: {{request: 99999h99999m99999s99999ms, backendRequest: 1ms}}
    retry: {{attempts: {max}, codes: [{lo}, {hi}], backoff: {backoff}}}
    backendRefs: [{{name: echo, port: 8080}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: wild, namespace: shop}}
spec:
  parentRefs: [{{name: edge, namespace: infra, sectionName: high}}]
  rules:
  - backendRefs: [{{name: echo, port: 8080}}]
---
apiVersion: policy.attache.dev/v1alpha1
kind: RoutePolicy
metadata: {{name: edges, namespace: shop}}
spec:
  targetRefs: [{{group: gateway.networking.k8s.io, kind: HTTPRoute, name: wild}}]
  defaults:
    retry: {{attempts: {max}, backoff: 99999h, retryOn: [reset]}}
    requestHeaderModifier: {{set: [{{name: "{long_name}", value: "{value}"}}]}}
"#,
        max = safety::MAX_RETRY_ATTEMPTS,
        lo = safety::RETRY_CODE_MIN,
        hi = safety::RETRY_CODE_MAX,
    )
    .unwrap();
    yaml
}

fn render_and_validate(input: &Path, scratch: &Scratch) -> std::process::Output {
    let ecds = scratch.join("edges.ecds.json");
    let bootstrap = scratch.join("edges.envoy.yaml");
    let wasm = paths::wasm();
    generator::render_ecds(input, "infra/edge", &wasm, &ecds);
    generator::render_envoy(&RenderEnvoy {
        input,
        gateway: "infra/edge",
        ecds: &ecds,
        wasm: &wasm,
        backends: vec![
            ("shop/echo".to_owned(), "127.0.0.1:1".to_owned()),
            ("shop/other".to_owned(), "127.0.0.1:65535".to_owned()),
        ],
        listener_ports: vec![],
        admin_port: 19902,
        out: &bootstrap,
    });
    envoy::validate(&bootstrap)
}

#[test]
fn envoy_validates_every_rendered_field_at_its_edge() {
    let scratch = Scratch::new("edge-values");
    let input = scratch.join("edges.yaml");
    std::fs::write(&input, manifests(&regex_at_limit(), "1ms")).unwrap();
    // Nothing is dropped: every route and policy above resolves.
    let doc = generator::resolve(&input, "infra/edge");
    let mut names: Vec<&str> = doc["routes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "high/shop/wild/0",
            "low/shop/edges/exact",
            "low/shop/edges/long",
            "low/shop/edges/regex",
        ],
        "{doc:#}"
    );
    let output = render_and_validate(&input, &scratch);
    assert!(
        output.status.success(),
        "envoy --mode validate rejected the edge-value bootstrap:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn just_past_the_edges_the_resolver_refuses_and_the_rest_still_validates() {
    let scratch = Scratch::new("edge-values-past");
    let input = scratch.join("past.yaml");
    let at_limit = regex_at_limit();
    let past = format!("{at_limit}x");
    std::fs::write(&input, manifests(&past, "0s")).unwrap();
    let output = generator::run([
        OsString::from("resolve"),
        "-f".into(),
        input.clone().into(),
        "--gateway".into(),
        "infra/edge".into(),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    // One error for the route whose regex is one instruction over, one for
    // the route's zero back-off (the route is dropped whole, as any invalid
    // route), and nothing about the policy or the other route.
    assert!(
        stderr.contains("HTTPRoute shop/edges: spec.rules[0].matches[0].path.value: regex")
            && stderr.contains("Envoy refuses more than 100"),
        "{stderr}"
    );
    assert!(
        stderr.contains("spec.rules[2].retry.backoff: \"0s\" is not a back-off"),
        "{stderr}"
    );
    let validated = render_and_validate(&input, &scratch);
    assert!(
        validated.status.success(),
        "the routes left must still validate:\n{}",
        String::from_utf8_lossy(&validated.stderr)
    );
}
