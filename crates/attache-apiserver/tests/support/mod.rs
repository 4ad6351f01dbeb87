//! What the stand-in's tests share: a server with the project's CRDs, and
//! a kube-rs client of it.

#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Duration;

use attache_apiserver::{Config, Handle, StandIn};
use kube::api::{ApiResource, DynamicObject};
use kube::{Api, Client};

pub fn crds() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy/crds")
}

pub fn config() -> Config {
    Config {
        bookmark_interval: Duration::from_millis(100),
        ..Config::default()
    }
    .with_manifests(&[crds()])
    .unwrap()
}

pub async fn start(config: Config) -> (Handle, Client) {
    let server = StandIn::start(config).await.unwrap();
    let client = Client::try_from(kube::Config::new(server.url().parse().unwrap())).unwrap();
    (server, client)
}

pub fn route_policies(client: &Client, namespace: &str) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: "policy.attache.dev".into(),
        version: "v1alpha1".into(),
        api_version: "policy.attache.dev/v1alpha1".into(),
        kind: "RoutePolicy".into(),
        plural: "routepolicies".into(),
    };
    Api::namespaced_with(client.clone(), namespace, &resource)
}

pub fn route_policy(name: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "policy.attache.dev/v1alpha1",
        "kind": "RoutePolicy",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "edge"}],
            "defaults": {"timeouts": {"request": "15s"}},
        },
    })
}

/// Waits for `what`, at most 10 s (a hang is a failure, not a measure).
pub async fn within<T>(what: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), what)
        .await
        .expect("timed out")
}
