//! The WasmPlugin `attache controller` applies, made by its pure reconcile
//! (crates/attache-controller: the snapshot of objects in, the WasmPlugin
//! out, exactly what the adapter server-side applies), fed to the
//! Istio-shaped Envoy as istiod would deliver it (shape.rs), for a Gateway
//! of 10,000 routes each with its own policy: every object under 1 MiB
//! (its `pluginConfig` compressed, attache_contract::envelope), each picked
//! route enforcing what the plain bootstrap enforces, and a policy edit
//! served without a restart (the time it took is printed, not asserted as
//! a speed bound: the machine is shared). docs/plugin-delivery.md has the
//! figures.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use attache_controller::kinds::{named, WatchedKind};
use attache_controller::reconcile::{reconcile, Config, Outcome};
use attache_controller::snapshot::Snapshot;
use attache_core::topology::ObjectKey;
use attache_render::wasmplugin::{size_problem, ConfigForm, WasmPluginOptions};
use serde_json::{json, Value};

use super::shape::{istio_bootstrap, istio_ecds, istiod_rules, protojson};
use super::{listener_ports, yaml_file};
use crate::harness::client::{self, Reply};
use crate::harness::envoy::Envoy;
use crate::harness::paths;
use crate::harness::scratch::Scratch;
use crate::harness::stack::{Fixture, Stack};

/// The controller's WasmPlugin for Gateway `gateway`, from the objects as
/// the API would list them (kinds the controller does not watch, such as
/// Service, are not in its snapshot, as in a cluster).
pub fn controller_plugin(
    objects: &[Value],
    controller_name: &str,
    gateway: &ObjectKey,
    form: ConfigForm,
) -> Value {
    let rows: Vec<(&'static WatchedKind, &Value)> = objects
        .iter()
        .filter_map(|o| Some((named(o["kind"].as_str()?)?, o)))
        .collect();
    let snapshot = Snapshot::from_objects(rows, BTreeSet::new());
    let config = Config {
        controller_name: controller_name.to_owned(),
        plugin: WasmPluginOptions {
            config_form: form,
            ..WasmPluginOptions::default()
        },
        ..Config::default()
    };
    let plan = reconcile(&config, &snapshot);
    match plan.gateways.get(gateway) {
        Some(Outcome::Apply(plugin)) => plugin.clone(),
        other => panic!(
            "the controller does not apply a WasmPlugin for {gateway}: {other:?}; {:?}",
            plan.diagnostics
        ),
    }
}

const ROUTES: usize = 10_000;
const GATEWAY: &str = "shop/edge";
const PLUGIN: &str = "shop.attache-edge";
/// The routes whose distinct policy is checked (first, middle, last).
const PICKED: &[usize] = &[0, 1, 4321, 9999];
/// The route whose policy is edited.
const EDITED: usize = 4321;

/// The bench generator's distinct-policy topology (the lead's
/// gen_distinct.py): `n` HTTPRoutes of 3 rules over 1,000 hostnames, each
/// with its own RoutePolicy (timeout `1000+i` ms, 2 retries on 503,
/// `x-tenant: t<i>`); here with `sectionName` on each parentRef, which
/// istiod_rules needs, and the listener on `port`. `edited` gives route
/// `EDITED` another tenant and timeout.
fn distinct(n: usize, port: u16, edited: bool) -> Vec<Value> {
    let mut docs = vec![
        json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}}),
        json!({"apiVersion":"gateway.networking.k8s.io/v1","kind":"GatewayClass","metadata":{"name":"istio"},
            "spec":{"controllerName":"istio.io/gateway-controller"}}),
        json!({"apiVersion":"gateway.networking.k8s.io/v1","kind":"Gateway","metadata":{"name":"edge","namespace":"shop"},
            "spec":{"gatewayClassName":"istio","listeners":[{"name":"http","protocol":"HTTP","port":port}]}}),
    ];
    for i in 0..n {
        let rules: Vec<Value> = ["a", "b", "c"]
            .iter()
            .map(|r| {
                json!({"matches":[{"path":{"type":"PathPrefix","value":format!("/r{i}/{r}")}}],
                "backendRefs":[{"name":"up","port":80}]})
            })
            .collect();
        docs.push(
            json!({"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute",
            "metadata":{"name":format!("r{i}"),"namespace":"shop"},
            "spec":{"parentRefs":[{"name":"edge","sectionName":"http"}],
                "hostnames":[format!("h{}.example.com", i % 1000)],"rules":rules}}),
        );
        let (tenant, ms) = expected(i, edited);
        docs.push(json!({"apiVersion":"policy.attache.dev/v1alpha1","kind":"RoutePolicy",
            "metadata":{"name":format!("p{i}"),"namespace":"shop"},
            "spec":{"targetRefs":[{"group":"gateway.networking.k8s.io","kind":"HTTPRoute","name":format!("r{i}")}],
                "defaults":{"timeouts":{"request":format!("{ms}ms")},"retry":{"attempts":2,"codes":[503]},
                    "requestHeaderModifier":{"set":[{"name":"x-tenant","value":tenant}]}}}}));
    }
    docs
}

