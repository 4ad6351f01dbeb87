//! What the API server keeps of a write to a custom resource: field pruning
//! by the CRD's structural schema (kubernetes.io/docs/tasks/extend-kubernetes/
//! custom-resources/custom-resource-definitions/, "Field pruning"; the
//! algorithm is apiextensions-apiserver's pkg/apiserver/schema/pruning).
//!
//! The controller compares the status it would write with the stored one
//! *after* this pass: a field the schema does not declare never reaches
//! etcd, so comparing before it would find a difference on every round and
//! write forever (the write storm of `lastTransitionTime`, pruned by a schema
//! that lacked it).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde_json::Value;

/// Removes from `value` every field `schema` does not declare, as the API
/// server does on every write: an object keeps the keys of `properties`
/// (each pruned by its own schema), every key when `additionalProperties`
/// is a schema (each pruned by it) or when
/// `x-kubernetes-preserve-unknown-fields` is true; an array's items are
/// pruned by `items`; a `null` is dropped unless the schema says
/// `nullable: true`.
pub fn prune(value: &mut Value, schema: &Value) {
    match value {
        Value::Object(map) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            let preserve = schema
                .get("x-kubernetes-preserve-unknown-fields")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            map.retain(|key, field| {
                let field_schema = properties.and_then(|p| p.get(key)).or(additional);
                match field_schema {
                    Some(s) => {
                        let nullable = s.get("nullable").and_then(Value::as_bool) == Some(true);
                        if field.is_null() && !nullable {
                            return false;
                        }
                        prune(field, s);
                        true
                    }
                    None => preserve,
                }
            });
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items.iter_mut() {
                    prune(item, item_schema);
                }
            }
        }
        _ => {}
    }
}

/// The `status` schema of each of our policy kinds, by kind name, from the
/// CRDs `attache crds` writes (the storage version's): the schema the API
/// server prunes our status writes with.
pub fn status_schema(kind: &str) -> Option<&'static Value> {
    static SCHEMAS: OnceLock<BTreeMap<String, Value>> = OnceLock::new();
    SCHEMAS
        .get_or_init(|| {
            attache_render::crds::crds()
                .into_iter()
                .filter_map(|crd| {
                    let spec = &crd.manifest["spec"];
                    let kind = spec["names"]["kind"].as_str()?.to_string();
                    let storage = spec["versions"]
                        .as_array()?
                        .iter()
                        .find(|v| v["storage"] == true)?;
                    let status = storage
                        .pointer("/schema/openAPIV3Schema/properties/status")?
                        .clone();
                    Some((kind, status))
                })
                .collect()
        })
        .get(kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn undeclared_fields_and_nulls_go_declared_and_preserved_ones_stay() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": {"type": "string"},
                "list": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "map": {"type": "object", "additionalProperties": {"type": "object", "properties": {"x": {"type": "integer"}}}},
                "maybe": {"type": "string", "nullable": true},
                "gone": {"type": "string"}
            }
        });
        let mut value = json!({
            "a": "kept", "b": "pruned",
            "list": [{"k": "v", "extra": 1}],
            "free": {"anything": {"deep": true}},
            "map": {"one": {"x": 1, "y": 2}},
            "maybe": null,
            "gone": null
        });
        prune(&mut value, &schema);
        assert_eq!(
            value,
            json!({
                "a": "kept",
                "list": [{"k": "v"}],
                "free": {"anything": {"deep": true}},
                "map": {"one": {"x": 1}},
                "maybe": null
            })
        );
    }

    #[test]
    fn our_crds_declare_every_field_the_controller_writes_into_a_condition() {
        for kind in ["RoutePolicy", "ClusterRoutePolicy"] {
            let schema = status_schema(kind).unwrap_or_else(|| panic!("no schema for {kind}"));
            let condition = json!({
                "type": "Programmed", "status": "True", "reason": "Programmed",
                "message": "m", "observedGeneration": 2,
                "lastTransitionTime": "2026-11-26T07:00:00Z"
            });
            let written = json!({
                "conditions": [condition],
                "ancestors": [{
                    "ancestorRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "g", "namespace": "n", "sectionName": "http"},
                    "controllerName": "policy.attache.dev/attache",
                    "conditions": [condition]
                }]
            });
            let mut kept = written.clone();
            prune(&mut kept, schema);
            assert_eq!(
                kept, written,
                "{kind}: the API server would drop part of it"
            );
        }
    }
}
