//! What the watchers hold, as the pure reconcile sees it: every object read
//! through the one reader (`attache_input::api_object`), the plugins
//! (WasmPlugins, TrafficExtensions) the controller wrote before, and the
//! kinds whose CRD is not installed.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use attache_core::source::SourceDoc;
use attache_core::topology::ObjectKey;
use serde_json::Value;

use crate::kinds::WatchedKind;

/// The cluster as the watchers last saw it.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Objects of the input kinds, read; in `WATCHED_KINDS` order, then namespace
    /// and name, so that the same cluster gives the same bytes. Shared with
    /// the read cache: a round copies none.
    pub docs: Vec<Arc<SourceDoc>>,
    /// Each document's [`content_version`], by origin: what the incremental
    /// reconcile fingerprints a Gateway's scope with (`crate::scope`).
    pub versions: crate::scope::Versions,
    /// Objects the reader refused, with why (each one alone is skipped).
    pub unreadable: Vec<String>,
    /// Our plugins as the API has them, by kind (`WasmPlugin`,
    /// `TrafficExtension`), then namespace and name: the reconcile compares
    /// with the kind it writes and deletes ours of either kind that must go.
    pub plugins: BTreeMap<&'static str, BTreeMap<ObjectKey, Value>>,
    /// Kinds not served by the API server (their CRD is not installed).
    pub missing: BTreeSet<&'static str>,
}

/// `api:<plural>/<namespace>/<name>`: how messages name an object read from
/// the API (where a file's path stands for `-f`).
pub fn label(kind: &WatchedKind, value: &Value) -> String {
    let meta = &value["metadata"];
    let name = meta["name"].as_str().unwrap_or("?");
    match meta["namespace"].as_str() {
        Some(ns) => format!("api:{}/{ns}/{name}", kind.plural),
        None => format!("api:{}/{name}", kind.plural),
    }
}

