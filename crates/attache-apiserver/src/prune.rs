//! Structural-schema pruning, as the API server does on every write of a
//! custom resource: a field the schema does not specify is dropped, unless
//! `x-kubernetes-preserve-unknown-fields: true` keeps it
//! (kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/,
//! "Field pruning"). `apiVersion`, `kind` and the known `metadata` fields
//! of the root (and of an `x-kubernetes-embedded-resource`) are kept.

use serde_json::{Map, Value};

/// The `ObjectMeta` fields a real API server keeps; others are pruned.
const OBJECT_META: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Prunes a whole object (its root) with a CRD version's
/// `openAPIV3Schema`: `apiVersion` and `kind` are kept, `metadata` keeps
/// the `ObjectMeta` fields, everything else follows the schema.
///
/// ```
/// let schema = serde_json::json!({"type": "object", "properties": {
///     "spec": {"type": "object", "properties": {"a": {"type": "string"}}}}});
/// let mut object = serde_json::json!({"apiVersion": "x/v1", "kind": "K",
///     "metadata": {"name": "n"}, "spec": {"a": "kept", "b": "pruned"}, "other": 1});
/// attache_apiserver::prune(&schema, &mut object);
/// assert_eq!(object["spec"], serde_json::json!({"a": "kept"}));
/// assert!(object.get("other").is_none());
/// ```
pub fn prune(schema: &Value, object: &mut Value) {
    prune_resource(schema, object);
}

fn prune_resource(schema: &Value, object: &mut Value) {
    let Value::Object(map) = object else {
        return;
    };
    let kept: Vec<(String, Value)> = ["apiVersion", "kind", "metadata"]
        .iter()
        .filter_map(|k| map.remove(*k).map(|v| (k.to_string(), v)))
        .collect();
    prune_value(schema, object);
    if let Value::Object(map) = object {
        for (k, mut v) in kept {
            if k == "metadata" {
                if let Value::Object(meta) = &mut v {
                    meta.retain(|key, _| OBJECT_META.contains(&key.as_str()));
                }
            }
            map.insert(k, v);
        }
    }
}

/// Prunes `value` (any depth) with `schema`.
pub fn prune_value(schema: &Value, value: &mut Value) {
    match value {
        Value::Object(map) => {
            if schema["x-kubernetes-embedded-resource"] == true {
                prune_resource_map(schema, map);
            } else {
                prune_map(schema, map);
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    prune_value(item_schema, item);
                }
            }
        }
        _ => {}
    }
}

fn prune_resource_map(schema: &Value, map: &mut Map<String, Value>) {
    let mut whole = Value::Object(std::mem::take(map));
    prune_resource(schema, &mut whole);
    if let Value::Object(m) = whole {
        *map = m;
    }
}

fn prune_map(schema: &Value, map: &mut Map<String, Value>) {
    let preserve = schema["x-kubernetes-preserve-unknown-fields"] == true;
    let properties = schema.get("properties").and_then(Value::as_object);
    let additional = schema.get("additionalProperties");
    map.retain(|key, _| {
        preserve
            || properties.is_some_and(|p| p.contains_key(key))
            || additional.is_some_and(|a| *a != false)
    });
    for (key, child) in map.iter_mut() {
        let child_schema = properties
            .and_then(|p| p.get(key))
            .or(additional.filter(|a| a.is_object()));
        if let Some(child_schema) = child_schema {
            prune_value(child_schema, child);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn preserve_unknown_fields_keeps_unknown_fields_and_prunes_below_known_ones() {
        let schema = json!({"type": "object", "properties": {
            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                     "properties": {"known": {"type": "object", "properties": {"a": {}}}}},
            "status": {"type": "object", "properties": {
                "conditions": {"type": "array", "items": {"type": "object",
                    "properties": {"type": {"type": "string"}}}}}}}});
        let mut object = json!({
            "apiVersion": "x/v1", "kind": "K",
            "metadata": {"name": "n", "bogus": 1},
            "spec": {"free": {"x": 1}, "known": {"a": 1, "b": 2}},
            "status": {"conditions": [{"type": "Ready", "extra": true}], "notInSchema": 1}});
        prune(&schema, &mut object);
        assert_eq!(object["metadata"], json!({"name": "n"}));
        assert_eq!(object["spec"], json!({"free": {"x": 1}, "known": {"a": 1}}));
        assert_eq!(object["status"], json!({"conditions": [{"type": "Ready"}]}));
    }

    #[test]
    fn additional_properties_schema_applies_to_every_value() {
        let schema = json!({"type": "object", "properties": {"m": {"type": "object",
            "additionalProperties": {"type": "object", "properties": {"k": {}}}}}});
        let mut object = json!({"m": {"one": {"k": 1, "x": 2}, "two": {"x": 3}}});
        prune(&schema, &mut object);
        assert_eq!(object, json!({"m": {"one": {"k": 1}, "two": {}}}));
    }
}
