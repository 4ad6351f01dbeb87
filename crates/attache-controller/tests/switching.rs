//! The pure reconcile's side of a switch of plugin kinds: written as one
//! kind, it compares with the live object of that kind, and it decides
//! which of ours of the other kind goes now (beside a current object of the
//! written kind), after the apply (a Gateway whose object must be written),
//! or not at all (a Gateway whose last good configuration is kept).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail by panicking

use attache_controller::kinds::{named, TRAFFIC_EXTENSION, WASM_PLUGIN};
use attache_controller::reconcile::{reconcile, Config, LivePlugin, Outcome, Plan};
use attache_controller::snapshot::Snapshot;
use attache_core::topology::ObjectKey;
use serde_json::{json, Value};

mod common;
use common::shop;

fn edge() -> ObjectKey {
    ObjectKey {
        namespace: "infra".into(),
        name: "edge".into(),
    }
}

fn plugin_name() -> ObjectKey {
    ObjectKey {
        namespace: "infra".into(),
        name: "attache-edge".into(),
    }
}

fn plan(config: &Config, objects: &[Value]) -> Plan {
    let rows = objects
        .iter()
        .map(|v| (named(v["kind"].as_str().unwrap()).unwrap(), v));
    reconcile(config, &Snapshot::from_objects(rows, Default::default()))
}

/// The object a round over `objects` decides for infra/edge, as it would
/// be live after the apply.
fn written(config: &Config, objects: &[Value]) -> Value {
    match plan(config, objects).gateways.get(&edge()) {
        Some(Outcome::Apply(object)) => object.clone(),
        other => panic!("expected an apply for infra/edge, got {other:?}"),
    }
}

fn as_traffic_extension() -> Config {
    Config {
        written: &TRAFFIC_EXTENSION,
        ..Config::default()
    }
}

#[test]
fn written_as_trafficextension_it_compares_with_the_live_trafficextension() {
    let config = as_traffic_extension();
    let objects = shop();
    let extension = written(&config, &objects);
    assert_eq!(extension["kind"], "TrafficExtension");
    let wasm_plugin = written(&Config::default(), &objects);

    // Live and current: nothing to write, nothing to delete.
    let settled: Vec<Value> = objects.iter().cloned().chain([extension.clone()]).collect();
    let quiet = plan(&config, &settled);
    assert_eq!(quiet.gateways[&edge()], Outcome::Unchanged);
    assert!(quiet.orphans.is_empty() && quiet.switching.is_empty());

    // Our WasmPlugin beside the current TrafficExtension goes now.
    let mut leftover: Vec<Value> = settled.clone();
    leftover.push(wasm_plugin.clone());
    let cleanup = plan(&config, &leftover);
    assert_eq!(cleanup.gateways[&edge()], Outcome::Unchanged);
    assert_eq!(
        cleanup.orphans,
        [LivePlugin {
            kind: &WASM_PLUGIN,
            key: plugin_name()
        }]
    );

    // Only the WasmPlugin live: the TrafficExtension is applied, and the
    // WasmPlugin goes only after that apply.
    let before: Vec<Value> = objects
        .iter()
        .cloned()
        .chain([wasm_plugin.clone()])
        .collect();
    let switch = plan(&config, &before);
    assert!(matches!(switch.gateways[&edge()], Outcome::Apply(_)));
    assert!(switch.orphans.is_empty());
    assert_eq!(switch.switching, [edge()].into());

    // A WasmPlugin that is not ours (no label) is never touched.
    let mut foreign = wasm_plugin.clone();
    foreign["metadata"]["labels"] = json!({});
    let theirs: Vec<Value> = settled.iter().cloned().chain([foreign]).collect();
    assert!(plan(&config, &theirs).orphans.is_empty());
}

#[test]
fn a_gateway_whose_configuration_is_kept_keeps_its_plugin_of_the_other_kind() {
    let config = as_traffic_extension();
    let mut objects = shop();
    let wasm_plugin = written(&Config::default(), &objects);
    objects.push(wasm_plugin);
    // A listener the resolver refuses: the Gateway cannot be resolved.
    for gateway in objects.iter_mut().filter(|o| o["kind"] == "Gateway") {
        gateway["spec"]["listeners"][0]["port"] = json!("not a port");
    }
    let kept = plan(&config, &objects);
    assert!(
        matches!(kept.gateways[&edge()], Outcome::Keep(_)),
        "{:?}",
        kept.gateways
    );
    assert!(kept.orphans.is_empty() && kept.switching.is_empty());
}

#[test]
fn a_gateway_that_leaves_our_class_loses_its_trafficextension() {
    let config = as_traffic_extension();
    let mut objects = shop();
    let extension = written(&config, &objects);
    objects.push(extension);
    for gateway in objects.iter_mut().filter(|o| o["kind"] == "Gateway") {
        gateway["spec"]["gatewayClassName"] = json!("someone-else");
    }
    let gone = plan(&config, &objects);
    assert!(gone.gateways.is_empty());
    assert_eq!(
        gone.orphans,
        [LivePlugin {
            kind: &TRAFFIC_EXTENSION,
            key: plugin_name()
        }]
    );
}
