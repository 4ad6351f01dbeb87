//! The peers' kinds through the CLI, on examples/peers: explain and status
//! name the source kind, unmapped fields are one note each, and
//! examples/peers/README.md shows what the commands really print.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
use support::{attache, text};

fn example(dir: &str) -> String {
    format!("{}/examples/peers/{dir}", env!("CARGO_MANIFEST_DIR"))
}

fn explain(dir: &str, route: &str) -> (String, String) {
    let out = attache(&["explain", "-f", &example(dir), "--route", route]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    (text(&out.stdout), text(&out.stderr))
}

#[test]
fn the_examples_readme_shows_what_explain_prints() {
    let readme = std::fs::read_to_string(format!(
        "{}/examples/peers/README.md",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    for (dir, route) in [
        ("kgateway", "shop/cart"),
        ("envoy-gateway", "apps/orders"),
        ("envoy-gateway", "apps/search"),
    ] {
        let (stdout, _) = explain(dir, route);
        let block = format!(
            "$ attache explain -f examples/peers/{dir} --route {route}\n{}",
            stdout.trim_end()
        );
        assert!(
            readme.contains(&block),
            "examples/peers/README.md no longer shows what `attache explain -f examples/peers/{dir} --route {route}` prints; regenerate it:\n{block}"
        );
    }
}

#[test]
fn explain_names_the_peer_kind_and_envoy_gateways_replacement() {
    let (orders, stderr) = explain("envoy-gateway", "apps/orders");
    assert!(
        orders.contains(
            "  timeout.http.requestTimeout: 5s\n    from BackendTrafficPolicy apps/orders (plain"
        ),
        "{orders}"
    );
    assert!(!orders.contains("retry."), "{orders}");
    assert!(orders.contains("note: BackendTrafficPolicy apps/gateway-wide @ Gateway apps/eg does not apply: BackendTrafficPolicy apps/orders replaces it whole"), "{orders}");
    // The unmapped field, and the retry count search leaves to Envoy
    // Gateway's stored default: one note each, naming policy and field.
    let notes: Vec<&str> = stderr.lines().filter(|l| l.starts_with("note:")).collect();
    assert_eq!(notes.len(), 2, "{stderr}");
    assert!(
        notes[0]
            .contains("BackendTrafficPolicy apps/gateway-wide: spec.circuitBreaker: Attaché does not enforce this field"),
        "{stderr}"
    );
    assert!(
        notes[1].contains(
            "BackendTrafficPolicy apps/search: spec.retry.numRetries: absent: Envoy Gateway's API server stores its default, 2"
        ),
        "{stderr}"
    );
}

#[test]
fn status_reports_peer_policies_under_their_own_kind() {
    let out = attache(&["status", "-f", &example("kgateway")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let yaml: serde_json::Value = serde_yaml_ng::from_str(&text(&out.stdout)).unwrap();
    // The policies, then the HTTPRoutes (their RouteParentStatus).
    let items: Vec<&serde_json::Value> = yaml["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] != "HTTPRoute")
        .collect();
    assert_eq!(items.len(), 3);
    for item in &items {
        assert_eq!(item["apiVersion"], "gateway.kgateway.dev/v1alpha1");
        assert_eq!(item["kind"], "TrafficPolicy");
        assert_eq!(item["status"]["conditions"][0]["reason"], "Accepted");
    }
    let checkout = items
        .iter()
        .find(|i| i["metadata"]["name"] == "checkout")
        .unwrap();
    // Selected by label: its ancestor is the HTTPRoute the selector found.
    assert_eq!(
        checkout["status"]["ancestors"][0]["ancestorRef"]["name"],
        "cart"
    );
}

#[test]
fn resolve_writes_the_peers_result_for_the_filter() {
    let out = attache(&["resolve", "-f", &example("envoy-gateway")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let route = |name: &str| {
        doc["routes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap()
    };
    let orders = route("http/apps/orders/0");
    assert_eq!(orders["timeouts"]["requestMs"], 5000);
    assert!(orders.get("retry").is_none(), "{orders}");
    let search = route("http/apps/search/0");
    assert_eq!(search["timeouts"]["backendRequestMs"], 1000);
    assert_eq!(search["retry"]["attempts"], 2);
    assert_eq!(search["retry"]["codes"], serde_json::json!([503]));
}