/// Route `i`'s tenant and timeout.
fn expected(i: usize, edited: bool) -> (String, usize) {
    if edited && i == EDITED {
        (format!("t{i}-edited"), 3000 + i)
    } else {
        (format!("t{i}"), 1000 + i)
    }
}

fn write_input(dir: &Path, docs: &[Value]) {
    std::fs::create_dir_all(dir).expect("input dir");
    let text: Vec<String> = docs.iter().map(Value::to_string).collect();
    std::fs::write(dir.join("in.yaml"), text.join("\n---\n")).expect("write input");
}

fn probe(port: u16, i: usize, rule: &str) -> Reply {
    let url = format!("http://127.0.0.1:{port}/r{i}/{rule}/x");
    client::get(&url, &[("host", &format!("h{}.example.com", i % 1000))])
}

/// What a request shows of route `i`'s policy: status, tenant and timeout
/// as the backend saw them.
fn seen(reply: &Reply) -> (u16, Option<Vec<String>>, Option<Vec<String>>) {
    (
        reply.status,
        reply.echoed_header("x-tenant"),
        reply.echoed_header("x-envoy-expected-rq-timeout-ms"),
    )
}

fn want(i: usize, edited: bool) -> (u16, Option<Vec<String>>, Option<Vec<String>>) {
    let (tenant, ms) = expected(i, edited);
    (200, Some(vec![tenant]), Some(vec![ms.to_string()]))
}

/// The ECDS file Envoy watches, replaced in one rename (a half-written
/// file is never read), `version` in its version_info.
fn put_ecds(path: &Path, plugin: &Value, version: u32) {
    let mut ecds = istio_ecds(
        PLUGIN,
        "attache",
        &paths::wasm(),
        &protojson(&plugin["spec"]["pluginConfig"]),
    );
    ecds["version_info"] = json!(version.to_string());
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, ecds.to_string()).expect("write ECDS");
    std::fs::rename(&tmp, path).expect("rename ECDS");
}

/// `ATTACHE_E2E_PLUGIN_CONFIG=inline` delivers the document inline instead
/// (5 MB: Envoy reads it from a file here; the controller would not apply
/// it, so the test inflates the controller's envelope), to compare the
/// filter's load time.
fn inline_wanted() -> bool {
    std::env::var("ATTACHE_E2E_PLUGIN_CONFIG").as_deref() == Ok("inline")
}

/// The controller's WasmPlugin for the distinct-policy Gateway, checked to
/// fit (and inflated when `inline_wanted`).
fn distinct_plugin(docs: &[Value], gateway: &ObjectKey) -> Value {
    let mut plugin = controller_plugin(
        docs,
        "istio.io/gateway-controller",
        gateway,
        ConfigForm::Auto,
    );
    let bytes = serde_json::to_vec(&plugin).expect("JSON").len();
    // The table encoding, sealed in pieces (docs/plugin-delivery.md).
    assert_eq!(
        plugin["spec"]["pluginConfig"]["encoding"],
        attache_contract::envelope::ZLIB_BASE64_CHUNKS
    );
    assert_eq!(size_problem(&plugin), None, "{bytes} bytes");
    assert!(bytes < 1024 * 1024, "{bytes}");
    if inline_wanted() {
        let envelope =
            serde_json::from_value(plugin["spec"]["pluginConfig"].clone()).expect("envelope");
        let table = attache_contract::envelope::open_all(envelope).expect("inflate");
        // The document itself (schema 2 JSON), as a pluginConfig inline.
        let document = attache_contract::table::decode(&table).expect("table");
        plugin["spec"]["pluginConfig"] = serde_json::to_value(document).expect("document");
    }
    plugin
}

