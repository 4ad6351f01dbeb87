//! The incremental reconcile against the stand-in API server (issue 30,
//! item 2): an edit under one Gateway reconciles that Gateway only, as the
//! per-Gateway metric counts; a burst of 1,000 policy edits within 10 s
//! gives at most one apply per Gateway per coalescing window, ends equal
//! to a round from scratch, and writes no storm.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail by panicking

use std::time::{Duration, Instant};

use attache_apiserver::Verb;
use attache_controller::reconcile::Config;
use serde_json::json;

mod common;
use common::standin::{
    edit_policy, free_port, metrics, series, shop_server, start_controller_with, until_converged,
};

/// Two more Gateways of examples/shop's class, in a namespace of their
/// own, with a route and a policy each.
fn neighbours() -> Vec<serde_json::Value> {
    let mut objects =
        vec![json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "side"}})];
    for name in ["side-a", "side-b"] {
        objects.push(json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
            "metadata": {"name": name, "namespace": "side"},
            "spec": {"gatewayClassName": "attache", "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}}));
        objects.push(json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": name, "namespace": "side"},
            "spec": {"parentRefs": [{"name": name}], "rules": [{"backendRefs": [{"name": "svc", "port": 80}]}]}}));
        objects.push(json!({"apiVersion": "policy.attache.dev/v1alpha1", "kind": "RoutePolicy",
            "metadata": {"name": name, "namespace": "side"},
            "spec": {"targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": name}],
                "defaults": {"timeouts": {"request": "3s"}}}}));
    }
    objects
}

fn reconciles(text: &str, gateway: &str) -> f64 {
    series(
        text,
        &format!("attache_gateway_reconciles_total{{gateway=\"{gateway}\"}}"),
    )
}

#[tokio::test]
async fn an_edit_under_one_of_three_gateways_reconciles_that_gateway_only() {
    let server = shop_server().await;
    server.seed(neighbours()).unwrap();
    let port = free_port();
    let controller = start_controller_with(&server, "many", port, Config::default());
    until_converged(&server, Duration::from_secs(60)).await;
    let before = metrics(port).await;
    for gateway in ["infra/edge", "side/side-a", "side/side-b"] {
        assert!(reconciles(&before, gateway) >= 1.0, "{gateway} reconciled");
    }
    // The storefront's policy: on a route of infra/edge only.
    edit_policy(&server, "shop", "storefront", "7s");
    let deadline = Instant::now() + Duration::from_secs(30);
    let after = loop {
        let text = metrics(port).await;
        if reconciles(&text, "infra/edge") > reconciles(&before, "infra/edge") {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "infra/edge not reconciled:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    until_converged(&server, Duration::from_secs(30)).await;
    // Time for any further round the writes might cause (none should
    // resolve a Gateway again).
    tokio::time::sleep(Duration::from_secs(1)).await;
    let settled = metrics(port).await;
    assert_eq!(
        reconciles(&settled, "infra/edge"),
        reconciles(&before, "infra/edge") + 1.0,
        "infra/edge reconciled once for one edit (first seen: {})",
        reconciles(&after, "infra/edge")
    );
    for gateway in ["side/side-a", "side/side-b"] {
        assert_eq!(
            reconciles(&settled, gateway),
            reconciles(&before, gateway),
            "{gateway} is not reconciled for an edit under infra/edge"
        );
    }
    controller.abort();
}

/// The coalescing window of this test's controller: the quiet time that
/// ends a burst, and the longest a burst may delay a round.
const DEBOUNCE: Duration = Duration::from_millis(200);
const MAX_DELAY: Duration = Duration::from_secs(1);

#[tokio::test]
async fn a_burst_of_a_thousand_policy_edits_writes_no_storm() {
    let server = shop_server().await;
    let port = free_port();
    let options = |o: &mut attache_controller::kube::Options| {
        o.debounce = DEBOUNCE;
        o.max_delay = MAX_DELAY;
    };
    let controller =
        common::standin::start_controller_tuned(&server, "burst", port, Config::default(), options);
    until_converged(&server, Duration::from_secs(60)).await;
    let log = server.log();
    let applies_before = log.count(Verb::Apply, "wasmplugins", None);
    let statuses_before = log.count(Verb::Patch, "routepolicies", Some("status"));
    let written_before = log.count_ok(Verb::Patch, "routepolicies", Some("status"));
    let route_policies = server.objects("policy.attache.dev", "routepolicies").len();
    let rounds_before = series(&metrics(port).await, "attache_reconciles_total");
    // 1,000 edits in 10 s, round-robin over four policies of examples/shop.
    let policies = [
        ("shop", "storefront"),
        ("shop", "checkout-retries"),
        ("infra", "edge-defaults"),
        ("deals", "deals-listeners"),
    ];
    let started = Instant::now();
    for i in 0..1000u32 {
        let (namespace, name) = policies[i as usize % policies.len()];
        edit_policy(&server, namespace, name, &format!("{}ms", 1000 + i));
        let due = started + Duration::from_millis(10 * u64::from(i + 1));
        tokio::time::sleep_until(due.into()).await;
    }
    let burst = started.elapsed();
    until_converged(&server, Duration::from_secs(60)).await;
    let log = server.log();
    let applies = (log.count(Verb::Apply, "wasmplugins", None) - applies_before) as usize;
    let statuses =
        (log.count(Verb::Patch, "routepolicies", Some("status")) - statuses_before) as usize;
    let written =
        (log.count_ok(Verb::Patch, "routepolicies", Some("status")) - written_before) as usize;
    // A round at most once per window while edits keep coming (each round
    // applies a Gateway at most once), one more for the edits after the
    // last round, one for a retry.
    let windows = (burst.as_millis() / MAX_DELAY.as_millis()) as usize + 3;
    assert!(
        (1..=windows).contains(&applies),
        "{applies} applies of infra/edge's plugin for a burst of {burst:?} ({windows} windows)"
    );
    // A status is written at most once per round, each policy whose status
    // an edit changed (the edited ones, and those the edit made win or
    // lose a field); a write the edits overtook is a 409, re-read and
    // tried again, at most three tries in all.
    assert!(
        written <= windows * route_policies,
        "{written} status writes for {route_policies} policies in {windows} windows"
    );
    assert!(
        statuses <= 3 * windows * route_policies,
        "{statuses} status tries for {route_policies} policies in {windows} windows"
    );
    let metrics = metrics(port).await;
    let rounds = series(&metrics, "attache_reconciles_total") - rounds_before;
    assert!(
        rounds <= windows as f64 + 4.0,
        "{rounds} rounds for a burst of {burst:?}"
    );
    controller.abort();
}
