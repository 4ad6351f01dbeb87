//! Reading manifests from text, the one reader of every object: files and
//! standard input (the CLI's `src/input.rs` reads the bytes) and objects
//! from the Kubernetes API (`attache controller` renders each as JSON, which
//! is YAML). Multi-document streams, `kind: List` and typed lists, duplicate
//! keys refused. No I/O: bytes in, `SourceDoc`s out.

#![forbid(unsafe_code)]

use attache_core::source::{Origin, SourceDoc};
use serde::Deserialize;

pub use strict_value::StrictValue;

mod strict_value;

/// A document that is not valid YAML (or names a key twice).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}: not valid YAML: {message}\n  hint: check indentation and quoting near that line; documents are separated by '---'")]
pub struct YamlError {
    pub origin: Origin,
    pub message: String,
}

/// Splits a YAML stream into objects; empty documents are skipped and the
/// items of a list (`kind: List`, or a typed list such as `HTTPRouteList`)
/// become objects of their own.
pub fn parse_text(file: &str, text: &str, docs: &mut Vec<SourceDoc>) -> Result<(), YamlError> {
    for (index, document) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let origin = Origin {
            file: file.to_string(),
            document: index + 1,
            item: None,
        };
        let StrictValue(value) = StrictValue::deserialize(document).map_err(|e| YamlError {
            origin: origin.clone(),
            message: e.to_string(),
        })?;
        if value.is_null() {
            continue;
        }
        let list = value.as_object().and_then(|map| {
            let item_kind = list_item_kind(map)?;
            let items = map.get("items").and_then(|i| i.as_array());
            Some((item_kind, map.get("apiVersion"), items))
        });
        let Some((item_kind, api_version, items)) = list else {
            docs.push(SourceDoc { origin, value });
            continue;
        };
        for (item, value) in items.into_iter().flatten().enumerate() {
            let mut value = value.clone();
            if !item_kind.is_empty() {
                typed_list_item(&mut value, api_version, item_kind);
            }
            docs.push(SourceDoc {
                origin: Origin {
                    item: Some(item),
                    ..origin.clone()
                },
                value,
            });
        }
    }
    Ok(())
}

/// One object as the Kubernetes API returns it, read like a file: the JSON
/// text the API sent (JSON is YAML) goes through [`parse_text`], so an
/// object from the cluster meets the same parser and the same diagnostics
/// as one from `-f`. `label` names it in messages (`api:httproutes/shop/web`).
/// `apiVersion` and `kind` are filled in when the API left them out, as it
/// does for the items of a list (the same rule as a typed list's items).
pub fn api_object(
    label: &str,
    api_version: &str,
    kind: &str,
    json: &str,
) -> Result<Option<SourceDoc>, YamlError> {
    let mut docs = Vec::new();
    parse_text(label, json, &mut docs)?;
    let mut doc = docs.into_iter().next();
    if let Some(doc) = doc.as_mut() {
        // Not a document of a file: the label alone names it.
        doc.origin.document = 0;
        let api_version = serde_json::Value::String(api_version.to_string());
        typed_list_item(&mut doc.value, Some(&api_version), kind);
    }
    Ok(doc)
}

/// The kind of a list's items: `Some("")` for a plain `List` (each item
/// names its own kind), `Some("HTTPRoute")` for a typed `HTTPRouteList`, as
/// the API server returns a collection; `None` for anything else. A typed
/// list must carry an `items` array, so that a kind which merely ends in
/// `List` is not taken for one.
fn list_item_kind(map: &serde_json::Map<String, serde_json::Value>) -> Option<&str> {
    let kind = map.get("kind")?.as_str()?;
    if kind == "List" {
        return Some("");
    }
    let item_kind = kind.strip_suffix("List").filter(|k| !k.is_empty())?;
    map.get("items")?.as_array()?;
    Some(item_kind)
}

