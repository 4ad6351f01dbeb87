//! Field sets and `metadata.managedFields`
//! (kubernetes.io/docs/reference/using-api/server-side-apply/, "Field
//! management"). A field is a path of map keys down to a leaf: a scalar, an
//! empty map or a list. Lists are atomic (owned whole), which is what a CRD
//! list without `x-kubernetes-list-type` is; keyed lists (`k:{...}`) are
//! not modelled. `fieldsV1` is written and read in the real format
//! (`{"f:spec": {"f:replicas": {}}}`).

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

/// A field: the map keys from the root to a leaf.
pub type Path = Vec<String>;
pub type FieldSet = BTreeSet<Path>;

/// Fields no manager owns: identity and what the server sets.
fn is_system(path: &[String]) -> bool {
    match path {
        [first] => first == "apiVersion" || first == "kind",
        [meta, field, ..] if meta == "metadata" => matches!(
            field.as_str(),
            "name"
                | "namespace"
                | "uid"
                | "resourceVersion"
                | "generation"
                | "creationTimestamp"
                | "deletionTimestamp"
                | "managedFields"
                | "selfLink"
        ),
        _ => false,
    }
}

/// The leaves of an object that a manager can own.
pub fn leaves(value: &Value) -> FieldSet {
    let mut out = FieldSet::new();
    walk(value, &mut Vec::new(), &mut out);
    out.retain(|p| !p.is_empty() && !is_system(p));
    out
}

fn walk(value: &Value, path: &mut Path, out: &mut FieldSet) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, child) in map {
                path.push(key.clone());
                walk(child, path, out);
                path.pop();
            }
        }
        _ => {
            out.insert(path.clone());
        }
    }
}

/// The value at a path, if there is one.
pub fn at<'a>(value: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, key| v.get(key))
}

/// Removes the value at a path, and the maps it leaves empty.
pub fn remove(value: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    if let Some(Value::Object(map)) = parents.iter().try_fold(&mut *value, |v, k| v.get_mut(k)) {
        map.remove(last);
    }
    if !parents.is_empty() && at(value, parents).is_some_and(|v| v == &json!({})) {
        remove(value, parents);
    }
}

/// Whether one path is the other or lies below it.
pub fn related(a: &[String], b: &[String]) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// A field set as `fieldsV1`.
pub fn to_fields_v1(set: &FieldSet) -> Value {
    let mut root = Map::new();
    for path in set {
        let mut node = &mut root;
        for key in path {
            let entry = node
                .entry(format!("f:{key}"))
                .or_insert_with(|| Value::Object(Map::new()));
            let Value::Object(next) = entry else {
                break;
            };
            node = next;
        }
    }
    Value::Object(root)
}

/// A `fieldsV1` as a field set (a node with no children, or with `.`, is a
/// leaf; `k:`/`v:`/`i:` elements are kept as they are written).
pub fn from_fields_v1(value: &Value) -> FieldSet {
    let mut out = FieldSet::new();
    read_node(value, &mut Vec::new(), &mut out);
    out
}

fn read_node(value: &Value, path: &mut Path, out: &mut FieldSet) {
    let Some(map) = value.as_object() else {
        return;
    };
    if (map.is_empty() || map.contains_key(".")) && !path.is_empty() {
        out.insert(path.clone());
    }
    for (key, child) in map {
        if key == "." {
            continue;
        }
        path.push(key.strip_prefix("f:").unwrap_or(key).to_string());
        read_node(child, path, out);
        path.pop();
    }
}

/// One `managedFields` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub manager: String,
    /// `Apply` or `Update`.
    pub operation: String,
    pub api_version: String,
    pub time: String,
    /// `""` for the main resource, `"status"` for the status subresource.
    pub subresource: String,
    pub fields: FieldSet,
}

impl Entry {
    pub fn new(manager: &str, operation: &str, subresource: &str) -> Self {
        Entry {
            manager: manager.into(),
            operation: operation.into(),
            api_version: String::new(),
            time: String::new(),
            subresource: subresource.into(),
            fields: FieldSet::new(),
        }
    }

    fn same_owner(&self, other: &Entry) -> bool {
        self.manager == other.manager
            && self.operation == other.operation
            && self.subresource == other.subresource
    }
}

/// The entries of an object's `metadata.managedFields`.
pub fn read_managed(object: &Value) -> Vec<Entry> {
    let text = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_string();
    object["metadata"]["managedFields"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .map(|e| Entry {
                    manager: text(e, "manager"),
                    operation: text(e, "operation"),
                    api_version: text(e, "apiVersion"),
                    time: text(e, "time"),
                    subresource: text(e, "subresource"),
                    fields: from_fields_v1(&e["fieldsV1"]),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Writes the entries (empty ones dropped) into `metadata.managedFields`.
pub fn write_managed(object: &mut Value, entries: &[Entry]) {
    let list: Vec<Value> = entries
        .iter()
        .filter(|e| !e.fields.is_empty())
        .map(|e| {
            let mut v = json!({
                "manager": e.manager,
                "operation": e.operation,
                "apiVersion": e.api_version,
                "time": e.time,
                "fieldsType": "FieldsV1",
                "fieldsV1": to_fields_v1(&e.fields),
            });
            if !e.subresource.is_empty() {
                v["subresource"] = json!(e.subresource);
            }
            v
        })
        .collect();
    if let Value::Object(meta) = &mut object["metadata"] {
        if list.is_empty() {
            meta.remove("managedFields");
        } else {
            meta.insert("managedFields".into(), Value::Array(list));
        }
    }
}

/// Takes `owner`'s entry out of the list (or a new empty one), with the
/// position to put it back at, so that the order of entries is kept.
pub fn take_entry(entries: &mut Vec<Entry>, owner: &Entry) -> (usize, Entry) {
    match entries.iter().position(|e| e.same_owner(owner)) {
        Some(at) => (at, entries.remove(at)),
        None => (entries.len(), owner.clone()),
    }
}

/// Drops from every entry the fields the object no longer has (pruned).
pub fn forget_missing(object: &mut Value) {
    let mut entries = read_managed(object);
    let before: usize = entries.iter().map(|e| e.fields.len()).sum();
    for entry in &mut entries {
        entry.fields.retain(|p| at(object, p).is_some());
    }
    if entries.iter().map(|e| e.fields.len()).sum::<usize>() != before {
        write_managed(object, &entries);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_v1_round_trips_and_skips_system_fields() {
        let object = json!({"apiVersion": "v1", "kind": "K",
            "metadata": {"name": "n", "labels": {"a": "1"}, "resourceVersion": "3"},
            "spec": {"list": [1, 2], "m": {"x": 1}, "empty": {}}});
        let set = leaves(&object);
        let v1 = to_fields_v1(&set);
        assert_eq!(
            v1,
            json!({"f:metadata": {"f:labels": {"f:a": {}}},
                   "f:spec": {"f:list": {}, "f:m": {"f:x": {}}, "f:empty": {}}})
        );
        assert_eq!(from_fields_v1(&v1), set);
    }

    #[test]
    fn remove_drops_the_maps_it_empties() {
        let mut v = json!({"spec": {"a": {"b": 1}, "c": 2}});
        remove(&mut v, &["spec".into(), "a".into(), "b".into()]);
        assert_eq!(v, json!({"spec": {"c": 2}}));
    }
}
