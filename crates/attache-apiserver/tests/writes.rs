//! Server-side apply, the status subresource, pruning, generation, faults.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail by panicking
mod support;

use std::time::Duration;

use attache_apiserver::{Scope, Verb};
use futures::TryStreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams, WatchParams};
use kube::Api;
use serde_json::json;
use support::{config, route_policies, route_policy, start, within};

fn data(value: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared"}, "data": {"k": value}})
}

fn managers_of(cm: &ConfigMap) -> Vec<String> {
    cm.metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|m| m.manager.clone())
        .collect()
}

#[tokio::test]
async fn apply_conflicts_without_force_and_takes_the_field_with_force() {
    let (_server, client) = start(config()).await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.patch(
        "shared",
        &PatchParams::apply("one"),
        &Patch::Apply(data("1")),
    )
    .await
    .unwrap();
    // The same value from another manager is shared ownership, not a conflict.
    api.patch(
        "shared",
        &PatchParams::apply("two"),
        &Patch::Apply(data("1")),
    )
    .await
    .unwrap();
    match api
        .patch(
            "shared",
            &PatchParams::apply("three"),
            &Patch::Apply(data("3")),
        )
        .await
    {
        Err(kube::Error::Api(s)) => {
            assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"));
            let causes = s.details.unwrap().causes;
            let fields: Vec<String> = causes.iter().map(|c| c.field.clone()).collect();
            assert_eq!(fields, [".data.k", ".data.k"], "{causes:?}");
            assert!(
                causes[0].message.contains("conflict with \"one\""),
                "{causes:?}"
            );
        }
        other => panic!("expected a 409 conflict, got {other:?}"),
    }
    let forced = api
        .patch(
            "shared",
            &PatchParams::apply("three").force(),
            &Patch::Apply(data("3")),
        )
        .await
        .unwrap();
    assert_eq!(forced.data.unwrap()["k"], "3");
    let stored = api.get("shared").await.unwrap();
    assert_eq!(managers_of(&stored), ["three"], "the others lost .data.k");
    // Applying without a field the manager owned alone removes it.
    let mut without = data("3");
    without["data"] = json!({"other": "x"});
    let after = api
        .patch(
            "shared",
            &PatchParams::apply("three"),
            &Patch::Apply(without),
        )
        .await
        .unwrap();
    assert_eq!(after.data.unwrap().keys().collect::<Vec<_>>(), ["other"]);
}

#[tokio::test]
async fn status_writes_are_optimistic_and_never_touch_spec_or_generation() {
    let (server, client) = start(config()).await;
    let api = route_policies(&client, "default");
    let created: DynamicObject = serde_json::from_value(route_policy("p")).unwrap();
    let created = api.create(&PostParams::default(), &created).await.unwrap();
    let rv = created.metadata.resource_version.clone().unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    let status = |rv: &str| {
        json!({
            "metadata": {"resourceVersion": rv},
            "spec": {"defaults": {"timeouts": {"request": "1s"}}},
            "status": {"conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted",
                       "message": "", "lastTransitionTime": "2025-01-01T00:00:00Z", "observedGeneration": 1}]},
        })
    };
    let written = api
        .patch_status("p", &PatchParams::default(), &Patch::Merge(status(&rv)))
        .await
        .unwrap();
    assert_eq!(written.data["status"]["conditions"][0]["type"], "Accepted");
    assert_eq!(
        written.data["spec"]["defaults"]["timeouts"]["request"], "15s",
        "a status write left spec alone"
    );
    assert_eq!(written.metadata.generation, Some(1));
    match api
        .patch_status("p", &PatchParams::default(), &Patch::Merge(status(&rv)))
        .await
    {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 409),
        other => panic!("a stale resourceVersion must be a 409, got {other:?}"),
    }
    // A main-resource write never changes status; a spec change bumps generation.
    let spec = json!({"spec": {"defaults": {"timeouts": {"request": "2s"}}}, "status": {"conditions": []}});
    let edited = api
        .patch("p", &PatchParams::default(), &Patch::Merge(spec))
        .await
        .unwrap();
    assert_eq!(edited.metadata.generation, Some(2));
    assert_eq!(edited.data["status"]["conditions"][0]["type"], "Accepted");
    // A label change is not a spec change.
    let labels = json!({"metadata": {"labels": {"team": "a"}}});
    let labelled = api
        .patch("p", &PatchParams::default(), &Patch::Merge(labels))
        .await
        .unwrap();
    assert_eq!(labelled.metadata.generation, Some(2));
    assert_eq!(
        server
            .log()
            .count_ok(Verb::Patch, "routepolicies", Some("status")),
        1
    );
    assert_eq!(
        server
            .log()
            .count(Verb::Patch, "routepolicies", Some("status")),
        2
    );
}

