//! A namespace-scoped install (issue 30, item 5): with `--namespace`, the
//! controller lists and watches namespaced kinds in those namespaces only
//! (so Roles there suffice), cluster-scoped kinds cluster-wide, and serves
//! what it sees.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail by panicking

use std::time::{Duration, Instant};

use attache_apiserver::Verb;
use attache_controller::reconcile::Config;

mod common;
use common::standin::{free_port, shop_server, start_controller_with};

#[tokio::test]
async fn with_namespaces_it_reads_only_those_namespaces() {
    let server = shop_server().await;
    let watched = ["infra", "shop"];
    let config = Config {
        namespaces: watched.iter().map(|ns| ns.to_string()).collect(),
        ..Config::default()
    };
    let controller = start_controller_with(&server, "scoped", free_port(), config);
    let deadline = Instant::now() + Duration::from_secs(60);
    while server.log().count_ok(Verb::Apply, "wasmplugins", None) == 0 {
        assert!(Instant::now() < deadline, "no WasmPlugin applied");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let reads: Vec<_> = server
        .log()
        .records()
        .into_iter()
        .filter(|r| matches!(r.verb, Verb::List | Verb::Watch))
        .collect();
    let cluster_scoped = ["gatewayclasses", "namespaces", "clusterroutepolicies"];
    for read in &reads {
        if cluster_scoped.contains(&read.resource.as_str()) {
            assert_eq!(read.namespace, None, "{} {}", read.method, read.path);
        } else {
            let ns = read.namespace.as_deref();
            assert!(
                ns.is_some_and(|ns| watched.contains(&ns)),
                "{} {}: outside the watched namespaces",
                read.method,
                read.path
            );
        }
    }
    // Each namespaced kind was listed in each watched namespace.
    for ns in watched {
        assert!(reads
            .iter()
            .any(|r| r.resource == "httproutes" && r.namespace.as_deref() == Some(ns)));
    }
    let plugin = &server.objects("extensions.istio.io", "wasmplugins")[0];
    assert_eq!(plugin["metadata"]["namespace"], "infra");
    controller.abort();
}
