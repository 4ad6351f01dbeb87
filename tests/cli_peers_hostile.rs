//! The peers' kinds through the CLI beyond examples/peers: Envoy Gateway's
//! JSONMerge, a kgateway PreferParent annotation, and hostile manifests.
//! Each bad policy is one line on stderr naming file, document, policy and
//! the peer's field, and a good policy in the same input still applies.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
use support::{attache, scratch, text};

/// Gateway `apps/gw` (annotated with `gateway_annotations`, a YAML flow
/// mapping) and HTTPRoute `apps/r` labelled `tier: web`, then `policies`.
fn world(gateway_annotations: &str, policies: &str) -> String {
    format!(
        r#"apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {{name: gc}}
spec: {{controllerName: example.com/c}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: gw, namespace: apps, annotations: {gateway_annotations}}}
spec:
  gatewayClassName: gc
  listeners: [{{name: http, protocol: HTTP, port: 80}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: r, namespace: apps, labels: {{tier: web}}}}
spec:
  parentRefs: [{{name: gw}}]
  rules:
    - matches: [{{path: {{type: PathPrefix, value: /}}}}]
{policies}"#
    )
}

const ON_GATEWAY: &str = "[{group: gateway.networking.k8s.io, kind: Gateway, name: gw}]";
const ON_ROUTE: &str = "[{group: gateway.networking.k8s.io, kind: HTTPRoute, name: r}]";

fn policy(kind: &str, name: &str, annotations: &str, spec: &str) -> String {
    let group = if kind == "TrafficPolicy" {
        "gateway.kgateway.dev"
    } else {
        "gateway.envoyproxy.io"
    };
    format!(
        "---\napiVersion: {group}/v1alpha1\nkind: {kind}\nmetadata: {{name: {name}, namespace: apps, annotations: {annotations}}}\nspec:\n{spec}"
    )
}

/// Writes `yaml` to `<scratch>/in.yaml` and runs `attache <args> -f` on it.
fn run(label: &str, yaml: &str, args: &[&str]) -> (String, String, String) {
    let path = scratch(label).join("in.yaml");
    std::fs::write(&path, yaml).unwrap();
    let file = path.to_str().unwrap().to_string();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["-f", &file]);
    let out = attache(&all);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    (text(&out.stdout), text(&out.stderr), file)
}

fn route(stdout: &str) -> serde_json::Value {
    let doc: serde_json::Value = serde_json::from_str(stdout).unwrap();
    doc["routes"][0].clone()
}

#[test]
fn json_merge_merges_the_route_policy_onto_the_gateways() {
    let yaml = world(
        "{}",
        &(policy(
            "BackendTrafficPolicy",
            "gw-wide",
            "{}",
            &format!("  targetRefs: {ON_GATEWAY}\n  timeout: {{http: {{requestTimeout: 15s}}}}\n  retry: {{numRetries: 3, retryOn: {{httpStatusCodes: [503]}}}}\n"),
        ) + &policy(
            "BackendTrafficPolicy",
            "route",
            "{}",
            &format!("  targetRefs: {ON_ROUTE}\n  mergeType: JSONMerge\n  retry: {{retryOn: {{httpStatusCodes: [502]}}}}\n"),
        )),
    );
    let (stdout, stderr, _) = run("peers-json-merge", &yaml, &["resolve"]);
    // The route policy's retry leaves numRetries to the stored default.
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("BackendTrafficPolicy apps/route: spec.retry.numRetries: absent: Envoy Gateway's API server stores its default, 2"), "{stderr}");
    let r = route(&stdout);
    // The route's list replaces the Gateway's whole, its stored count (2)
    // beats the Gateway's 3, and the rest is filled.
    assert_eq!(r["retry"]["codes"], serde_json::json!([502]));
    assert_eq!(r["retry"]["attempts"], 2);
    assert_eq!(r["timeouts"]["requestMs"], 15000);
    let (explain, _, _) = run(
        "peers-json-merge-explain",
        &yaml,
        &["explain", "--route", "apps/r"],
    );
    assert!(
        explain.contains("BackendTrafficPolicy apps/gw-wide (merged under a more specific mergeType @ Gateway apps/gw)"),
        "{explain}"
    );
}

