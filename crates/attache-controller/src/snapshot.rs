//! What the watchers hold, as the pure reconcile sees it: every object read
//! through the one reader (`attache_input::api_object`), the plugins
//! (WasmPlugins, TrafficExtensions) the controller wrote before, and the
//! kinds whose CRD is not installed.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use attache_core::source::SourceDoc;
use attache_core::topology::ObjectKey;
use attache_core::Pieces;
use serde_json::Value;

use crate::kinds::WatchedKind;

/// The cluster as the watchers last saw it.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Objects of the input kinds, read; in `WATCHED_KINDS` order, then namespace
    /// and name, so that the same cluster gives the same bytes. Shared with
    /// the read cache: a round copies none.
    pub docs: Vec<Arc<ReadObject>>,
    /// Each document's content version
    /// ([`content_version`](crate::content_hash::content_version)), by
    /// origin: what the incremental
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

/// One object as the controller keeps it between rounds, in one form: what
/// the resolver's reader made of it ([`Pieces`], assembled each round by
/// `attache_core::assemble`) and the slim document the later passes read
/// (serving, the ancestor count, status patches, Events). Its spec is in
/// the pieces and nowhere else: a second JSON copy of 10,000 routes and
/// policies cost 270 MiB (bench/findings.md, "Memory: what a round keeps").
#[derive(Debug)]
pub struct ReadObject {
    /// `apiVersion`, `kind`, `metadata` and `status`, and `spec` only for
    /// the kinds [`SPEC_READ_AFTER_PARSING`] names.
    pub doc: SourceDoc,
    pub pieces: Pieces,
    /// How many entries of other controllers its live `status.ancestors`
    /// has (GEP-713 counts them toward the 16): counted when it is read,
    /// since every round asks and walking 10,000 statuses each time cost
    /// most of a round's ancestor limit.
    pub foreign_ancestors: usize,
}

/// Kinds whose `spec` is read outside the parser: which Gateways are
/// served (`crate::serving`) reads a GatewayClass's `controllerName` and a
/// Gateway's `gatewayClassName`. There are few of them.
pub const SPEC_READ_AFTER_PARSING: [&str; 2] = ["GatewayClass", "Gateway"];

impl ReadObject {
    /// Reads `doc` and keeps its pieces and what later passes read of it.
    pub fn read(mut doc: SourceDoc) -> ReadObject {
        let pieces = Pieces::read(&doc);
        if let Value::Object(fields) = &mut doc.value {
            let spec_read = fields
                .get("kind")
                .and_then(Value::as_str)
                .is_some_and(|kind| SPEC_READ_AFTER_PARSING.contains(&kind));
            fields.retain(|field, _| match field.as_str() {
                "apiVersion" | "kind" | "metadata" | "status" => true,
                "spec" => spec_read,
                _ => false,
            });
        }
        let foreign_ancestors = doc.value["status"]["ancestors"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|a| a["controllerName"] != attache_core::status::CONTROLLER_NAME)
            .count();
        ReadObject {
            doc,
            pieces,
            foreign_ancestors,
        }
    }
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
    /// Its namespace (empty when cluster-scoped) and name, borrowed: a
    /// snapshot sorts every object by them each round.
    fn namespace_and_name(&self) -> (&str, &str);
    fn key(&self) -> ObjectKey {
        let (namespace, name) = self.namespace_and_name();
        ObjectKey {
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }
    fn to_json(&self) -> Result<Value, serde_json::Error>;
    /// What reading it gave, when it was read as it arrived
    /// (`crate::kube::watch::Watched`): the snapshot takes that as it is.
    fn already_read(&self) -> Option<Read> {
        None
    }
}

impl ApiObject for Value {
    fn uid(&self) -> Option<&str> {
        self["metadata"]["uid"].as_str()
    }
    fn resource_version(&self) -> Option<&str> {
        self["metadata"]["resourceVersion"].as_str()
    }
    fn namespace_and_name(&self) -> (&str, &str) {
        let meta = &self["metadata"];
        (
            meta["namespace"].as_str().unwrap_or_default(),
            meta["name"].as_str().unwrap_or_default(),
        )
    }
    fn to_json(&self) -> Result<Value, serde_json::Error> {
        Ok(self.clone())
    }
}

/// What reading one object gave: the object read (shared with every
/// snapshot that holds it, never copied per round) and its content version.
pub type Read = Result<Option<(Arc<ReadObject>, u64)>, Unreadable>;

/// Reads one object of an input kind: converted to JSON, through the one
/// reader, then parsed ([`ReadObject::read`]).
pub fn read_one(kind: &WatchedKind, object: &impl ApiObject) -> Read {
    encode(kind, object).and_then(|value| {
        let version_of_content = crate::content_hash::content_version(&value);
        read_object(kind, value)
            .map(|doc| doc.map(|doc| (Arc::new(ReadObject::read(doc)), version_of_content)))
    })
}

/// Objects already read, by kind and uid, with the resourceVersion they were
/// read at: an object is converted and read again only when it changed, so
/// that a round over 10,000 routes neither converts nor parses 10,000
/// unchanged routes. The one cache of objects between rounds: the
/// reflector stores hold the typed objects, this holds them read
/// ([`ReadObject`]: parsed, and only the slim rest as JSON).
#[derive(Debug, Default)]
pub struct ReadCache {
    /// By kind, then [`cache_id`]: looked up by `&str`, without a key
    /// allocated per object and round.
    read: HashMap<&'static str, HashMap<String, Entry>>,
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
fn cache_id<'a>(kind: &WatchedKind, object: &'a impl ApiObject) -> Cow<'a, str> {
    object.uid().map_or_else(
        || {
            let key = object.key();
            Cow::Owned(format!(
                "api:{}/{}/{}",
                kind.plural, key.namespace, key.name
            ))
        },
        Cow::Borrowed,
    )
}

