//! The cluster with a change laid over it (docs/semantics.md section 13,
//! "Overlay"): what `attache diff --cluster -f CHANGE` compares the cluster
//! with. Each object of the change replaces the cluster's object of the
//! same group, kind, namespace and name, or is added; one annotated
//! `attache.dev/delete: "true"` removes that object instead.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::model::kinds::TARGET_KINDS;
use crate::model::policy::{Scope, KINDS};
use crate::source::SourceDoc;

/// The annotation that makes an object of the change a deletion.
pub const DELETE_ANNOTATION: &str = "attache.dev/delete";

/// What the overlay gave: the objects, and what the change asked for that
/// it could not do (a deletion of an object the cluster does not have).
#[derive(Debug, Clone, PartialEq)]
pub struct Overlay {
    pub docs: Vec<SourceDoc>,
    pub notes: Vec<String>,
}

/// An object's identity: group, kind, namespace (`default` when a
/// namespaced object leaves it out, as the parser reads it; empty for a
/// cluster-scoped kind) and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Identity {
    group: String,
    kind: String,
    namespace: String,
    name: String,
}

impl Identity {
    fn of(value: &Value) -> Option<Identity> {
        let api_version = value["apiVersion"].as_str()?;
        let kind = value["kind"].as_str()?;
        let name = value["metadata"]["name"].as_str()?;
        let group = api_version
            .rsplit_once('/')
            .map_or("", |(group, _)| group)
            .to_string();
        let namespace = if cluster_scoped(&group, kind) {
            String::new()
        } else {
            value["metadata"]["namespace"]
                .as_str()
                .unwrap_or("default")
                .to_string()
        };
        Some(Identity {
            group,
            kind: kind.to_string(),
            namespace,
            name: name.to_string(),
        })
    }
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.namespace.as_str() {
            "" => write!(f, "{} {}", self.kind, self.name),
            ns => write!(f, "{} {ns}/{}", self.kind, self.name),
        }
    }
}

/// Whether a kind the resolver reads lives outside namespaces (the tables'
/// word; a kind it does not read is taken as namespaced, the common case).
fn cluster_scoped(group: &str, kind: &str) -> bool {
    TARGET_KINDS
        .iter()
        .any(|t| t.group == group && t.name == kind && !t.namespaced)
        || KINDS
            .iter()
            .any(|k| k.group == group && k.name == kind && k.scope == Scope::Cluster)
}

fn deletes(value: &Value) -> bool {
    value["metadata"]["annotations"][DELETE_ANNOTATION].as_str() == Some("true")
}

