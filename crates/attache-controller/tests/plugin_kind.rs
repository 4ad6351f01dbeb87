//! The kind that carries the filter (docs/semantics.md, "The controller"):
//! TrafficExtension where the stand-in API server serves it, WasmPlugin
//! otherwise or when `--plugin-kind` says so; and a switch of kinds applies
//! the new object before it deletes the old one, and never deletes the old
//! one while the new one cannot be applied.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail by panicking

mod common;

use std::time::Duration;

use attache_apiserver::{Handle, KindSpec, Scope, Verb};
use attache_controller::kube::{run, Options};
use attache_controller::plugin_kind::{as_traffic_extension, Choice, PluginKind};
use attache_controller::reconcile::Config;
use common::standin::{eventually, shop_server};
use serde_json::Value;

const GROUP: &str = "extensions.istio.io";

fn serve_traffic_extension(server: &Handle) {
    server.serve_kind(KindSpec::new(
        GROUP,
        "v1alpha1",
        "TrafficExtension",
        "trafficextensions",
        true,
    ));
}

/// The controller's real loop, without a Lease, writing as `choice` says.
fn start(server: &Handle, choice: Choice, label: &str) -> tokio::task::JoinHandle<()> {
    let dir = std::env::temp_dir().join(format!("attache-kind-{label}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();
    let options = Options {
        config: Config::default(),
        kubeconfig: Some(kubeconfig),
        probe_address: "127.0.0.1:0".parse().unwrap(),
        lease: None,
        identity: label.into(),
        debounce: Duration::from_millis(50),
        max_delay: Duration::from_millis(300),
        plugin_kind: choice,
    };
    tokio::spawn(async move {
        run(options).await.unwrap();
    })
}

fn object(server: &Handle, plural: &str) -> Option<Value> {
    server.object(GROUP, plural, "infra", "attache-edge")
}

/// (verb, resource) of every write to our plugin objects, in order.
fn plugin_writes(server: &Handle) -> Vec<(Verb, String)> {
    server
        .log()
        .records()
        .into_iter()
        .filter(|r| r.verb.is_write() && r.name.as_deref() == Some("attache-edge"))
        .map(|r| (r.verb, r.resource))
        .collect()
}

#[tokio::test]
async fn a_switch_to_trafficextension_applies_it_before_deleting_the_wasmplugin() {
    let server = shop_server().await;
    serve_traffic_extension(&server);
    // First the WasmPlugin, as a controller of before the switch wrote it.
    let before = start(&server, Choice::Fixed(PluginKind::WasmPlugin), "before");
    eventually("the WasmPlugin", || {
        object(&server, "wasmplugins").is_some()
    })
    .await;
    before.abort();
    let plugin = object(&server, "wasmplugins").unwrap();
    assert!(object(&server, "trafficextensions").is_none());

    // Then auto: TrafficExtension is served, so it is written.
    let after = start(&server, Choice::Auto, "after");
    eventually("the WasmPlugin to go", || {
        object(&server, "wasmplugins").is_none()
    })
    .await;
    after.abort();
    let extension = object(&server, "trafficextensions").unwrap();
    assert_eq!(extension["spec"], as_traffic_extension(&plugin)["spec"]);
    assert_eq!(
        extension["metadata"]["ownerReferences"],
        plugin["metadata"]["ownerReferences"]
    );
    let writes = plugin_writes(&server);
    let applied = writes
        .iter()
        .position(|w| *w == (Verb::Apply, "trafficextensions".to_string()))
        .unwrap();
    let deleted = writes
        .iter()
        .position(|w| *w == (Verb::Delete, "wasmplugins".to_string()))
        .unwrap();
    assert!(applied < deleted, "{writes:?}");
}

#[tokio::test]
async fn while_the_new_kind_cannot_be_applied_the_old_one_stays() {
    let server = shop_server().await;
    serve_traffic_extension(&server);
    let before = start(
        &server,
        Choice::Fixed(PluginKind::WasmPlugin),
        "stays-before",
    );
    eventually("the WasmPlugin", || {
        object(&server, "wasmplugins").is_some()
    })
    .await;
    before.abort();
    server.faults().fail_for(
        Scope::Resource("trafficextensions".into()),
        500,
        Duration::from_secs(600),
    );
    let after = start(
        &server,
        Choice::Fixed(PluginKind::TrafficExtension),
        "stays-after",
    );
    eventually("two refused applies", || {
        server.log().count(Verb::Apply, "trafficextensions", None) >= 2
    })
    .await;
    after.abort();
    assert!(object(&server, "wasmplugins").is_some());
    assert_eq!(server.log().count(Verb::Delete, "wasmplugins", None), 0);
}

#[tokio::test]
async fn where_trafficextension_is_not_served_auto_writes_the_wasmplugin_alone() {
    let server = shop_server().await;
    let controller = start(&server, Choice::Auto, "auto-old");
    eventually("the WasmPlugin", || {
        object(&server, "wasmplugins").is_some()
    })
    .await;
    controller.abort();
    let touched: Vec<_> = server
        .log()
        .records()
        .into_iter()
        .filter(|r| r.resource == "trafficextensions")
        .collect();
    assert!(touched.is_empty(), "{touched:?}");
    assert_eq!(server.log().count(Verb::Delete, "wasmplugins", None), 0);
}