/// Why an object from the API could not be read (each one alone is
/// skipped, and named in the log).
#[derive(Debug, Clone, thiserror::Error)]
pub enum Unreadable {
    #[error("{label}: {source}")]
    Encode {
        label: String,
        #[source]
        source: Arc<serde_json::Error>,
    },
    #[error("{0}")]
    Reader(#[source] attache_input::YamlError),
}

/// One object from the API through the reader every file goes through.
/// `managedFields` is dropped first: bookkeeping of the API server that the
/// resolver does not read and that would only cost parsing.
pub fn read_object(kind: &WatchedKind, mut value: Value) -> Result<Option<SourceDoc>, Unreadable> {
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    let label = label(kind, &value);
    let json = serde_json::to_string(&value).map_err(|e| Unreadable::Encode {
        label: label.clone(),
        source: Arc::new(e),
    })?;
    attache_input::api_object(&label, &kind.api_version(), kind.kind, &json)
        .map_err(Unreadable::Reader)
}

/// The namespace and name of an object.
pub fn key_of(value: &Value) -> ObjectKey {
    let meta = &value["metadata"];
    ObjectKey {
        namespace: meta["namespace"].as_str().unwrap_or_default().to_string(),
        name: meta["name"].as_str().unwrap_or_default().to_string(),
    }
}

/// An object as a watcher holds it: what the read cache needs to know
/// whether it was read before (kind, uid, resourceVersion) without
/// converting it, and the conversion to JSON when it was not.
pub trait ApiObject {
    fn uid(&self) -> Option<&str>;
    fn resource_version(&self) -> Option<&str>;
    fn key(&self) -> ObjectKey;
    fn to_json(&self) -> Result<Value, serde_json::Error>;
}

impl ApiObject for Value {
    fn uid(&self) -> Option<&str> {
        self["metadata"]["uid"].as_str()
    }
    fn resource_version(&self) -> Option<&str> {
        self["metadata"]["resourceVersion"].as_str()
    }
    fn key(&self) -> ObjectKey {
        key_of(self)
    }
    fn to_json(&self) -> Result<Value, serde_json::Error> {
        Ok(self.clone())
    }
}

/// What reading one object gave: the document (shared with every snapshot
/// that holds it, never copied per round) and its content version.
type Read = Result<Option<(Arc<SourceDoc>, u64)>, Unreadable>;

/// Objects already read, by kind and uid, with the resourceVersion they were
/// read at: an object is converted and read again only when it changed, so
/// that a round over 10,000 routes neither converts nor parses 10,000
/// unchanged routes. The one cache of objects between rounds: the
/// reflector stores hold the typed objects, this holds them read.
#[derive(Debug, Default)]
pub struct ReadCache {
    read: HashMap<(&'static str, String), Entry>,
    /// The number of the snapshot being read: an entry it does not stamp
    /// is of an object gone since, and is forgotten when it ends.
    round: u64,
}

/// One object read: the resourceVersion it was read at, what reading it
/// gave, and the last snapshot that saw it.
#[derive(Debug)]
struct Entry {
    version: String,
    read: Read,
    seen: u64,
}

/// An object as JSON, or why it cannot be (named as the log names it).
fn encode(kind: &WatchedKind, object: &impl ApiObject) -> Result<Value, Unreadable> {
    object.to_json().map_err(|e| {
        let key = object.key();
        let mut value = serde_json::json!({"metadata": {"name": key.name}});
        if !key.namespace.is_empty() {
            value["metadata"]["namespace"] = Value::String(key.namespace);
        }
        Unreadable::Encode {
            label: label(kind, &value),
            source: Arc::new(e),
        }
    })
}

/// An object's identity in the cache: its uid, or its label when the API
/// gave none (a test's object).
fn cache_id(kind: &WatchedKind, object: &impl ApiObject) -> String {
    object.uid().map_or_else(
        || {
            let key = object.key();
            format!("api:{}/{}/{}", kind.plural, key.namespace, key.name)
        },
        str::to_string,
    )
}

impl ReadCache {
    fn read(&mut self, kind: &'static WatchedKind, object: &impl ApiObject) -> Read {
        let id = (kind.kind, cache_id(kind, object));
        let version = object.resource_version().unwrap_or_default();
        if let Some(entry) = self.read.get_mut(&id) {
            if entry.version == version && !version.is_empty() {
                entry.seen = self.round;
                return entry.read.clone();
            }
        }
        let read = encode(kind, object).and_then(|value| {
            let version_of_content = content_version(&value);
            read_object(kind, value).map(|doc| doc.map(|doc| (Arc::new(doc), version_of_content)))
        });
        let entry = Entry {
            version: version.to_string(),
            read: read.clone(),
            seen: self.round,
        };
        self.read.insert(id, entry);
        read
    }

    /// Starts reading a snapshot.
    fn start(&mut self) {
        self.round += 1;
    }

    /// Forgets objects the snapshot just read did not have.
    fn forget_unseen(&mut self) {
        let round = self.round;
        self.read.retain(|_, entry| entry.seen == round);
    }
}

/// A hash of what the reconcile reads of an object: all of it but the
/// bookkeeping that changes without a change of meaning
/// (`metadata.resourceVersion`, `managedFields`) and our own status. Of
/// `status` only other controllers' ancestors are read (GEP-713's limit of
/// 16 counts them), so the controller's own status write coming back
/// changes no version and makes no Gateway resolve again.
pub fn content_version(value: &Value) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    if let Value::Object(map) = value {
        for (field, v) in map {
            match field.as_str() {
                "status" => {
                    for ancestor in v["ancestors"].as_array().into_iter().flatten() {
                        if ancestor["controllerName"] != attache_core::status::CONTROLLER_NAME {
                            hash_value(ancestor, &mut hasher);
                        }
                    }
                }
                "metadata" => {
                    for (name, m) in v.as_object().into_iter().flatten() {
                        if !matches!(name.as_str(), "resourceVersion" | "managedFields") {
                            name.hash(&mut hasher);
                            hash_value(m, &mut hasher);
                        }
                    }
                }
                _ => {
                    field.hash(&mut hasher);
                    hash_value(v, &mut hasher);
                }
            }
        }
    }
    hasher.finish()
}

/// `serde_json::Value` has no `Hash`: each variant tagged, then its content.
pub(crate) fn hash_value(value: &Value, hasher: &mut impl Hasher) {
    match value {
        Value::Null => 0u8.hash(hasher),
        Value::Bool(b) => (1u8, b).hash(hasher),
        Value::Number(n) => (2u8, n.to_string()).hash(hasher),
        Value::String(s) => (3u8, s).hash(hasher),
        Value::Array(items) => {
            (4u8, items.len()).hash(hasher);
            items.iter().for_each(|v| hash_value(v, hasher));
        }
        Value::Object(map) => {
            (5u8, map.len()).hash(hasher);
            for (k, v) in map {
                k.hash(hasher);
                hash_value(v, hasher);
            }
        }
    }
}

impl Snapshot {
    /// Our live plugin of `kind` named `key`, if the watcher holds one.
    pub fn live_plugin(&self, kind: &WatchedKind, key: &ObjectKey) -> Option<&Value> {
        self.plugins.get(kind.kind)?.get(key)
    }

