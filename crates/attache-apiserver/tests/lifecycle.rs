//! CRDs written through the API, finalizers, watch timeouts, and the binary.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail by panicking
mod support;

use futures::TryStreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use support::{config, route_policies, start, within};

#[tokio::test]
async fn a_crd_written_through_the_api_serves_its_kind_until_deleted() {
    let (server, client) = start(attache_apiserver::Config::default()).await;
    let policies = route_policies(&client, "default");
    let missing = policies.list(&ListParams::default()).await;
    assert!(
        matches!(missing, Err(kube::Error::Api(ref s)) if s.code == 404),
        "{missing:?}"
    );
    let crds = attache_apiserver::read_manifests(&support::crds()).unwrap();
    let crd_api: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &kube::api::ApiResource {
            group: "apiextensions.k8s.io".into(),
            version: "v1".into(),
            api_version: "apiextensions.k8s.io/v1".into(),
            kind: "CustomResourceDefinition".into(),
            plural: "customresourcedefinitions".into(),
        },
    );
    let routepolicies = crds
        .iter()
        .find(|c| c["spec"]["names"]["plural"] == "routepolicies")
        .unwrap();
    let crd: DynamicObject = serde_json::from_value(routepolicies.clone()).unwrap();
    let name = crd.name_any();
    let created = crd_api.create(&PostParams::default(), &crd).await.unwrap();
    assert_eq!(
        created.data["status"]["conditions"][1]["type"],
        "Established"
    );
    assert!(policies.list(&ListParams::default()).await.is_ok());
    let served = server.objects("apiextensions.k8s.io", "customresourcedefinitions");
    assert_eq!(served.len(), 1);
    crd_api.delete(&name, &Default::default()).await.unwrap();
    assert!(server
        .objects("apiextensions.k8s.io", "customresourcedefinitions")
        .is_empty());
}

#[tokio::test]
async fn finalizers_hold_a_deleted_object_until_they_are_removed() {
    let (server, client) = start(config()).await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "held", "finalizers": ["x/y"]}}))
            .unwrap();
    api.create(&PostParams::default(), &cm).await.unwrap();
    api.delete("held", &Default::default()).await.unwrap();
    let marked = api.get("held").await.unwrap();
    assert!(marked.metadata.deletion_timestamp.is_some());
    let clear = json!({"metadata": {"finalizers": null}});
    api.patch("held", &PatchParams::default(), &Patch::Merge(clear))
        .await
        .unwrap();
    assert!(api.get_opt("held").await.unwrap().is_none());
    assert!(server.object("", "configmaps", "default", "held").is_none());
}

#[tokio::test]
async fn a_watch_ends_after_its_timeout() {
    let (_server, client) = start(config()).await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let params = WatchParams::default().timeout(1).disable_bookmarks();
    let stream = api.watch(&params, "0").await.unwrap();
    futures::pin_mut!(stream);
    assert!(
        within(stream.try_next()).await.unwrap().is_none(),
        "no event, then the end"
    );
}

#[tokio::test]
async fn the_binary_serves_its_manifests_and_writes_a_kubeconfig() {
    use tokio::io::AsyncBufReadExt;
    let dir = std::env::temp_dir().join(format!("attache-apiserver-bin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_attache-apiserver"))
        .args(["--port", "0", "--gateway-api", "--kubeconfig"])
        .arg(&kubeconfig)
        .arg(support::crds())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let url = within(lines.next_line()).await.unwrap().unwrap();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(&kubeconfig).unwrap(),
        &Default::default(),
    )
    .await
    .unwrap();
    assert_eq!(config.cluster_url.to_string().trim_end_matches('/'), url);
    let client = kube::Client::try_from(config).unwrap();
    let policies = route_policies(&client, "default");
    assert!(policies
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .is_empty());
    child.kill().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_delayed_resource_answers_after_an_undelayed_one() {
    use k8s_openapi::api::core::v1::Secret;
    let (server, client) = start(config()).await;
    server.faults().delay(
        attache_apiserver::Scope::Resource("secrets".into()),
        std::time::Duration::from_secs(3),
    );
    let secrets: Api<Secret> = Api::default_namespaced(client.clone());
    let slow = tokio::spawn(async move { secrets.get_opt("s").await });
    tokio::task::yield_now().await;
    let maps: Api<ConfigMap> = Api::default_namespaced(client);
    assert!(maps.get_opt("m").await.unwrap().is_none());
    assert!(
        !slow.is_finished(),
        "the delayed request is still held back"
    );
    assert!(within(slow).await.unwrap().unwrap().is_none());
}

#[tokio::test]
async fn a_change_that_leaves_a_watch_selector_is_a_deletion() {
    use kube::api::WatchEvent;
    let (_server, client) = start(config()).await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "a", "labels": {"app": "x"}}})).unwrap();
    api.create(&PostParams::default(), &cm).await.unwrap();
    let params = WatchParams::default().labels("app=x").disable_bookmarks();
    let stream = api.watch(&params, "0").await.unwrap();
    futures::pin_mut!(stream);
    let added = within(stream.try_next()).await.unwrap().unwrap();
    assert!(matches!(added, WatchEvent::Added(_)), "{added:?}");
    let relabel = json!({"metadata": {"labels": {"app": "y"}}});
    api.patch("a", &PatchParams::default(), &Patch::Merge(relabel))
        .await
        .unwrap();
    let left = within(stream.try_next()).await.unwrap().unwrap();
    assert!(
        matches!(left, WatchEvent::Deleted(ref c) if c.name_any() == "a"),
        "{left:?}"
    );
}

#[tokio::test]
async fn the_request_log_streams_each_request_as_it_is_answered() {
    use attache_apiserver::Verb;
    let (server, client) = start(config()).await;
    let mut requests = server.log().subscribe();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "a"}})).unwrap();
    api.patch("a", &PatchParams::apply("me"), &Patch::Apply(&cm))
        .await
        .unwrap();
    let record = within(requests.recv()).await.unwrap();
    assert_eq!(
        (record.verb, record.resource.as_str(), record.status),
        (Verb::Apply, "configmaps", 201)
    );
    assert_eq!(record.field_manager.as_deref(), Some("me"));
    assert!(record.answered >= record.received);
    assert_eq!(server.log().writes(), 1);
}

#[tokio::test]
async fn seeding_keeps_status_and_replaces_an_existing_object() {
    let (server, _client) = start(config().with_gateway_api()).await;
    let gateway = |class: &str| {
        json!({
            "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
            "metadata": {"name": "edge", "namespace": "infra"},
            "spec": {"gatewayClassName": class, "listeners": []},
            "status": {"conditions": [{"type": "Accepted", "status": "True"}]},
        })
    };
    server.seed([gateway("a")]).unwrap();
    server.seed([gateway("b")]).unwrap();
    let stored = server
        .object("gateway.networking.k8s.io", "gateways", "infra", "edge")
        .unwrap();
    assert_eq!(stored["spec"]["gatewayClassName"], "b");
    assert_eq!(stored["status"]["conditions"][0]["type"], "Accepted");
    assert_eq!(stored["metadata"]["generation"], 2);
    assert!(
        server.object("", "namespaces", "", "infra").is_some(),
        "its namespace was created"
    );
}
