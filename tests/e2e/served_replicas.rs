//! Programmed means served, with real Envoys as the replicas: the
//! controller's real loop against the stand-in API server (examples/shop),
//! three Envoys running the filter, each a Pod of the Gateway whose
//! `status.podIP` is the loopback address its admin listens on. The test
//! is istiod: it writes each Envoy's ECDS file from the WasmPlugin the
//! controller applied (the `pluginConfig` as protojson writes it), or
//! holds one back, or feeds one a document it refuses. The controller
//! reads each admin's `/stats/prometheus` (docs/controller.md, "Programmed
//! means served").

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use attache_apiserver::{Handle, KindSpec, StandIn};
use attache_controller::kube::scrape::ScrapeOptions;
use attache_controller::kube::{run, Options};
use serde_json::{json, Value};

use crate::harness::envoy::Envoy;
use crate::harness::paths;
use crate::harness::scratch::Scratch;
use crate::istio::shape::{ecds_filter, istio_ecds, protojson};

const PLUGIN: &str = "infra.attache-edge";
const WITHIN: Duration = Duration::from_secs(60);

struct Replica {
    ip: IpAddr,
    ecds: PathBuf,
    envoy: Option<Envoy>,
}

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One listener answering 200 from Envoy itself, the filter before the
/// router, its configuration from `ecds`; the admin on `ip`:`admin`.
fn bootstrap(ip: IpAddr, admin: u16, listener: u16, ecds: &Path) -> Value {
    json!({
        // ECDS from a file needs a node, as any xDS source does.
        "node": {"id": format!("edge-{ip}"), "cluster": "infra/edge"},
        "admin": {"address": {"socket_address": {"address": ip.to_string(), "port_value": admin}}},
        "static_resources": {"listeners": [{
            "name": "http",
            "address": {"socket_address": {"address": "127.0.0.1", "port_value": listener}},
            "filter_chains": [{"filters": [{
                "name": "envoy.filters.network.http_connection_manager",
                "typed_config": {
                    "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
                    "stat_prefix": "http",
                    "route_config": {"virtual_hosts": [{"name": "all", "domains": ["*"],
                        "routes": [{"match": {"prefix": "/"}, "direct_response": {"status": 200}}]}]},
                    "http_filters": [
                        ecds_filter(PLUGIN, ecds),
                        {"name": "envoy.filters.http.router", "typed_config": {
                            "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}
                    ]
                }
            }]}]
        }]}
    })
}

/// What istiod would push: the ECDS file, replaced in one rename.
fn push(replica: &Replica, plugin_config: &str, version: u32) {
    let mut ecds = istio_ecds(PLUGIN, "attache", &paths::wasm(), plugin_config);
    ecds["version_info"] = json!(version.to_string());
    let tmp = replica.ecds.with_extension("tmp");
    std::fs::write(&tmp, ecds.to_string()).expect("write ECDS");
    std::fs::rename(&tmp, &replica.ecds).expect("rename ECDS");
}

fn pod(i: usize, ip: IpAddr, ready: bool) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("edge-{i}"), "namespace": "infra",
                     "labels": {"gateway.networking.k8s.io/gateway-name": "edge"}},
        "spec": {"containers": [{"name": "istio-proxy", "image": "proxyv2"}]},
        "status": {"podIP": ip.to_string(),
                   "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}
    })
}