    /// Builds a snapshot from raw objects (what the tests and the adapter
    /// hand in), reading each; the order of `objects` does not matter.
    pub fn from_objects<'a, O: ApiObject + 'a>(
        objects: impl IntoIterator<Item = (&'static WatchedKind, &'a O)>,
        missing: BTreeSet<&'static str>,
    ) -> Snapshot {
        Snapshot::read(objects, missing, &mut ReadCache::default())
    }

    /// [`Snapshot::from_objects`] reading only what changed since `cache`
    /// last saw it.
    pub fn read<'a, O: ApiObject + 'a>(
        objects: impl IntoIterator<Item = (&'static WatchedKind, &'a O)>,
        missing: BTreeSet<&'static str>,
        cache: &mut ReadCache,
    ) -> Snapshot {
        let mut rows: Vec<(usize, ObjectKey, &'static WatchedKind, &O)> = objects
            .into_iter()
            .map(|(kind, object)| {
                let rank = crate::kinds::WATCHED_KINDS
                    .iter()
                    .position(|k| k == kind)
                    .unwrap_or(usize::MAX);
                (rank, object.key(), kind, object)
            })
            .collect();
        rows.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        let mut snapshot = Snapshot {
            missing,
            ..Snapshot::default()
        };
        cache.start();
        for (_, key, kind, object) in rows {
            if kind.role == crate::kinds::Role::Output {
                match encode(kind, object) {
                    Ok(value) => {
                        snapshot
                            .plugins
                            .entry(kind.kind)
                            .or_default()
                            .insert(key, value);
                    }
                    Err(why) => snapshot.unreadable.push(why.to_string()),
                }
                continue;
            }
            match cache.read(kind, object) {
                Ok(Some((doc, version))) => {
                    snapshot.versions.insert(doc.origin.clone(), version);
                    snapshot.docs.push(doc);
                }
                Ok(None) => {}
                Err(why) => snapshot.unreadable.push(why.to_string()),
            }
        }
        cache.forget_unseen();
        snapshot
    }
}

#[cfg(test)]
mod tests {
    use super::content_version;
    use serde_json::json;

    fn policy(rv: &str, status: serde_json::Value) -> serde_json::Value {
        json!({"apiVersion": "policy.attache.dev/v1alpha1", "kind": "RoutePolicy",
            "metadata": {"name": "p", "namespace": "shop", "resourceVersion": rv,
                "managedFields": [{"manager": rv}]},
            "spec": {"defaults": {"timeouts": {"request": "5s"}}},
            "status": status})
    }

    #[test]
    fn our_own_status_and_the_bookkeeping_change_no_content_version() {
        let ours = |reason: &str| {
            json!({"conditions": [{"type": "Accepted", "reason": reason}],
                "ancestors": [{"controllerName": attache_core::status::CONTROLLER_NAME, "conditions": [{"reason": reason}]}]})
        };
        let before = content_version(&policy("1", json!({})));
        assert_eq!(before, content_version(&policy("2", ours("Accepted"))));
        assert_eq!(before, content_version(&policy("3", ours("Conflicted"))));
        // Another controller's ancestor counts toward the 16: it is read.
        let theirs = json!({"ancestors": [{"controllerName": "example.com/other"}]});
        assert_ne!(before, content_version(&policy("4", theirs)));
        let mut edited = policy("5", json!({}));
        edited["spec"]["defaults"]["timeouts"]["request"] = json!("6s");
        assert_ne!(before, content_version(&edited));
    }
}