#[tokio::test]
async fn writes_are_pruned_with_the_crd_schema_and_a_no_op_is_not_stored() {
    let (server, client) = start(config()).await;
    let api = route_policies(&client, "default");
    let mut object = route_policy("p");
    object["spec"]["notInTheSchema"] = json!(true);
    object["spec"]["defaults"]["timeouts"]["bogus"] = json!("x");
    object["topLevelJunk"] = json!(1);
    let params = PatchParams::apply("test");
    let applied = api
        .patch("p", &params, &Patch::Apply(&object))
        .await
        .unwrap();
    assert!(
        applied.data["spec"].get("notInTheSchema").is_none(),
        "{:?}",
        applied.data
    );
    assert!(applied.data.get("topLevelJunk").is_none());
    assert_eq!(
        applied.data["spec"]["defaults"]["timeouts"],
        json!({"request": "15s"})
    );
    let stored = server
        .object("policy.attache.dev", "routepolicies", "default", "p")
        .unwrap();
    assert!(stored["spec"].get("notInTheSchema").is_none());
    let status = json!({"status": {"conditions": [], "madeUp": 1}});
    let written = api
        .patch_status("p", &PatchParams::default(), &Patch::Merge(status))
        .await
        .unwrap();
    assert!(written.data["status"].get("madeUp").is_none());

    let rv = server.resource_version();
    let again = api
        .patch("p", &params, &Patch::Apply(&object))
        .await
        .unwrap();
    assert_eq!(
        server.resource_version(),
        rv,
        "an apply that changes nothing is not stored"
    );
    assert_eq!(again.metadata.generation, Some(1));
}

#[tokio::test]
async fn injected_faults_answer_429_500_and_drop_watches() {
    let (server, client) = start(config()).await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    server
        .faults()
        .throttle(Scope::Resource("configmaps".into()), 1, 7);
    let raw = raw_get(&server.url(), "/api/v1/namespaces/default/configmaps/x").await;
    assert!(raw.starts_with("HTTP/1.1 429"), "{raw}");
    assert!(raw.to_ascii_lowercase().contains("retry-after: 7"), "{raw}");
    assert!(raw.contains("\"retryAfterSeconds\":7"), "{raw}");
    // kube-rs retries a 429 itself: the second answer is the real one.
    server
        .faults()
        .throttle(Scope::Resource("configmaps".into()), 1, 1);
    assert!(api.get_opt("x").await.unwrap().is_none());
    let statuses: Vec<u16> = server
        .log()
        .records()
        .iter()
        .filter(|r| r.verb == Verb::Get)
        .map(|r| r.status)
        .collect();
    assert_eq!(statuses, [429, 429, 404]);
    server
        .faults()
        .fail_for(Scope::Writes, 500, Duration::from_secs(60));
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "x"}})).unwrap();
    match api.create(&PostParams::default(), &cm).await {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 500),
        other => panic!("expected 500, got {other:?}"),
    }
    assert!(api.get_opt("x").await.is_ok(), "reads are not in the scope");
    server.faults().clear();
    api.create(&PostParams::default(), &cm).await.unwrap();

    let stream = api.watch(&WatchParams::default(), "0").await.unwrap();
    futures::pin_mut!(stream);
    within(stream.try_next()).await.unwrap().unwrap();
    server.drop_watches();
    assert!(
        within(stream.try_next()).await.unwrap().is_none(),
        "the stream ended"
    );
}

/// One GET over a plain TCP connection: the answer as text, headers included.
async fn raw_get(url: &str, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let address = url.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    within(stream.read_to_string(&mut answer)).await.unwrap();
    answer
}

#[tokio::test]
async fn a_custom_resource_put_needs_the_current_resource_version() {
    let (_server, client) = start(config()).await;
    let api = route_policies(&client, "default");
    let created: DynamicObject = serde_json::from_value(route_policy("p")).unwrap();
    let created = api.create(&PostParams::default(), &created).await.unwrap();
    let mut body: DynamicObject = serde_json::from_value(route_policy("p")).unwrap();
    match api.replace("p", &PostParams::default(), &body).await {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 422),
        other => panic!("a PUT without resourceVersion must be 422, got {other:?}"),
    }
    body.metadata.resource_version = Some("1".into());
    match api.replace("p", &PostParams::default(), &body).await {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 409),
        other => panic!("a stale PUT must be 409, got {other:?}"),
    }
    body.metadata.resource_version = created.metadata.resource_version.clone();
    body.data["spec"]["defaults"]["timeouts"]["request"] = json!("9s");
    let replaced = api
        .replace("p", &PostParams::default(), &body)
        .await
        .unwrap();
    assert_eq!(replaced.metadata.generation, Some(2));
}