#[test]
fn shallow_merge_prefer_parent_lets_the_gateways_traffic_policy_win() {
    let yaml = world(
        "{kgateway.dev/inherited-policy-priority: ShallowMergePreferParent}",
        &(policy(
            "TrafficPolicy",
            "gw-wide",
            "{}",
            &format!("  targetRefs: {ON_GATEWAY}\n  timeouts: {{request: 20s}}\n"),
        ) + &policy(
            "TrafficPolicy",
            "route",
            "{}",
            &format!(
                "  targetRefs: {ON_ROUTE}\n  timeouts: {{request: 5s}}\n  retry: {{attempts: 1}}\n"
            ),
        )),
    );
    let (stdout, stderr, _) = run("peers-prefer-parent", &yaml, &["resolve"]);
    assert!(stderr.is_empty(), "{stderr}");
    let r = route(&stdout);
    assert_eq!(r["timeouts"]["requestMs"], 20000);
    assert_eq!(r["retry"]["attempts"], 1);
    assert_eq!(
        r["sources"]["timeouts.requestMs"],
        "TrafficPolicy apps/gw-wide (plain, ShallowMergePreferParent @ Gateway apps/gw)"
    );
}

#[test]
fn hostile_peer_policies_are_one_line_each_and_the_good_one_applies() {
    let yaml = world(
        "{}",
        &[
            policy(
                "TrafficPolicy",
                "heavy",
                "{kgateway.dev/policy-weight: \"99999999999999999999\"}",
                &format!("  targetRefs: {ON_ROUTE}\n  retry: {{attempts: 3}}\n"),
            ),
            policy(
                "BackendTrafficPolicy",
                "deep",
                "{}",
                &format!("  targetRefs: {ON_ROUTE}\n  mergeType: Deep\n  timeout: {{http: {{requestTimeout: 1s}}}}\n"),
            ),
            policy(
                "TrafficPolicy",
                "map",
                "{}",
                "  targetSelectors: {group: gateway.networking.k8s.io, kind: HTTPRoute, matchLabels: {tier: web}}\n  timeouts: {request: 1s}\n",
            ),
            policy(
                "BackendTrafficPolicy",
                "kgateway-shape",
                "{}",
                &format!("  targetRefs: {ON_ROUTE}\n  retry: {{retryOn: [5xx]}}\n"),
            ),
            policy(
                "TrafficPolicy",
                "good",
                "{}",
                &format!("  targetRefs: {ON_GATEWAY}\n  timeouts: {{request: 6s}}\n"),
            ),
        ]
        .concat(),
    );
    let (stdout, stderr, file) = run("peers-hostile", &yaml, &["resolve"]);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines,
        [
            format!("warning: {file} (document 4) TrafficPolicy apps/heavy: metadata.annotations[kgateway.dev/policy-weight]: \"99999999999999999999\" is out of range (a 64-bit integer); weight 0 is used; use an integer such as \"10\"; higher wins inside a level"),
            format!("error: {file} (document 5) BackendTrafficPolicy apps/deep: spec.mergeType: mergeType is StrategicMerge or JSONMerge; leave it out to have the most specific policy replace the others whole"),
            format!("error: {file} (document 6) TrafficPolicy apps/map: spec.targetSelectors: an object where a list is expected; write targetSelectors as a list: one `- {{group: ..., kind: ...}}` item per target"),
            format!("error: {file} (document 7) BackendTrafficPolicy apps/kgateway-shape: spec.retry.retryOn: a list where an object is expected; write spec.retry.retryOn as an object with httpStatusCodes, triggers (docs/peers.md)"),
        ],
        "{stderr}"
    );
    let r = route(&stdout);
    // `good` applies; `heavy` is valid with weight 0, the bad ones are out.
    assert_eq!(r["timeouts"]["requestMs"], 6000);
    assert_eq!(r["retry"]["attempts"], 3);
    assert!(r["timeouts"].get("backendRequestMs").is_none(), "{r}");
}