impl ReadCache {
    fn read(&mut self, kind: &'static WatchedKind, object: &impl ApiObject) -> Read {
        if let Some(read) = object.already_read() {
            return read;
        }
        let id = cache_id(kind, object);
        let version = object.resource_version().unwrap_or_default();
        let of_kind = self.read.entry(kind.kind).or_default();
        if let Some(entry) = of_kind.get_mut(&*id) {
            if entry.version == version && !version.is_empty() {
                entry.seen = self.round;
                return entry.read.clone();
            }
        }
        let read = read_one(kind, object);
        let entry = Entry {
            version: version.to_string(),
            read: read.clone(),
            seen: self.round,
        };
        of_kind.insert(id.into_owned(), entry);
        read
    }

    /// Starts reading a snapshot.
    fn start(&mut self) {
        self.round += 1;
    }

    /// Forgets objects the snapshot just read did not have.
    fn forget_unseen(&mut self) {
        let round = self.round;
        for of_kind in self.read.values_mut() {
            of_kind.retain(|_, entry| entry.seen == round);
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
        let mut snapshot = Snapshot {
            missing,
            ..Snapshot::default()
        };
        cache.start();
        for (kind, object) in in_order(objects) {
            if kind.role == crate::kinds::Role::Output {
                match encode(kind, object) {
                    Ok(value) => {
                        snapshot
                            .plugins
                            .entry(kind.kind)
                            .or_default()
                            .insert(object.key(), value);
                    }
                    Err(why) => snapshot.unreadable.push(why.to_string()),
                }
                continue;
            }
            match cache.read(kind, object) {
                Ok(Some((object, version))) => {
                    snapshot.versions.insert(object.doc.origin.clone(), version);
                    snapshot.docs.push(object);
                }
                Ok(None) => {}
                Err(why) => snapshot.unreadable.push(why.to_string()),
            }
        }
        cache.forget_unseen();
        snapshot
    }
}

/// Objects in the order a snapshot holds them: by kind in `WATCHED_KINDS`
/// order, then namespace and name (borrowed: a round sorts every object,
/// and copies no name to do it).
fn in_order<'a, O: ApiObject + 'a>(
    objects: impl IntoIterator<Item = (&'static WatchedKind, &'a O)>,
) -> Vec<(&'static WatchedKind, &'a O)> {
    let mut rows: Vec<(usize, (&str, &str), &'static WatchedKind, &O)> = objects
        .into_iter()
        .map(|(kind, object)| {
            let rank = crate::kinds::WATCHED_KINDS
                .iter()
                .position(|k| k == kind)
                .unwrap_or(usize::MAX);
            (rank, object.namespace_and_name(), kind, object)
        })
        .collect();
    rows.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    rows.into_iter()
        .map(|(_, _, kind, object)| (kind, object))
        .collect()
}

/// Every input object read whole, in a snapshot's order, and why each one
/// refused was: for a one-shot read of the cluster (the CLI's live read),
/// which parses each document once and keeps nothing.
pub fn read_whole<'a, O: ApiObject + 'a>(
    objects: impl IntoIterator<Item = (&'static WatchedKind, &'a O)>,
) -> (Vec<SourceDoc>, Vec<Unreadable>) {
    let mut docs = Vec::new();
    let mut unreadable = Vec::new();
    for (kind, object) in in_order(objects) {
        if kind.role == crate::kinds::Role::Output {
            continue;
        }
        match encode(kind, object).and_then(|value| read_object(kind, value)) {
            Ok(Some(doc)) => docs.push(doc),
            Ok(None) => {}
            Err(why) => unreadable.push(why),
        }
    }
    (docs, unreadable)
}

#[cfg(test)]
mod tests {
    use super::{ReadCache, Snapshot};
    use crate::kinds::named;
    use serde_json::json;

    #[test]
    fn a_route_is_kept_parsed_with_only_what_later_passes_read_as_json() {
        let route = json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": "r", "namespace": "shop", "uid": "u1", "resourceVersion": "1"},
            "spec": {"parentRefs": [{"name": "edge"}], "rules": [{}]},
            "status": {"parents": []}});
        let gateway = json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
            "metadata": {"name": "edge", "namespace": "shop", "uid": "u2", "resourceVersion": "1"},
            "spec": {"gatewayClassName": "c", "listeners": [{"name": "http", "protocol": "HTTP", "port": 80}]}});
        let rows = [(&route, "HTTPRoute"), (&gateway, "Gateway")];
        let rows = rows.map(|(value, kind)| (named(kind).unwrap(), value));
        let mut cache = ReadCache::default();
        let snapshot = Snapshot::read(rows, Default::default(), &mut cache);
        let [gateway_read, route_read] = [0, 1].map(|i| &snapshot.docs[i]);
        // The route's spec is in its pieces alone; its status stays for the
        // status patches.
        assert_eq!(route_read.doc.value.get("spec"), None);
        assert_eq!(route_read.doc.value["status"], json!({"parents": []}));
        assert_eq!(route_read.doc.value["metadata"]["uid"], "u1");
        let inputs = attache_core::assemble(snapshot.docs.iter().map(|d| &d.pieces));
        assert_eq!(inputs.routes.len(), 1);
        assert_eq!(inputs.gateways.len(), 1);
        // Which Gateways are served reads a Gateway's spec after parsing.
        assert_eq!(gateway_read.doc.value["spec"]["gatewayClassName"], "c");
        // Read again at the same resourceVersion: the same object, shared.
        let again = Snapshot::read(rows, Default::default(), &mut cache);
        assert!(std::sync::Arc::ptr_eq(&again.docs[1], route_read));
    }
}