/// The `pluginConfig` of the WasmPlugin applied, as protojson writes it,
/// once its resourceVersion differs from `after`.
fn applied(server: &Handle, after: &str) -> (String, String) {
    let started = Instant::now();
    loop {
        if let Some(plugin) = server.object(
            "extensions.istio.io",
            "wasmplugins",
            "infra",
            "attache-edge",
        ) {
            let version = plugin["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or("")
                .to_owned();
            if version != after {
                return (version, protojson(&plugin["spec"]["pluginConfig"]));
            }
        }
        assert!(started.elapsed() < WITHIN, "no new WasmPlugin applied");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The `Programmed` condition of `shop/storefront` at its first ancestor.
fn programmed(server: &Handle) -> Value {
    server
        .object("policy.attache.dev", "routepolicies", "shop", "storefront")
        .and_then(|p| {
            let conditions = p["status"]["ancestors"][0]["conditions"]
                .as_array()?
                .clone();
            conditions.into_iter().find(|c| c["type"] == "Programmed")
        })
        .unwrap_or(Value::Null)
}

/// Waits until Programmed is `status` and its message holds `words`.
fn wait_for(server: &Handle, status: &str, words: &str) -> Duration {
    let started = Instant::now();
    loop {
        let c = programmed(server);
        if c["status"] == status && c["message"].as_str().unwrap_or("").contains(words) {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < WITHIN,
            "still {c:#} (waiting for {status} / {words})"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn edit_storefront(server: &Handle, request: &str) {
    let mut policy = server
        .object("policy.attache.dev", "routepolicies", "shop", "storefront")
        .expect("storefront");
    policy["spec"]["defaults"]["timeouts"]["request"] = json!(request);
    server.seed([policy]).expect("edit");
}

fn storefront_status_writes(server: &Handle, since: Instant) -> usize {
    server
        .log()
        .records()
        .into_iter()
        .filter(|r| {
            r.received >= since && r.verb.is_write() && r.path.contains("/storefront/status")
        })
        .count()
}

#[test]
fn programmed_follows_what_real_envoys_serve() {
    // The controller reads what a WasmPlugin's .wasm publishes
    // (`wasmcustom.` stats); the module is not delivered that way.
    if crate::harness::filter::wasm_only("programmed_follows_what_real_envoys_serve") {
        return;
    }
    let scratch = Scratch::new("served-replicas");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let shop = attache_apiserver::read_manifests(&workspace().join("examples/shop")).expect("shop");
    let config = attache_apiserver::Config::default()
        .with_gateway_api()
        .with_manifests(&[workspace().join("deploy/crds")])
        .expect("CRDs")
        .with_kind(KindSpec::new("", "v1", "Pod", "pods", true).with_status())
        .with_objects(shop);
    let server = runtime.block_on(StandIn::start(config)).expect("stand-in");
    let kubeconfig = scratch.join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).expect("kubeconfig");

    let admin = paths::free_port();
    let mut replicas: Vec<Replica> = (0..3)
        .map(|i| Replica {
            ip: IpAddr::from([127, 0, 0, 2 + i as u8]),
            ecds: scratch.join(&format!("ecds-{i}/attache.json")),
            envoy: None,
        })
        .collect();
    let pods: Vec<Value> = replicas
        .iter()
        .enumerate()
        .map(|(i, r)| pod(i, r.ip, true))
        .collect();
    server.seed(pods).expect("pods");
    let options = Options {
        config: attache_controller::reconcile::Config::default(),
        kubeconfig: Some(kubeconfig),
        probe_address: "127.0.0.1:0".parse().expect("address"),
        lease: None,
        identity: "served-replicas".into(),
        debounce: Duration::from_millis(50),
        max_delay: Duration::from_millis(300),
        plugin_kind: Default::default(),
        served: Some(ScrapeOptions {
            port: admin,
            timeout: Duration::from_secs(1),
            ..ScrapeOptions::default()
        }),
    };
    let _controller = runtime.spawn(async move {
        let _ = run(options).await;
    });

    // istiod pushes the first document to all three, which start.
    let (version, first) = applied(&server, "");
    for (i, replica) in replicas.iter_mut().enumerate() {
        let dir = replica.ecds.parent().expect("dir").to_owned();
        std::fs::create_dir_all(&dir).expect("ECDS dir");
        push(replica, &first, 1);
        let listener = paths::free_port();
        let path = dir.join("envoy.json");
        let text = bootstrap(replica.ip, admin, listener, &replica.ecds).to_string();
        std::fs::write(&path, text).expect("bootstrap");
        let envoy = Envoy::try_start_at(&path, &replica.ip.to_string(), admin, listener, &dir)
            .unwrap_or_else(|log| panic!("Envoy {i} did not start; log:\n{log}"));
        replica.envoy = Some(envoy);
    }
    wait_for(&server, "True", "served by 3 of 3 replicas");

    // An edit reaches two of them: Pending, then Programmed once the third has it.
    edit_storefront(&server, "7s");
    let (version, second) = applied(&server, &version);
    push(&replicas[0], &second, 2);
    push(&replicas[1], &second, 2);
    wait_for(&server, "False", "served by 2 of 3 replicas");
    push(&replicas[2], &second, 2);
    let caught_up = wait_for(&server, "True", "served by 3 of 3 replicas");
    eprintln!(
        "served-replicas: ECDS written to the last replica -> Programmed True in {caught_up:?}"
    );

    // The third refuses the next one (a schema-1 document): Rejected.
    edit_storefront(&server, "8s");
    let (_, third) = applied(&server, &version);
    push(&replicas[0], &third, 3);
    push(&replicas[1], &third, 3);
    let schema_1 =
        Value::String(r#"{"schemaVersion": 1, "gateway": "infra/edge", "routes": []}"#.into());
    push(&replicas[2], &schema_1.to_string(), 3);
    wait_for(
        &server,
        "False",
        "refused by 1 of 3 replicas of Gateway infra/edge (schema",
    );
    push(&replicas[2], &third, 4);
    wait_for(&server, "True", "served by 3 of 3 replicas");

    // A killed replica leaves the ready set: one status write, no storm.
    let killed = Instant::now();
    replicas[2].envoy = None;
    server
        .seed([pod(2, replicas[2].ip, false)])
        .expect("not ready");
    wait_for(&server, "True", "served by 2 of 2 replicas");
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(storefront_status_writes(&server, killed), 1);
}
