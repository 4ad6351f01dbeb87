//! The kind that carries the filter (docs/semantics.md, "The controller"):
//! TrafficExtension where the stand-in API server serves it, WasmPlugin
//! otherwise or when `--plugin-kind` says so; a switch of kinds, either
//! way, applies the new object before it deletes the old one, and never
//! deletes the old one while the new one cannot be applied. Written as
//! TrafficExtension, the controller watches it as it watches WasmPlugins:
//! idle rounds write nothing, one deleted by hand comes back at once, and
//! ours of either kind is deleted when it must go.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail by panicking

mod common;

use std::time::{Duration, Instant};

use attache_apiserver::{Handle, KindSpec, Scope, Verb};
use attache_controller::kinds::TRAFFIC_EXTENSION;
use attache_controller::kube::watch::api_resource;
use attache_controller::kube::{run, Options};
use attache_controller::plugin_kind::{as_traffic_extension, Choice, PluginKind};
use attache_controller::reconcile::Config;
use common::standin::{eventually, free_port, metrics, series, shop_server, writes_since};
use kube::api::{Api, DeleteParams, DynamicObject};
use serde_json::{json, Value};

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
    start_probed(server, choice, label, 0)
}

/// [`start`] with its metrics on `probe_port`.
fn start_probed(
    server: &Handle,
    choice: Choice,
    label: &str,
    probe_port: u16,
) -> tokio::task::JoinHandle<()> {
    let dir = std::env::temp_dir().join(format!("attache-kind-{label}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();
    let options = Options {
        config: Config::default(),
        kubeconfig: Some(kubeconfig),
        probe_address: format!("127.0.0.1:{probe_port}").parse().unwrap(),
        lease: None,
        identity: label.into(),
        debounce: Duration::from_millis(50),
        max_delay: Duration::from_millis(300),
        plugin_kind: choice,
        served: None,
    };
    tokio::spawn(async move {
        run(options).await.unwrap();
    })
}

fn object(server: &Handle, plural: &str) -> Option<Value> {
    server.object(GROUP, plural, "infra", "attache-edge")
}

/// Deletes our TrafficExtension as a user would (`kubectl delete`): a
/// DELETE through the API, which the watch then reports.
async fn delete_by_hand(server: &Handle) {
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&server.kubeconfig()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let api: Api<DynamicObject> =
        Api::namespaced_with(client, "infra", &api_resource(&TRAFFIC_EXTENSION));
    api.delete("attache-edge", &DeleteParams::default())
        .await
        .unwrap();
}

/// Waits until 2 s pass with no write but the Lease's.
async fn quiet(server: &Handle) {
    eventually("the controller to settle", || {
        writes_since(server, Instant::now() - Duration::from_secs(2)).is_empty()
    })
    .await;
}

/// Runs a controller writing as `choice` until our object of `plural`
/// exists, stops it, and returns that object: the cluster as a controller
/// of before a switch left it.
async fn written_before(server: &Handle, choice: Choice, label: &str, plural: &str) -> Value {
    let controller = start(server, choice, label);
    eventually(plural, || object(server, plural).is_some()).await;
    controller.abort();
    object(server, plural).unwrap()
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
    let wasm_plugin = Choice::Fixed(PluginKind::WasmPlugin);
    let plugin = written_before(&server, wasm_plugin, "before", "wasmplugins").await;
    assert!(object(&server, "trafficextensions").is_none());

    // Then auto: TrafficExtension is served, so it is written.
    switch(
        &server,
        Choice::Auto,
        "after",
        "trafficextensions",
        "wasmplugins",
    )
    .await;
    let extension = object(&server, "trafficextensions").unwrap();
    assert_eq!(extension["spec"], as_traffic_extension(&plugin)["spec"]);
    assert_eq!(
        extension["metadata"]["ownerReferences"],
        plugin["metadata"]["ownerReferences"]
    );
}

#[tokio::test]
async fn while_the_new_kind_cannot_be_applied_the_old_one_stays() {
    let server = shop_server().await;
    serve_traffic_extension(&server);
    let wasm_plugin = Choice::Fixed(PluginKind::WasmPlugin);
    written_before(&server, wasm_plugin, "stays-before", "wasmplugins").await;
    // Every write refused (the TrafficExtension's list and watch must
    // answer: the loop reconciles only over a whole cache).
    server
        .faults()
        .fail_for(Scope::Writes, 500, Duration::from_secs(600));
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

/// Runs a controller writing as `choice` until our object of `old` is
/// gone, and checks that the object of `new` is there and was applied
/// before the old one was deleted.
async fn switch(server: &Handle, choice: Choice, label: &str, new: &str, old: &str) {
    let controller = start(server, choice, label);
    eventually(old, || object(server, old).is_none()).await;
    controller.abort();
    assert!(object(server, new).is_some());
    let writes = plugin_writes(server);
    let applied = first(&writes, Verb::Apply, new);
    let deleted = first(&writes, Verb::Delete, old);
    assert!(applied < deleted, "{writes:?}");
}

/// The position of the first `(verb, resource)` write in `writes`.
fn first(writes: &[(Verb, String)], verb: Verb, resource: &str) -> usize {
    writes
        .iter()
        .position(|w| *w == (verb, resource.to_string()))
        .unwrap_or_else(|| panic!("no {verb:?} of {resource} in {writes:?}"))
}

#[tokio::test]
async fn a_switch_back_to_wasmplugin_applies_it_before_deleting_the_trafficextension() {
    let server = shop_server().await;
    serve_traffic_extension(&server);
    written_before(&server, Choice::Auto, "back-before", "trafficextensions").await;
    let wasm_plugin = Choice::Fixed(PluginKind::WasmPlugin);
    switch(
        &server,
        wasm_plugin,
        "back-after",
        "wasmplugins",
        "trafficextensions",
    )
    .await;
}

#[tokio::test]
async fn written_as_trafficextension_idle_rounds_write_no_plugin() {
    let server = shop_server().await;
    serve_traffic_extension(&server);
    let port = free_port();
    let controller = start_probed(&server, Choice::Auto, "te-idle", port);
    eventually("the TrafficExtension", || {
        object(&server, "trafficextensions").is_some()
    })
    .await;
    quiet(&server).await;
    let rounds = || async { series(&metrics(port).await, "attache_reconciles_total") };
    let (since, before) = (Instant::now(), rounds().await);
    // Each touch of a Namespace wakes a round that changes nothing.
    for touch in 0..3 {
        let mut namespace = server.object("", "namespaces", "", "shop").unwrap();
        namespace["metadata"]["annotations"] = json!({"test/touch": touch.to_string()});
        server.seed([namespace]).unwrap();
        let wanted = before + f64::from(touch + 1);
        let deadline = Instant::now() + Duration::from_secs(30);
        while rounds().await < wanted {
            assert!(Instant::now() < deadline, "no round after touch {touch}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    controller.abort();
    let plugin_writes: Vec<_> = server
        .log()
        .records()
        .into_iter()
        .filter(|r| r.received >= since && r.verb.is_write())
        .filter(|r| r.resource == "trafficextensions" || r.resource == "wasmplugins")
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(plugin_writes.is_empty(), "{plugin_writes:#?}");
}

#[tokio::test]
async fn a_trafficextension_deleted_by_hand_comes_back() {
    let server = shop_server().await;
    serve_traffic_extension(&server);
    let controller = start(&server, Choice::Auto, "te-hand");
    eventually("the TrafficExtension", || {
        object(&server, "trafficextensions").is_some()
    })
    .await;
    quiet(&server).await;
    let written = object(&server, "trafficextensions").unwrap();
    delete_by_hand(&server).await;
    assert!(object(&server, "trafficextensions").is_none());
    // Well inside the 300 s resync: the watch's delete event wakes a round.
    eventually("the TrafficExtension to come back", || {
        object(&server, "trafficextensions").is_some()
    })
    .await;
    controller.abort();
    assert_eq!(
        object(&server, "trafficextensions").unwrap()["spec"],
        written["spec"]
    );
}

#[tokio::test]
async fn ours_of_either_kind_is_deleted_when_it_must_go() {
    let server = shop_server().await;
    serve_traffic_extension(&server);
    let wasm_plugin = Choice::Fixed(PluginKind::WasmPlugin);
    let leftover = written_before(&server, wasm_plugin, "either-wp", "wasmplugins").await;
    let controller = start(&server, Choice::Auto, "either-te");
    eventually("the switch", || object(&server, "wasmplugins").is_none()).await;
    quiet(&server).await;
    // A WasmPlugin of ours left beside the current TrafficExtension (a
    // switch whose delete never happened) goes, with no TrafficExtension
    // write: nothing about it changed.
    let applies = server.log().count(Verb::Apply, "trafficextensions", None);
    server.seed([leftover]).unwrap();
    eventually("the leftover WasmPlugin to go", || {
        object(&server, "wasmplugins").is_none()
    })
    .await;
    assert_eq!(
        server.log().count(Verb::Apply, "trafficextensions", None),
        applies
    );
    // A Gateway that leaves our class takes its TrafficExtension along.
    let mut gateway = server
        .object("gateway.networking.k8s.io", "gateways", "infra", "edge")
        .unwrap();
    gateway["spec"]["gatewayClassName"] = json!("someone-else");
    server.seed([gateway]).unwrap();
    eventually("the orphan TrafficExtension to go", || {
        object(&server, "trafficextensions").is_none()
    })
    .await;
    controller.abort();
    assert!(object(&server, "wasmplugins").is_none());
}

/// An Istio upgrade while the controller runs under `--plugin-kind auto`:
/// the TrafficExtension CRD appears, and within 60 s the controller writes
/// the TrafficExtension, then deletes the WasmPlugin (exactly once, in
/// that order).
#[tokio::test]
async fn a_trafficextension_crd_that_appears_at_run_time_is_switched_to_within_a_minute() {
    let server = shop_server().await;
    let controller = start(&server, Choice::Auto, "appears");
    eventually("the WasmPlugin", || {
        object(&server, "wasmplugins").is_some()
    })
    .await;
    let appeared = Instant::now();
    serve_traffic_extension(&server);
    while object(&server, "wasmplugins").is_some() {
        assert!(
            appeared.elapsed() < Duration::from_secs(60),
            "no switch within 60 s of the CRD appearing"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!("switched {:?} after the CRD appeared", appeared.elapsed());
    quiet(&server).await;
    controller.abort();
    assert!(object(&server, "trafficextensions").is_some());
    let writes = plugin_writes(&server);
    let applied = first(&writes, Verb::Apply, "trafficextensions");
    let deleted = first(&writes, Verb::Delete, "wasmplugins");
    assert!(applied < deleted, "{writes:?}");
    let deletes = writes.iter().filter(|(v, _)| *v == Verb::Delete).count();
    assert_eq!(deletes, 1, "{writes:?}");
}
