//! Discovery, list and watch through kube-rs.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail by panicking
mod support;

use attache_apiserver::Verb;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ListParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::watcher;
use kube::{Api, Discovery, ResourceExt};
use serde_json::json;
use support::{config, start, within};

fn config_map(name: &str, app: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default", "labels": {"app": app}},
        "data": {"k": "v"},
    }))
    .unwrap()
}

#[tokio::test]
async fn discovery_lists_the_served_kinds_and_a_missing_kind_is_404() {
    let (_server, client) = start(config()).await;
    let discovery = Discovery::new(client.clone()).run().await.unwrap();
    let kinds: Vec<(String, String)> = discovery
        .groups()
        .flat_map(|g| g.recommended_resources())
        .map(|(r, _)| (r.group, r.kind))
        .collect();
    for (group, kind) in [
        ("policy.attache.dev", "RoutePolicy"),
        ("policy.attache.dev", "ClusterRoutePolicy"),
        ("coordination.k8s.io", "Lease"),
        ("events.k8s.io", "Event"),
        ("", "Namespace"),
    ] {
        assert!(
            kinds.contains(&(group.into(), kind.into())),
            "{group} {kind} in {kinds:?}"
        );
    }
    let (resource, caps) = discovery
        .groups()
        .flat_map(|g| g.recommended_resources())
        .find(|(r, _)| r.kind == "RoutePolicy")
        .unwrap();
    assert_eq!(resource.plural, "routepolicies");
    assert!(
        caps.subresources.iter().any(|(s, _)| s.plural == "status"),
        "{caps:?}"
    );
    assert!(!kinds.iter().any(|(_, k)| k == "WasmPlugin"));
    let plugins = support::route_policies(&client, "default");
    let missing: Api<kube::api::DynamicObject> = Api::all_with(
        client,
        &kube::api::ApiResource {
            group: "extensions.istio.io".into(),
            version: "v1alpha1".into(),
            api_version: "extensions.istio.io/v1alpha1".into(),
            kind: "WasmPlugin".into(),
            plural: "wasmplugins".into(),
        },
    );
    match missing.list(&ListParams::default()).await {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 404),
        other => panic!("a kind not served must be 404, got {other:?}"),
    }
    assert!(plugins.list(&ListParams::default()).await.is_ok());
}

#[tokio::test]
async fn list_pages_are_one_consistent_list_and_selectors_select() {
    let (server, client) = start(config()).await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    for i in 0..7 {
        let app = if i % 2 == 0 { "even" } else { "odd" };
        api.create(&PostParams::default(), &config_map(&format!("cm-{i}"), app))
            .await
            .unwrap();
    }
    let first = api.list(&ListParams::default().limit(3)).await.unwrap();
    assert_eq!(first.items.len(), 3);
    let token = first.metadata.continue_.clone().unwrap();
    assert_eq!(first.metadata.remaining_item_count, Some(4));
    // A change after the first page is not in the later pages.
    api.create(&PostParams::default(), &config_map("cm-late", "odd"))
        .await
        .unwrap();
    let mut names: Vec<String> = first.items.iter().map(|c| c.name_any()).collect();
    let mut token = Some(token);
    while let Some(t) = token {
        let page = api
            .list(&ListParams::default().limit(3).continue_token(&t))
            .await
            .unwrap();
        assert_eq!(
            page.metadata.resource_version,
            first.metadata.resource_version
        );
        names.extend(page.items.iter().map(|c| c.name_any()));
        token = page.metadata.continue_.filter(|t| !t.is_empty());
    }
    let expected: Vec<String> = (0..7).map(|i| format!("cm-{i}")).collect();
    assert_eq!(names, expected);
    let odd = api
        .list(&ListParams::default().labels("app=odd"))
        .await
        .unwrap();
    assert_eq!(odd.items.len(), 4);
    let no_app = api
        .list(&ListParams::default().labels("!app"))
        .await
        .unwrap();
    assert!(no_app.items.is_empty());
    let by_name = api
        .list(&ListParams::default().fields("metadata.name=cm-3"))
        .await
        .unwrap();
    assert_eq!(by_name.items.len(), 1);
    assert!(server.log().count(Verb::List, "configmaps", None) >= 6);
}

