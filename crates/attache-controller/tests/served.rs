//! Programmed means served, through the real loop against the stand-in API
//! server: three proxy pods of examples/shop's Gateway, each a fake stats
//! endpoint on its own loopback address that answers what the test makes
//! it serve, as istiod and the filter would (docs/controller.md,
//! "Programmed means served"). Programmed once all serve, Pending while
//! one lags, Rejected when one refuses, back after recovery, hostile
//! endpoints read as unknown within the timeout, a killed replica leaves
//! the ready set with one write.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail by panicking

mod common;

use std::net::IpAddr;
use std::time::{Duration, Instant};

use attache_apiserver::{Handle, KindSpec};
use attache_controller::kube::scrape::ScrapeOptions;
use attache_controller::reconcile::Config;
use attache_controller::served::document::of_plugin;
use common::proxies::{applied_id, pod_of, proxies, set, Answer};
use common::standin::{
    edit_policy, eventually, free_port, shop_server, start_controller_tuned, writes_since,
};
use serde_json::{json, Value};

fn pod(i: usize, ip: IpAddr) -> Value {
    pod_of("edge", i, ip)
}

/// The `Programmed` condition of `shop/storefront` at its first ancestor.
fn programmed(server: &Handle) -> Option<Value> {
    programmed_of(server, "shop", "storefront")
}

fn programmed_of(server: &Handle, namespace: &str, name: &str) -> Option<Value> {
    let policy = server.object("policy.attache.dev", "routepolicies", namespace, name)?;
    let conditions = policy["status"]["ancestors"][0]["conditions"].as_array()?;
    conditions
        .iter()
        .find(|c| c["type"] == "Programmed")
        .cloned()
}

/// Whether the condition has `reason` (or, for "True", any reason of a
/// True condition: storefront is PartiallyProgrammed) and says `words`.
fn says(server: &Handle, reason: &str, words: &str) -> bool {
    programmed(server).is_some_and(|c| {
        let matches = if reason == "True" {
            c["status"] == "True"
        } else {
            c["reason"] == reason
        };
        matches && c["message"].as_str().unwrap_or("").contains(words)
    })
}

