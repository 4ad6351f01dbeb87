//! The controller's real loop against the stand-in API server: starting
//! both, reading the write log, and the oracle every scenario ends with
//! (a round from scratch over the stored objects would write nothing).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use attache_apiserver::{Config as ServerConfig, Handle, StandIn};
use attache_controller::kinds::{named, Role};
use attache_controller::kube::{run, Options};
use attache_controller::reconcile::{reconcile, Config, Outcome};
use attache_controller::snapshot::Snapshot;
use attache_controller::status::{self, Applied};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

/// A port nobody listens on now, for the probe server.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The stand-in serving the CRDs, examples/shop and the Lease's namespace.
pub async fn shop_server() -> Handle {
    let shop = attache_apiserver::read_manifests(&repo("examples/shop")).unwrap();
    let home =
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "attache-system"}});
    let config = ServerConfig::default()
        .with_gateway_api()
        .with_manifests(&[repo("deploy/crds")])
        .unwrap()
        .with_objects(shop.into_iter().chain([home]));
    StandIn::start(config).await.unwrap()
}

/// The controller's loop on a task, with a Lease held as `identity`.
pub fn start_controller(
    server: &Handle,
    identity: &str,
    probe_port: u16,
) -> tokio::task::JoinHandle<()> {
    start_controller_with(server, identity, probe_port, Config::default())
}

/// [`start_controller`] with its own reconcile configuration.
pub fn start_controller_with(
    server: &Handle,
    identity: &str,
    probe_port: u16,
    config: Config,
) -> tokio::task::JoinHandle<()> {
    start_controller_tuned(server, identity, probe_port, config, |_| {})
}

/// [`start_controller_with`], its options changed by `tune` (the
/// coalescing window, say).
pub fn start_controller_tuned(
    server: &Handle,
    identity: &str,
    probe_port: u16,
    config: Config,
    tune: impl FnOnce(&mut Options),
) -> tokio::task::JoinHandle<()> {
    let dir = std::env::temp_dir().join(format!("attache-{identity}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();
    let mut options = Options {
        config,
        kubeconfig: Some(kubeconfig),
        probe_address: format!("127.0.0.1:{probe_port}").parse().unwrap(),
        lease: Some(("attache-system".into(), "attache-controller".into())),
        identity: identity.into(),
        debounce: Duration::from_millis(50),
        max_delay: Duration::from_millis(300),
        plugin_kind: Default::default(),
        served: None,
    };
    tune(&mut options);
    tokio::spawn(async move {
        run(options).await.unwrap();
    })
}

/// Writes other than the Lease's since `since`, one line each.
pub fn writes_since(server: &Handle, since: Instant) -> Vec<String> {
    server
        .log()
        .records()
        .into_iter()
        .filter(|r| r.received >= since && r.verb.is_write() && r.resource != "leases")
        .map(|r| format!("{} {} -> {}", r.method, r.path, r.status))
        .collect()
}

/// Whether a round from scratch over what the server stores would write
/// nothing: every served Gateway's plugin current, every status current.
/// `Err` says what it would still write.
pub fn converged(server: &Handle) -> Result<(), String> {
    let objects: Vec<Value> = server.all_objects();
    let rows = objects.iter().filter_map(|o| {
        let kind = named(o["kind"].as_str()?)?;
        // Only our WasmPlugins are watched (by label), as the watcher does.
        let ours = kind.role != Role::Output
            || o["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "attache";
        ours.then_some((kind, o))
    });
    let snapshot = Snapshot::from_objects(rows, Default::default());
    let plan = reconcile(&Config::default(), &snapshot);
    let pending: Vec<String> = plan
        .gateways
        .iter()
        .filter(|(_, o)| !matches!(o, Outcome::Unchanged))
        .map(|(k, o)| format!("Gateway {k}: {o:?}"))
        .collect();
    if !pending.is_empty() {
        return Err(pending.join("\n"));
    }
    let applied: Applied = plan.gateways.keys().map(|k| (k.clone(), Ok(()))).collect();
    let reach = status::reach(&plan.inputs, plan.gateways.keys().cloned());
    let patches = status::patches(
        &plan.inputs,
        &snapshot,
        &reach,
        &applied,
        "2026-01-01T00:00:00Z",
    );
    if patches.is_empty() {
        Ok(())
    } else {
        Err(patches
            .iter()
            .map(|p| format!("status of {} {}", p.kind.kind, p.key))
            .collect::<Vec<_>>()
            .join("\n"))
    }
}

/// Polls [`converged`] until it holds, failing after `bound` with what is
/// still missing.
pub async fn until_converged(server: &Handle, bound: Duration) {
    let deadline = Instant::now() + bound;
    loop {
        match converged(server) {
            Ok(()) => return,
            Err(missing) if Instant::now() > deadline => {
                panic!("not converged after {bound:?}:\n{missing}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// An edit to one policy of examples/shop, through the stand-in's store
/// (a watch event like any client's write).
pub fn edit_policy(server: &Handle, namespace: &str, name: &str, request_timeout: &str) {
    let mut policy = server
        .object("policy.attache.dev", "routepolicies", namespace, name)
        .unwrap();
    let spec = &mut policy["spec"];
    let stanza = if spec.get("defaults").is_some() {
        "defaults"
    } else {
        "overrides"
    };
    spec[stanza]["timeouts"]["request"] = json!(request_timeout);
    server.seed([policy]).unwrap();
}

/// `/metrics` of the controller, as text.
pub async fn metrics(port: u16) -> String {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).await.unwrap();
    text
}

/// The value of one series, named with its labels as the exposition
/// writes them (`attache_gateway_reconciles_total{gateway="infra/edge"}`).
pub fn series(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("{name} missing from\n{text}"))
}

/// Polls `done` every 50 ms, failing after 30 s (a hang, not a measure).
pub async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
