//! The controller's real loop (`attache_controller::kube::run`) against
//! the stand-in API server (crates/attache-apiserver) seeded with the
//! project's CRDs and examples/shop: the WasmPlugin of the shop's Gateway is
//! server-side applied and every policy's status is written through the
//! status subresource.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail by panicking

use std::path::PathBuf;
use std::time::Duration;

mod common;

use attache_apiserver::{Config as ServerConfig, StandIn, Verb};
use attache_controller::kube::{run, Options};
use attache_controller::reconcile::Config;
use common::standin::eventually;
use serde_json::Value;

fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

#[tokio::test]
async fn the_real_loop_applies_the_shop_plugin_and_writes_every_policy_status() {
    let shop = attache_apiserver::read_manifests(&repo("examples/shop")).unwrap();
    // The class the example's GatewayClass names is the one to serve.
    let class = shop
        .iter()
        .find(|o| o["kind"] == "GatewayClass")
        .and_then(|o| o["spec"]["controllerName"].as_str())
        .unwrap()
        .to_string();
    let server_config = ServerConfig::default()
        .with_gateway_api()
        .with_manifests(&[repo("deploy/crds")])
        .unwrap()
        .with_objects(shop.clone());
    let server = StandIn::start(server_config).await.unwrap();
    let dir = std::env::temp_dir().join(format!("attache-standin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();

    let options = Options {
        config: Config {
            controller_name: class,
            ..Config::default()
        },
        kubeconfig: Some(kubeconfig),
        probe_address: "127.0.0.1:0".parse().unwrap(),
        lease: None,
        identity: "test".into(),
        debounce: Duration::from_millis(50),
        max_delay: Duration::from_millis(200),
        plugin_kind: Default::default(),
        served: None,
    };
    let controller = tokio::spawn(run(options));

    let plugins = || server.objects("extensions.istio.io", "wasmplugins");
    eventually("the WasmPlugin", || !plugins().is_empty()).await;
    let plugin = &plugins()[0];
    assert_eq!(plugin["metadata"]["namespace"], "infra");
    assert!(plugin["spec"]["pluginConfig"].is_object(), "{plugin:#}");
    let managers: Vec<&str> = plugin["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["manager"].as_str().unwrap())
        .collect();
    assert_eq!(managers, ["attache"], "written by server-side apply");

    let policies = shop
        .iter()
        .filter(|o| o["kind"] == "RoutePolicy" || o["kind"] == "ClusterRoutePolicy")
        .count();
    let with_status = || {
        let mut all = server.objects("policy.attache.dev", "routepolicies");
        all.extend(server.objects("policy.attache.dev", "clusterroutepolicies"));
        all.iter()
            .filter(|p| {
                p["status"]["ancestors"]
                    .as_array()
                    .is_some_and(|a| !a.is_empty())
            })
            .count()
    };
    eventually("every policy's status", || with_status() == policies).await;
    let first = shop.iter().find(|o| o["kind"] == "RoutePolicy").unwrap();
    let key = |f: &str| first["metadata"][f].as_str().unwrap();
    let policy = server
        .object(
            "policy.attache.dev",
            "routepolicies",
            key("namespace"),
            key("name"),
        )
        .unwrap();
    let conditions: Vec<&Value> = policy["status"]["ancestors"][0]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    assert!(
        conditions.iter().any(|c| c["type"] == "Accepted"),
        "{policy:#}"
    );
    assert_eq!(
        policy["metadata"]["generation"], 1,
        "a status write is not a spec change"
    );
    assert!(server.log().count_ok(Verb::Apply, "wasmplugins", None) >= 1);
    assert!(
        server
            .log()
            .count_ok(Verb::Patch, "routepolicies", Some("status"))
            >= 1
    );
    controller.abort();
    let _ = std::fs::remove_dir_all(&dir);
}