/// `cluster`, then each object of `change` in its place. The cluster's
/// order is kept (a replaced object takes the change's value and origin in
/// the cluster object's place); added objects follow in the change's
/// order. An object of the change with no identity (no kind or name) is
/// added as it is, for the parser to report.
pub fn overlay(cluster: Vec<SourceDoc>, change: Vec<SourceDoc>) -> Overlay {
    let mut replacing: BTreeMap<Identity, SourceDoc> = BTreeMap::new();
    let mut deleting: BTreeSet<Identity> = BTreeSet::new();
    let mut added: Vec<(Option<Identity>, SourceDoc)> = Vec::new();
    for doc in change {
        match Identity::of(&doc.value) {
            Some(id) if deletes(&doc.value) => {
                replacing.remove(&id);
                added.retain(|(a, _)| a.as_ref() != Some(&id));
                deleting.insert(id);
            }
            Some(id) => {
                deleting.remove(&id);
                added.retain(|(a, _)| a.as_ref() != Some(&id));
                replacing.insert(id.clone(), doc.clone());
                added.push((Some(id), doc));
            }
            None => added.push((None, doc)),
        }
    }
    let mut found: BTreeSet<Identity> = BTreeSet::new();
    let mut docs = Vec::with_capacity(cluster.len() + added.len());
    for doc in cluster {
        let Some(id) = Identity::of(&doc.value) else {
            docs.push(doc);
            continue;
        };
        if deleting.contains(&id) {
            found.insert(id);
            continue;
        }
        match replacing.get(&id) {
            Some(change) => {
                docs.push(change.clone());
                found.insert(id);
            }
            None => docs.push(doc),
        }
    }
    docs.extend(
        added
            .into_iter()
            .filter(|(id, _)| id.as_ref().is_none_or(|id| !found.contains(id)))
            .map(|(_, doc)| doc),
    );
    let notes = deleting
        .iter()
        .filter(|id| !found.contains(id))
        .map(|id| {
            format!("{id}: {DELETE_ANNOTATION} asks to delete it, but the cluster has no such object; nothing deleted")
        })
        .collect();
    Overlay { docs, notes }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Origin;
    use serde_json::json;

    fn doc(file: &str, value: Value) -> SourceDoc {
        SourceDoc {
            origin: Origin {
                file: file.into(),
                document: 1,
                item: None,
            },
            value,
        }
    }

    fn route(ns: Option<&str>, name: &str, marker: &str) -> Value {
        let mut v = json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": name}, "spec": {"marker": marker}});
        if let Some(ns) = ns {
            v["metadata"]["namespace"] = json!(ns);
        }
        v
    }

    fn markers(overlay: &Overlay) -> Vec<String> {
        overlay
            .docs
            .iter()
            .map(|d| {
                format!(
                    "{}:{}",
                    d.value["metadata"]["name"].as_str().unwrap_or("?"),
                    d.value["spec"]["marker"].as_str().unwrap_or("-")
                )
            })
            .collect()
    }

    #[test]
    fn a_change_replaces_in_place_adds_after_and_deletes_by_annotation() {
        let cluster = vec![
            doc("api", route(Some("shop"), "a", "old")),
            doc("api", route(Some("shop"), "b", "old")),
            doc("api", route(Some("default"), "c", "old")),
        ];
        let mut gone = route(Some("shop"), "b", "ignored");
        gone["metadata"]["annotations"] = json!({DELETE_ANNOTATION: "true"});
        let change = vec![
            doc("pr.yaml", route(Some("shop"), "new", "new")),
            doc("pr.yaml", route(Some("shop"), "a", "new")),
            doc("pr.yaml", gone),
            // No namespace: `default`, as the parser reads it.
            doc("pr.yaml", route(None, "c", "new")),
        ];
        let out = overlay(cluster, change);
        assert_eq!(markers(&out), ["a:new", "c:new", "new:new"]);
        assert!(out.notes.is_empty(), "{:?}", out.notes);
        assert_eq!(out.docs[0].origin.file, "pr.yaml");
    }

    #[test]
    fn a_kind_of_another_group_or_namespace_is_another_object() {
        let cluster = vec![doc("api", route(Some("shop"), "a", "old"))];
        let mut other_group = route(Some("shop"), "a", "grouped");
        other_group["apiVersion"] = json!("example.com/v1");
        let change = vec![
            doc("pr", other_group),
            doc("pr", route(Some("web"), "a", "web")),
        ];
        let out = overlay(cluster, change);
        assert_eq!(markers(&out), ["a:old", "a:grouped", "a:web"]);
    }

    #[test]
    fn deleting_what_the_cluster_lacks_is_said_and_a_later_object_wins() {
        let mut gone = json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
            "metadata": {"name": "x", "namespace": "ignored", "annotations": {DELETE_ANNOTATION: "true"}}});
        let out = overlay(Vec::new(), vec![doc("pr", gone.clone())]);
        assert!(out.docs.is_empty());
        assert_eq!(
            out.notes,
            ["GatewayClass x: attache.dev/delete asks to delete it, but the cluster has no such object; nothing deleted"]
        );
        // Deleted, then given again: the later object stands.
        gone["metadata"]["annotations"] = json!({});
        let mut first = gone.clone();
        first["metadata"]["annotations"] = json!({DELETE_ANNOTATION: "true"});
        let out = overlay(Vec::new(), vec![doc("pr", first), doc("pr", gone)]);
        assert_eq!(out.docs.len(), 1);
        assert!(out.notes.is_empty());
    }
}
