//! Typed list kinds (`HTTPRouteList`, `RoutePolicyList`, ...), as
//! `kubectl get -o yaml` or the API server return a collection, are read
//! like `kind: List`: each item is an object, with the list's `apiVersion`
//! and kind when the item leaves them out (the API server does).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde::Deserialize;

mod support;
use support::{attache, scratch, text, workspace};

/// examples/shop with every object of `kind` moved out of its file into
/// one `<kind>List`, items stripped of `apiVersion` and `kind`.
fn shop_with_list_of(kind: &str, label: &str) -> (std::path::PathBuf, usize) {
    let dir = scratch(label);
    let mut items = Vec::new();
    let mut api_version = None;
    let mut files: Vec<_> = std::fs::read_dir(workspace().join("examples/shop"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    for path in files {
        let mut kept = Vec::new();
        let source = std::fs::read_to_string(&path).unwrap();
        for doc in serde_yaml_ng::Deserializer::from_str(&source) {
            let value = serde_yaml_ng::Value::deserialize(doc).unwrap();
            if value.get("kind").and_then(|k| k.as_str()) == Some(kind) {
                let mut item = value.as_mapping().unwrap().clone();
                api_version = item.remove("apiVersion");
                item.remove("kind");
                items.push(serde_yaml_ng::Value::Mapping(item));
            } else if !value.is_null() {
                kept.push(serde_yaml_ng::to_string(&value).unwrap());
            }
        }
        std::fs::write(dir.join(path.file_name().unwrap()), kept.join("---\n")).unwrap();
    }
    let count = items.len();
    let mut list = serde_yaml_ng::Mapping::new();
    list.insert("apiVersion".into(), api_version.unwrap());
    list.insert("kind".into(), format!("{kind}List").into());
    list.insert("items".into(), serde_yaml_ng::Value::Sequence(items));
    std::fs::write(
        dir.join("99-list.yaml"),
        serde_yaml_ng::to_string(&list).unwrap(),
    )
    .unwrap();
    (dir, count)
}

fn resolve(dir: &std::path::Path) -> serde_json::Value {
    let out = attache(&["resolve", "-f", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        !stderr.contains("List ") && !stderr.contains("is not a kind"),
        "no diagnostic about the list: {stderr}"
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn an_http_route_list_resolves_as_the_routes_it_holds() {
    let shop = workspace().join("examples/shop");
    let (listed, count) = shop_with_list_of("HTTPRoute", "httproutelist");
    assert!(count >= 3, "examples/shop has HTTPRoutes to list");
    let expected = resolve(&shop);
    assert!(!expected["routes"].as_array().unwrap().is_empty());
    assert_eq!(resolve(&listed), expected);
}

#[test]
fn a_route_policy_list_resolves_as_the_policies_it_holds() {
    let shop = workspace().join("examples/shop");
    let (listed, count) = shop_with_list_of("RoutePolicy", "routepolicylist");
    assert!(count >= 3, "examples/shop has RoutePolicies to list");
    assert_eq!(resolve(&listed), resolve(&shop));
}