/// The filter's own "configuration ... accepted ... loaded in" lines
/// (logged at info: run with ATTACHE_E2E_ENVOY_LOG_LEVEL=info to see them).
fn accepted_lines(log_dir: &Path) -> Vec<String> {
    let log = std::fs::read_to_string(log_dir.join("envoy.log")).unwrap_or_default();
    log.lines()
        .filter(|l| l.contains("attache: configuration generation"))
        .map(|l| l.chars().take(400).collect())
        .collect()
}

#[test]
fn controller_wasmplugin_for_10000_distinct_policies_fits_and_enforces_each_route() {
    let scratch = Scratch::new("istio-10k");
    let port = paths::free_port();
    let gateway = ObjectKey {
        namespace: "shop".into(),
        name: "edge".into(),
    };
    let docs = distinct(ROUTES, port, false);
    let input = scratch.join("input");
    write_input(&input, &docs);

    let started = Instant::now();
    let plugin = distinct_plugin(&docs, &gateway);
    let reconciled = started.elapsed();
    let bytes = serde_json::to_vec(&plugin).expect("JSON").len();
    eprintln!(
        "istio-10k: the WasmPlugin delivered is {bytes} bytes of JSON (pluginConfig {}), reconciled in {reconciled:?} (test build)",
        if inline_wanted() { "inflated: inline" } else { "compressed" }
    );

    let plain = Stack::start(&Fixture {
        input: input.clone(),
        gateway: GATEWAY,
        listeners: &["http"],
        backends: &["*"],
    });
    let plain_bootstrap = yaml_file(&plain.scratch.join("envoy.yaml"));
    let plain_port = listener_ports(&plain_bootstrap)["http"];
    let rules = istiod_rules(&docs, "shop", "edge");
    assert_eq!(rules.len(), ROUTES * 3);
    let ecds_dir = scratch.join("istio-ecds");
    std::fs::create_dir_all(&ecds_dir).expect("ECDS dir");
    let ecds = ecds_dir.join("wasmplugin.json");
    put_ecds(&ecds, &plugin, 1);
    let log_dir = scratch.join("istio-envoy");
    std::fs::create_dir_all(&log_dir).expect("log dir");
    let admin = paths::free_port();
    let ports: BTreeMap<String, u16> = [("http".to_owned(), port)].into();
    let bootstrap = istio_bootstrap(&plain_bootstrap, &rules, &ports, admin, &ecds, PLUGIN);
    let path = log_dir.join("envoy.json");
    std::fs::write(&path, bootstrap.to_string()).expect("write bootstrap");
    let istio = Envoy::try_start(&path, admin, port, &log_dir)
        .unwrap_or_else(|log| panic!("the Istio-shaped Envoy did not start; log:\n{log}"));

    // The first request may race the filter's first configuration: wait
    // until the policy is seen (fail-closed refuses until then).
    let loaded = Instant::now();
    while seen(&probe(port, 0, "a")) != want(0, false) {
        assert!(
            loaded.elapsed() < Duration::from_secs(60),
            "route 0 never got its policy under Istio; log:\n{}",
            istio.log_tail()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    for &i in PICKED {
        for rule in ["a", "c"] {
            let under_istio = seen(&probe(port, i, rule));
            assert_eq!(
                under_istio,
                seen(&probe(plain_port, i, rule)),
                "route {i}/{rule}"
            );
            assert_eq!(under_istio, want(i, false), "route {i}/{rule}");
        }
    }

    // A policy edit: the controller reconciles, the new WasmPlugin goes to
    // Envoy as istiod would send it (here: the watched ECDS file).
    let pid = istio.pid();
    let edited = distinct(ROUTES, port, true);
    let started = Instant::now();
    let plugin = distinct_plugin(&edited, &gateway);
    let reconciled = started.elapsed();
    let written = Instant::now();
    put_ecds(&ecds, &plugin, 2);
    while seen(&probe(port, EDITED, "b")) != want(EDITED, true) {
        assert!(
            written.elapsed() < Duration::from_secs(60),
            "the edited policy was never served; log:\n{}",
            istio.log_tail()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let served = written.elapsed();
    eprintln!(
        "istio-10k: policy edit: reconcile {reconciled:?} (test build), ECDS written -> new policy served in {served:?}"
    );
    assert_eq!(istio.pid(), pid, "Envoy was not restarted");
    for &i in PICKED {
        assert_eq!(
            seen(&probe(port, i, "b")),
            want(i, true),
            "route {i} after the edit"
        );
    }
    for line in accepted_lines(&log_dir) {
        eprintln!("istio-10k: {line}");
    }
}