#[tokio::test]
async fn programmed_follows_what_the_replicas_serve() {
    let server = shop_server().await;
    server.serve_kind(KindSpec::new("", "v1", "Pod", "pods", true).with_status());
    let (port, fakes) = proxies(&[2, 3, 4]).await;
    let pods: Vec<Value> = fakes
        .iter()
        .enumerate()
        .map(|(i, (ip, _))| pod(i, *ip))
        .collect();
    server.seed(pods.clone()).unwrap();
    let scraping = ScrapeOptions {
        port,
        timeout: Duration::from_millis(300),
        max_bytes: 256 * 1024,
        ..ScrapeOptions::default()
    };
    let started = Instant::now();
    let _controller =
        start_controller_tuned(&server, "served", free_port(), Config::default(), |o| {
            o.lease = None;
            o.served = Some(scraping);
        });

    // Applied, served by none: Pending, naming the counts; written once
    // (the first round waits for the first reading instead of guessing).
    eventually("Pending before any replica serves", || {
        says(&server, "Pending", "served by 0 of 3 replicas")
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let cold: Vec<String> = writes_since(&server, started)
        .into_iter()
        .filter(|w| w.contains("/storefront/status"))
        .collect();
    assert_eq!(cold.len(), 1, "{cold:#?}");
    let first = applied_id(&server);
    for (_, fake) in &fakes {
        set(
            fake,
            Answer::Serves {
                id: first,
                invalid: 0,
            },
        );
    }
    eventually("Programmed once all serve", || {
        says(&server, "True", "served by 3 of 3 replicas")
    })
    .await;
    let message = programmed(&server).unwrap()["message"].clone();
    assert!(
        message
            .as_str()
            .unwrap()
            .ends_with("; served by 3 of 3 replicas"),
        "{message}"
    );

    // Idle: scrapes go on, no write.
    let quiet = Instant::now();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(writes_since(&server, quiet), Vec::<String>::new());

    // An edit: Pending while one replica lags, Programmed when it catches up.
    edit_policy(&server, "shop", "storefront", "7s");
    eventually("the edit applied", || applied_id(&server) != first).await;
    let second = applied_id(&server);
    set(
        &fakes[0].1,
        Answer::Serves {
            id: second,
            invalid: 0,
        },
    );
    set(
        &fakes[1].1,
        Answer::Serves {
            id: second,
            invalid: 0,
        },
    );
    eventually("Pending while one lags", || {
        says(&server, "Pending", "served by 2 of 3 replicas")
    })
    .await;
    set(
        &fakes[2].1,
        Answer::Serves {
            id: second,
            invalid: 0,
        },
    );
    eventually("Programmed after it caught up", || {
        says(&server, "True", "served by 3 of 3 replicas")
    })
    .await;

    // A replica refuses the next document: Rejected; then a fixed one.
    edit_policy(&server, "shop", "storefront", "8s");
    eventually("the second edit applied", || applied_id(&server) != second).await;
    let third = applied_id(&server);
    set(
        &fakes[0].1,
        Answer::Serves {
            id: third,
            invalid: 0,
        },
    );
    set(
        &fakes[1].1,
        Answer::Serves {
            id: third,
            invalid: 0,
        },
    );
    set(
        &fakes[2].1,
        Answer::Serves {
            id: second,
            invalid: 1,
        },
    );
    eventually("Rejected when one refuses", || {
        says(
            &server,
            "Rejected",
            "refused by 1 of 3 replicas of Gateway infra/edge (invalid",
        )
    })
    .await;
    set(
        &fakes[2].1,
        Answer::Serves {
            id: third,
            invalid: 1,
        },
    );
    eventually("Programmed after recovery", || {
        says(&server, "True", "served by 3 of 3 replicas")
    })
    .await;

    // Hostile endpoints: unknown, within the timeouts, the others read.
    set(&fakes[0].1, Answer::Hang);
    set(&fakes[1].1, Answer::Garbage);
    set(&fakes[2].1, Answer::Huge);
    let hostile = Instant::now();
    eventually("hostile replicas read as unknown", || {
        says(&server, "Pending", "3 could not be read")
    })
    .await;
    assert!(
        hostile.elapsed() < Duration::from_secs(15),
        "{:?}",
        hostile.elapsed()
    );
    for (_, fake) in &fakes {
        set(
            fake,
            Answer::Serves {
                id: third,
                invalid: 1,
            },
        );
    }
    eventually("Programmed once they answer again", || {
        says(&server, "True", "served by 3 of 3 replicas")
    })
    .await;

    // A killed replica leaves the ready set: one write per policy, no storm.
    let killed = Instant::now();
    let mut gone = pods[2].clone();
    gone["status"]["conditions"] = json!([{"type": "Ready", "status": "False"}]);
    server.seed([gone]).unwrap();
    eventually("served by the two left", || {
        says(&server, "True", "served by 2 of 2 replicas")
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let writes = writes_since(&server, killed);
    let storefront: Vec<&String> = writes
        .iter()
        .filter(|w| w.contains("/storefront/"))
        .collect();
    assert_eq!(storefront.len(), 1, "{writes:#?}");
}

/// A second Gateway, `infra/side`, with one route and one policy on it.
fn side() -> Vec<Value> {
    vec![
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
            "metadata": {"name": "side", "namespace": "infra"},
            "spec": {"gatewayClassName": "attache",
                     "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}}),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": "side", "namespace": "infra"},
            "spec": {"parentRefs": [{"name": "side"}],
                     "rules": [{"backendRefs": [{"name": "up", "port": 80}]}]}}),
        json!({"apiVersion": "policy.attache.dev/v1alpha1", "kind": "RoutePolicy",
            "metadata": {"name": "side", "namespace": "infra"},
            "spec": {"targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "side"}],
                     "defaults": {"timeouts": {"request": "3s"}}}}),
    ]
}

/// Every pod of `edge` hangs, and reads time out only after a minute: the
/// other Gateway's replicas are read and its policy confirmed meanwhile.
#[tokio::test]
async fn a_hanging_replica_of_one_gateway_never_holds_back_another() {
    let server = shop_server().await;
    server.serve_kind(KindSpec::new("", "v1", "Pod", "pods", true).with_status());
    server.seed(side()).unwrap();
    let (port, fakes) = proxies(&[5, 6, 7]).await;
    set(&fakes[0].1, Answer::Hang);
    set(&fakes[1].1, Answer::Hang);
    server
        .seed([
            pod_of("edge", 0, fakes[0].0),
            pod_of("edge", 1, fakes[1].0),
            pod_of("side", 0, fakes[2].0),
        ])
        .unwrap();
    let scraping = ScrapeOptions {
        port,
        timeout: Duration::from_secs(60),
        ..ScrapeOptions::default()
    };
    let _controller =
        start_controller_tuned(&server, "side", free_port(), Config::default(), |o| {
            o.lease = None;
            o.served = Some(scraping);
        });
    let plugin = || {
        server.object(
            "extensions.istio.io",
            "wasmplugins",
            "infra",
            "attache-side",
        )
    };
    eventually("the side Gateway's plugin", || plugin().is_some()).await;
    let id = of_plugin(&plugin().unwrap()).unwrap();
    set(&fakes[2].1, Answer::Serves { id, invalid: 0 });
    eventually("the side policy confirmed while edge's reads hang", || {
        programmed_of(&server, "infra", "side").is_some_and(|c| {
            c["status"] == "True"
                && c["message"]
                    .as_str()
                    .unwrap_or("")
                    .ends_with("served by 1 of 1 replicas")
        })
    })
    .await;
    // edge's policies wait for their first reading: nothing written yet.
    assert!(programmed(&server).is_none());
}
