//! Status writes per edit with confirmation on, through the real loop
//! against the stand-in API server (issue 45: at most one write per policy
//! per change of what is served). examples/shop plus [`BULK`] routes on
//! the `edge` Gateway, each with its own policy, three fake proxies. An
//! edit of one policy writes that policy's status (`Pending`, then
//! `Programmed`: at most two) and no other policy's: every other policy's
//! values are the same in the document served and the one applied
//! (docs/status.md, "Which policies go Pending").
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail by panicking

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use attache_apiserver::{Handle, KindSpec};
use attache_controller::kube::scrape::ScrapeOptions;
use attache_controller::reconcile::Config;
use common::proxies::{applied_id, pod_of, proxies, set, Answer, Shared};
use common::standin::{eventually, free_port, shop_server, start_controller_tuned, writes_since};
use serde_json::{json, Value};

/// Routes (and policies) added to examples/shop.
const BULK: usize = 40;
/// The policy the edit changes.
const EDITED: &str = "bulk-17";

/// A route of its own on edge's `admin` listener, and a policy on it (a
/// header: the listener's own policy overrides timeouts).
fn bulk(i: usize) -> [Value; 2] {
    let name = format!("bulk-{i}");
    [
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": name, "namespace": "infra"},
            "spec": {"parentRefs": [{"name": "edge", "sectionName": "admin"}],
                     "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": format!("/{name}")}}],
                                "backendRefs": [{"name": "up", "port": 80}]}]}}),
        json!({"apiVersion": "policy.attache.dev/v1alpha1", "kind": "RoutePolicy",
            "metadata": {"name": name, "namespace": "infra"},
            "spec": {"targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": name}],
                     "defaults": {"requestHeaderModifier": {"set": [{"name": "x-bulk", "value": name}]}}}}),
    ]
}

fn serve_all(fakes: &[(std::net::IpAddr, Shared)], id: u64) {
    for (_, fake) in fakes {
        set(fake, Answer::Serves { id, invalid: 0 });
    }
}

/// Whether bulk policy `name` is Programmed, served by all three, for
/// `generation`.
fn programmed(server: &Handle, name: &str, generation: u64) -> bool {
    let Some(policy) = server.object("policy.attache.dev", "routepolicies", "infra", name) else {
        return false;
    };
    let conditions = policy["status"]["ancestors"][0]["conditions"].as_array();
    conditions.into_iter().flatten().any(|c| {
        c["type"] == "Programmed"
            && c["status"] == "True"
            && c["observedGeneration"] == generation
            && c["message"]
                .as_str()
                .is_some_and(|m| m.ends_with("served by 3 of 3 replicas"))
    })
}

/// Status writes since `since`, by object name.
fn status_writes(server: &Handle, since: Instant) -> BTreeMap<String, usize> {
    let mut by_name = BTreeMap::new();
    for write in writes_since(server, since) {
        let Some(path) = write.split(' ').nth(1) else {
            continue;
        };
        if let Some(name) = path
            .strip_suffix("/status")
            .and_then(|p| p.rsplit('/').next())
        {
            *by_name.entry(name.to_string()).or_default() += 1;
        }
    }
    by_name
}

#[tokio::test]
async fn an_edit_writes_the_edited_policy_only() {
    let server = shop_server().await;
    server.serve_kind(KindSpec::new("", "v1", "Pod", "pods", true).with_status());
    server.seed((0..BULK).flat_map(bulk)).unwrap();
    let (port, fakes) = proxies(&[8, 9, 10]).await;
    let pods = fakes
        .iter()
        .enumerate()
        .map(|(i, (ip, _))| pod_of("edge", i, *ip));
    server.seed(pods).unwrap();
    let scraping = ScrapeOptions {
        port,
        timeout: Duration::from_millis(300),
        ..ScrapeOptions::default()
    };
    let _controller =
        start_controller_tuned(&server, "writes", free_port(), Config::default(), |o| {
            o.lease = None;
            o.debounce = Duration::from_millis(300);
            o.served = Some(scraping);
        });
    let first = || {
        server.object(
            "extensions.istio.io",
            "wasmplugins",
            "infra",
            "attache-edge",
        )
    };
    eventually("edge's plugin applied", || first().is_some()).await;
    serve_all(&fakes, applied_id(&server));
    let deadline = Instant::now() + Duration::from_secs(30);
    while !(0..BULK).all(|i| programmed(&server, &format!("bulk-{i}"), 1)) {
        let policy = server.object("policy.attache.dev", "routepolicies", "infra", "bulk-0");
        assert!(
            Instant::now() < deadline,
            "not every bulk policy Programmed: {:#}",
            policy.map_or(Value::Null, |p| p["status"].clone())
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let before = applied_id(&server);
    // Quiet first: the cold start's writes are not the edit's.
    tokio::time::sleep(Duration::from_secs(2)).await;

    let edit = Instant::now();
    let mut policy = server
        .object("policy.attache.dev", "routepolicies", "infra", EDITED)
        .unwrap();
    policy["spec"]["defaults"]["requestHeaderModifier"]["set"][0]["value"] = json!("edited");
    server.seed([policy]).unwrap();
    eventually("the edit applied", || applied_id(&server) != before).await;
    // The edited policy goes Pending while no replica serves the new
    // document; give the controller time to write it.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let served = Instant::now();
    serve_all(&fakes, applied_id(&server));
    eventually(
        "the edited policy Programmed for its new generation",
        || programmed(&server, EDITED, 2),
    )
    .await;
    let to_status = served.elapsed();
    tokio::time::sleep(Duration::from_secs(3)).await;

    let writes = status_writes(&server, edit);
    eprintln!("status writes per edit: {writes:?}; served -> Programmed {to_status:?}");
    let edited = writes.get(EDITED).copied().unwrap_or(0);
    assert!((1..=2).contains(&edited), "{writes:?}");
    let others: Vec<_> = writes.iter().filter(|(name, _)| *name != EDITED).collect();
    assert!(others.is_empty(), "other policies written: {others:?}");
    // Every other bulk policy kept its condition: Programmed, served by all.
    assert!((0..BULK)
        .all(|i| programmed(&server, &format!("bulk-{i}"), 1) || format!("bulk-{i}") == EDITED));
}
