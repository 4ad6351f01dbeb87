//! What the watchers hold, as the pure reconcile sees it: every object read
//! through the one reader (`attache_input::api_object`), the WasmPlugins the
//! controller wrote before, and the kinds whose CRD is not installed.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use attache_core::source::SourceDoc;
use attache_core::topology::ObjectKey;
use serde_json::Value;

use crate::kinds::WatchedKind;

/// The cluster as the watchers last saw it.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Objects of the input kinds, read; in `KINDS` order, then namespace
    /// and name, so that the same cluster gives the same bytes.
    pub docs: Vec<SourceDoc>,
    /// Objects the reader refused, with why (each one alone is skipped).
    pub unreadable: Vec<String>,
    /// Our WasmPlugins as the API has them, by namespace and name.
    pub plugins: BTreeMap<ObjectKey, Value>,
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
pub fn read_object(kind: &WatchedKind, value: &Value) -> Result<Option<SourceDoc>, Unreadable> {
    let mut value = value.clone();
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

/// Objects already read, by kind, uid and resourceVersion: an object is
/// read again only when it changed, so that a reconcile of 10,000 routes
/// does not parse 10,000 unchanged routes.
type Read = Result<Option<SourceDoc>, Unreadable>;

#[derive(Debug, Default)]
pub struct ReadCache {
    read: std::collections::HashMap<(&'static str, String), (String, Read)>,
}

impl ReadCache {
    fn read(&mut self, kind: &'static WatchedKind, value: &Value) -> Read {
        let meta = &value["metadata"];
        let id = meta["uid"]
            .as_str()
            .map_or_else(|| label(kind, value), str::to_string);
        let version = meta["resourceVersion"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if let Some((v, read)) = self.read.get(&(kind.kind, id.clone())) {
            if *v == version && !version.is_empty() {
                return read.clone();
            }
        }
        let read = read_object(kind, value);
        self.read.insert((kind.kind, id), (version, read.clone()));
        read
    }

    /// Forgets objects not seen in the last snapshot.
    fn keep_only(&mut self, seen: &std::collections::HashSet<(&'static str, String)>) {
        self.read.retain(|k, _| seen.contains(k));
    }
}

impl Snapshot {
    /// Builds a snapshot from raw objects (what the tests and the adapter
    /// hand in), reading each; the order of `objects` does not matter.
    pub fn from_objects<'a>(
        objects: impl IntoIterator<Item = (&'static WatchedKind, &'a Value)>,
        missing: BTreeSet<&'static str>,
    ) -> Snapshot {
        Snapshot::read(objects, missing, &mut ReadCache::default())
    }

    /// [`Snapshot::from_objects`] reading only what changed since `cache`
    /// last saw it.
    pub fn read<'a>(
        objects: impl IntoIterator<Item = (&'static WatchedKind, &'a Value)>,
        missing: BTreeSet<&'static str>,
        cache: &mut ReadCache,
    ) -> Snapshot {
        let mut rows: Vec<(usize, ObjectKey, &'static WatchedKind, &Value)> = objects
            .into_iter()
            .map(|(kind, value)| {
                let rank = crate::kinds::KINDS
                    .iter()
                    .position(|k| k == kind)
                    .unwrap_or(usize::MAX);
                (rank, key_of(value), kind, value)
            })
            .collect();
        rows.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        let mut snapshot = Snapshot {
            missing,
            ..Snapshot::default()
        };
        let mut seen = std::collections::HashSet::new();
        for (_, key, kind, value) in rows {
            if kind.role == crate::kinds::Role::Output {
                snapshot.plugins.insert(key, value.clone());
                continue;
            }
            let meta = &value["metadata"];
            seen.insert((
                kind.kind,
                meta["uid"]
                    .as_str()
                    .map_or_else(|| label(kind, value), str::to_string),
            ));
            match cache.read(kind, value) {
                Ok(Some(doc)) => snapshot.docs.push(doc),
                Ok(None) => {}
                Err(why) => snapshot.unreadable.push(why.to_string()),
            }
        }
        cache.keep_only(&seen);
        snapshot
    }
}
