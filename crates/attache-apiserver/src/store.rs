//! The object store: objects by resource, namespace and name; one global,
//! monotonically increasing resourceVersion (every change takes the next
//! one, as etcd's revision); and a bounded history of change events that
//! watches resume from. An event older than the history is compacted away:
//! a watch or continue token from before it gets 410 Gone
//! (kubernetes.io/docs/reference/using-api/api-concepts/, "Efficient
//! detection of changes" and "Resource versions").

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use serde_json::{json, Value};

/// `ADDED`, `MODIFIED` or `DELETED`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change, as the history keeps it.
#[derive(Debug, Clone)]
pub struct Event {
    pub rv: u64,
    pub resource: String,
    pub kind: EventType,
    pub object: Arc<Value>,
    /// The object before a change (a watch with a selector turns a change
    /// that leaves the selection into `DELETED`).
    pub previous: Option<Arc<Value>>,
}

type Objects = BTreeMap<(String, String), Arc<Value>>;

/// Objects, the resourceVersion and the history.
#[derive(Debug)]
pub struct Store {
    rv: u64,
    objects: BTreeMap<String, Objects>,
    history: VecDeque<Event>,
    capacity: usize,
    /// Every event with `rv <= compacted` is gone from the history.
    compacted: u64,
    uids: u64,
}

/// The namespace and name of an object.
pub fn key_of(object: &Value) -> (String, String) {
    let meta = &object["metadata"];
    let text = |k: &str| meta[k].as_str().unwrap_or_default().to_string();
    (text("namespace"), text("name"))
}

impl Store {
    pub fn new(capacity: usize) -> Self {
        Store {
            rv: 1,
            objects: BTreeMap::new(),
            history: VecDeque::new(),
            capacity: capacity.max(1),
            compacted: 0,
            uids: 0,
        }
    }

    /// The current resourceVersion (that of the latest change).
    pub fn rv(&self) -> u64 {
        self.rv
    }

    pub fn compacted(&self) -> u64 {
        self.compacted
    }

    /// A new, unique `metadata.uid`.
    pub fn uid(&mut self) -> String {
        self.uids += 1;
        format!("5a1d0000-0000-4000-8000-{:012x}", self.uids)
    }

    pub fn get(&self, resource: &str, namespace: &str, name: &str) -> Option<Arc<Value>> {
        self.objects
            .get(resource)?
            .get(&(namespace.to_string(), name.to_string()))
            .cloned()
    }

    /// Objects of a resource, in key order; `namespace` `None` is all.
    pub fn list(&self, resource: &str, namespace: Option<&str>) -> Vec<Arc<Value>> {
        let Some(objects) = self.objects.get(resource) else {
            return Vec::new();
        };
        objects
            .iter()
            .filter(|((ns, _), _)| namespace.is_none_or(|n| n == ns))
            .map(|(_, o)| o.clone())
            .collect()
    }

    /// Stores `object` with the next resourceVersion and records the event.
    pub fn put(&mut self, resource: &str, mut object: Value) -> Arc<Value> {
        self.rv += 1;
        object["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        let object = Arc::new(object);
        let key = key_of(&object);
        let previous = self
            .objects
            .entry(resource.to_string())
            .or_default()
            .insert(key, object.clone());
        let kind = if previous.is_some() {
            EventType::Modified
        } else {
            EventType::Added
        };
        self.record(resource, kind, object.clone(), previous);
        object
    }

    /// Removes an object; the `DELETED` event's object carries the
    /// resourceVersion of the deletion.
    pub fn remove(&mut self, resource: &str, namespace: &str, name: &str) -> Option<Arc<Value>> {
        let old = self
            .objects
            .get_mut(resource)?
            .remove(&(namespace.to_string(), name.to_string()))?;
        self.rv += 1;
        let mut gone = (*old).clone();
        gone["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        let gone = Arc::new(gone);
        self.record(resource, EventType::Deleted, gone.clone(), Some(old));
        Some(gone)
    }

    /// Drops every object of a resource (its CRD was deleted).
    pub fn drop_resource(&mut self, resource: &str) {
        let keys: Vec<(String, String)> = self
            .objects
            .get(resource)
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        for (namespace, name) in keys {
            self.remove(resource, &namespace, &name);
        }
    }

    fn record(
        &mut self,
        resource: &str,
        kind: EventType,
        object: Arc<Value>,
        previous: Option<Arc<Value>>,
    ) {
        self.history.push_back(Event {
            rv: self.rv,
            resource: resource.to_string(),
            kind,
            object,
            previous,
        });
        while self.history.len() > self.capacity {
            if let Some(old) = self.history.pop_front() {
                self.compacted = old.rv;
            }
        }
    }

    /// Forgets the whole history: a watch or continue token from before
    /// now gets 410 Gone.
    pub fn compact(&mut self) {
        self.history.clear();
        self.compacted = self.rv;
    }

    /// The events after `rv`, or `None` when some are compacted away.
    pub fn events_after(&self, rv: u64) -> Option<Vec<Event>> {
        if rv < self.compacted {
            return None;
        }
        let from = self.history.partition_point(|e| e.rv <= rv);
        Some(self.history.range(from..).cloned().collect())
    }

    /// Every object, for [`crate::Handle::objects`].
    pub fn all(&self) -> impl Iterator<Item = (&String, &Arc<Value>)> {
        self.objects
            .iter()
            .flat_map(|(r, objects)| objects.values().map(move |o| (r, o)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(name: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": "ns"}})
    }

    #[test]
    fn resource_versions_increase_and_history_is_bounded() {
        let mut store = Store::new(2);
        let a = store.put("g/r", obj("a"));
        store.put("g/r", obj("b"));
        store.remove("g/r", "ns", "a");
        assert_eq!(a["metadata"]["resourceVersion"], "2");
        assert_eq!(store.rv(), 4);
        assert!(store.events_after(1).is_none(), "rv 2 was compacted");
        let events = store.events_after(2).unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(events[1].kind, EventType::Deleted);
        assert_eq!(events[1].object["metadata"]["resourceVersion"], "4");
        store.compact();
        assert!(store.events_after(3).is_none());
        assert_eq!(store.events_after(4).unwrap().len(), 0);
    }
}