/// The API server leaves `apiVersion` and `kind` out of a typed list's
/// items (the list names them once); an item that names its own keeps them.
fn typed_list_item(
    value: &mut serde_json::Value,
    api_version: Option<&serde_json::Value>,
    item_kind: &str,
) {
    let Some(item) = value.as_object_mut() else {
        return;
    };
    if let Some(api_version) = api_version {
        item.entry("apiVersion")
            .or_insert_with(|| api_version.clone());
    }
    item.entry("kind")
        .or_insert_with(|| serde_json::Value::String(item_kind.to_string()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_api_object_is_read_like_a_list_item() {
        let doc = api_object(
            "api:httproutes/shop/web",
            "gateway.networking.k8s.io/v1",
            "HTTPRoute",
            r#"{"metadata":{"name":"web","namespace":"shop"},"spec":{}}"#,
        )
        .unwrap()
        .unwrap();
        assert_eq!(doc.origin.to_string(), "api:httproutes/shop/web");
        assert_eq!(doc.value["kind"], "HTTPRoute");
        assert_eq!(doc.value["apiVersion"], "gateway.networking.k8s.io/v1");
        let err = api_object("api:x", "v1", "X", r#"{"a": 1, "a": 2}"#).unwrap_err();
        assert!(err.to_string().contains("duplicate key \"a\""), "{err}");
    }

    #[test]
    fn multi_document_and_lists_keep_their_origin() {
        let mut docs = Vec::new();
        parse_text(
            "in.yaml",
            "kind: Gateway\n---\n---\nkind: List\nitems:\n- kind: A\n- kind: B\n",
            &mut docs,
        )
        .unwrap();
        let origins: Vec<String> = docs.iter().map(|d| d.origin.to_string()).collect();
        assert_eq!(
            origins,
            [
                "in.yaml (document 1)",
                "in.yaml (document 3, items[0])",
                "in.yaml (document 3, items[1])"
            ]
        );
    }

    #[test]
    fn a_typed_list_gives_its_items_the_list_s_api_version_and_kind() {
        let mut docs = Vec::new();
        let text = "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRouteList\nmetadata: {resourceVersion: \"7\"}\nitems:\n- metadata: {name: a, namespace: shop}\n- apiVersion: gateway.networking.k8s.io/v1beta1\n  kind: HTTPRoute\n  metadata: {name: b, namespace: shop}\n";
        parse_text("routes.yaml", text, &mut docs).unwrap();
        let read: Vec<(String, String, String)> = docs
            .iter()
            .map(|d| {
                (
                    d.origin.to_string(),
                    d.value["apiVersion"].as_str().unwrap_or("").to_string(),
                    d.value["kind"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect();
        assert_eq!(
            read,
            [
                (
                    "routes.yaml (document 1, items[0])".to_string(),
                    "gateway.networking.k8s.io/v1".to_string(),
                    "HTTPRoute".to_string()
                ),
                (
                    "routes.yaml (document 1, items[1])".to_string(),
                    "gateway.networking.k8s.io/v1beta1".to_string(),
                    "HTTPRoute".to_string()
                ),
            ]
        );
    }

    #[test]
    fn a_kind_ending_in_list_without_items_is_an_object() {
        let mut docs = Vec::new();
        parse_text("x.yaml", "kind: AllowList\nspec: {}\n", &mut docs).unwrap();
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].value["kind"], "AllowList");
    }

    #[test]
    fn bad_yaml_names_file_and_document() {
        let mut docs = Vec::new();
        let err = parse_text("x.yaml", "kind: A\n---\nkind: [unclosed\n", &mut docs).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("x.yaml (document 2): not valid YAML"),
            "{err}"
        );
    }

    #[test]
    fn duplicate_keys_are_an_error_naming_the_key() {
        let mut docs = Vec::new();
        let err = parse_text(
            "p.yaml",
            "kind: A\n---\nspec:\n  timeouts: {request: 1s, request: 60s}\n",
            &mut docs,
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("p.yaml (document 2): not valid YAML"),
            "{text}"
        );
        assert!(text.contains("duplicate key \"request\""), "{text}");
    }

    #[test]
    fn non_string_keys_read_as_kubernetes_reads_them() {
        let mut docs = Vec::new();
        parse_text("k.yaml", "labels: {80: http, true: yes}\n", &mut docs).unwrap();
        assert_eq!(
            docs[0].value,
            serde_json::json!({"labels": {"80": "http", "true": "yes"}})
        );
    }
}