#[tokio::test]
async fn a_watcher_sees_adds_changes_and_deletes() {
    let (_server, client) = start(config()).await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let mut events = watcher(api.clone(), watcher::Config::default()).boxed();
    within(async {
        while !matches!(
            events.try_next().await.unwrap(),
            Some(watcher::Event::InitDone)
        ) {}
    })
    .await;
    api.create(&PostParams::default(), &config_map("a", "x"))
        .await
        .unwrap();
    let patch = json!({"data": {"k": "changed"}});
    api.patch("a", &Default::default(), &kube::api::Patch::Merge(&patch))
        .await
        .unwrap();
    api.delete("a", &Default::default()).await.unwrap();
    let mut seen = Vec::new();
    within(async {
        while seen.len() < 3 {
            match events.try_next().await.unwrap() {
                Some(watcher::Event::Apply(cm)) => {
                    seen.push(format!("apply {}", cm.data.unwrap()["k"]))
                }
                Some(watcher::Event::Delete(cm)) => seen.push(format!("delete {}", cm.name_any())),
                _ => {}
            }
        }
    })
    .await;
    assert_eq!(seen, ["apply v", "apply changed", "delete a"]);
}

#[tokio::test]
async fn watches_get_bookmarks_and_initial_events_end_with_one() {
    let (_server, client) = start(config()).await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(&PostParams::default(), &config_map("a", "x"))
        .await
        .unwrap();
    let mut stream = api
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    let first = within(stream.try_next()).await.unwrap().unwrap();
    assert!(
        matches!(first, WatchEvent::Added(ref cm) if cm.name_any() == "a"),
        "{first:?}"
    );
    let second = within(stream.try_next()).await.unwrap().unwrap();
    assert!(matches!(second, WatchEvent::Bookmark(_)), "{second:?}");

    let mut streaming = api
        .watch(&WatchParams::streaming_lists(), "")
        .await
        .unwrap()
        .boxed();
    let added = within(streaming.try_next()).await.unwrap().unwrap();
    assert!(matches!(added, WatchEvent::Added(_)), "{added:?}");
    match within(streaming.try_next()).await.unwrap().unwrap() {
        WatchEvent::Bookmark(b) => {
            assert_eq!(
                b.metadata
                    .annotations
                    .get("k8s.io/initial-events-end")
                    .map(String::as_str),
                Some("true")
            )
        }
        other => panic!("expected the initial-events-end bookmark, got {other:?}"),
    }
}

#[tokio::test]
async fn a_watch_from_a_compacted_version_gets_410_and_a_watcher_relists() {
    let (server, client) = start(config()).await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(&PostParams::default(), &config_map("a", "x"))
        .await
        .unwrap();
    let old = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    api.create(&PostParams::default(), &config_map("b", "x"))
        .await
        .unwrap();
    server.compact();
    let mut stream = api
        .watch(&WatchParams::default(), &old)
        .await
        .unwrap()
        .boxed();
    match within(stream.try_next()).await.unwrap().unwrap() {
        WatchEvent::Error(e) => assert_eq!(e.code, 410),
        other => panic!("expected 410, got {other:?}"),
    }

    let mut events = watcher(api.clone(), watcher::Config::default()).boxed();
    within(async { while !matches!(events.next().await, Some(Ok(watcher::Event::InitDone))) {} })
        .await;
    let lists = server.log().count(Verb::List, "configmaps", None);
    // Changes the watcher has not seen, then a restart that loses them.
    api.create(&PostParams::default(), &config_map("c", "x"))
        .await
        .unwrap();
    server.restart(true);
    api.create(&PostParams::default(), &config_map("d", "x"))
        .await
        .unwrap();
    let mut relisted = Vec::new();
    within(async {
        while !relisted.contains(&"d".to_string()) {
            if let Some(Ok(watcher::Event::InitApply(cm) | watcher::Event::Apply(cm))) =
                events.next().await
            {
                relisted.push(cm.name_any());
            }
        }
    })
    .await;
    assert!(
        server.log().count(Verb::List, "configmaps", None) > lists,
        "the watcher listed again"
    );
}
