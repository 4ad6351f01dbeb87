//! CustomResourceDefinitions for the policy kinds (`attache crds`,
//! deploy/crds/). The schemas come from `attache_core::schema`, which derives
//! them from the types the resolver reads; this module only makes them
//! structural, as Kubernetes requires of a CRD schema, and wraps them the way
//! Gateway API's own policy CRDs are shaped (its config/crd/: the GEP-713
//! policy label, a status subresource, printer columns).
//!
//! Structural (apiextensions.k8s.io/v1) means here: no `nullable` (Kubernetes
//! prunes a null field, and the resolver reads null as absent), no
//! `additionalProperties: false` next to `properties` (Kubernetes refuses it;
//! unknown fields are pruned, or refused under kubectl's default
//! `--validate=strict`), no `$ref`. Defaults are left out: the resolver
//! supplies its own, and an API-server default would write `set: []` into
//! every stored object.

use attache_core::model::policy::{KindInfo, Scope, KINDS};
use attache_core::schema::policy_schemas;
use attache_core::status::CONTROLLER_NAME;
use serde_json::{json, Map, Value};

/// GEP-2649: every CRD of an inherited policy carries this label.
pub const POLICY_LABEL: (&str, &str) = ("gateway.networking.k8s.io/policy", "inherited");

/// One CRD and the file name it has under deploy/crds/
/// (`<group>_<plural>.yaml`, as controller-gen names them).
#[derive(Debug, Clone, PartialEq)]
pub struct Crd {
    pub file_name: String,
    pub manifest: Value,
}

/// Every policy kind the resolver reads, in [`KINDS`] order.
pub fn crds() -> Vec<Crd> {
    KINDS.iter().filter(|k| k.own).map(crd).collect()
}

fn crd(info: &KindInfo) -> Crd {
    let plural = plural(info.name);
    let schemas = policy_schemas(info.kind);
    let mut spec = schemas.spec.to_value();
    let mut status = schemas.status.to_value();
    structural(&mut spec);
    nullable_settings(&mut spec);
    structural(&mut status);
    describe(&mut status, &format!(
        "What the resolver found for this {} (attache status writes it; controller {CONTROLLER_NAME}).",
        info.name
    ));
    let root = json!({
        "type": "object",
        "description": format!(
            "{}: Gateway API inherited policy attachment (GEP-713, GEP-2649) for timeouts, retries and header \
             modifiers, resolved by attache and enforced by its Envoy filter.",
            info.name
        ),
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status
        },
        "required": ["spec"]
    });
    let versions: Vec<Value> = info
        .versions
        .iter()
        .enumerate()
        .map(|(i, version)| {
            json!({
                "name": version,
                "served": true,
                // The first version is the one status reports and the one stored.
                "storage": i == 0,
                "schema": {"openAPIV3Schema": root},
                "subresources": {"status": {}},
                "additionalPrinterColumns": printer_columns()
            })
        })
        .collect();
    let manifest = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": format!("{plural}.{}", info.group),
            "labels": {POLICY_LABEL.0: POLICY_LABEL.1}
        },
        "spec": {
            "group": info.group,
            "names": {
                "kind": info.name,
                "listKind": format!("{}List", info.name),
                "plural": plural,
                "singular": info.name.to_ascii_lowercase(),
                "categories": ["attache"]
            },
            "scope": match info.scope {
                Scope::Namespaced => "Namespaced",
                Scope::Cluster => "Cluster",
            },
            "versions": versions
        }
    });
    Crd {
        file_name: format!("{}_{plural}.yaml", info.group),
        manifest,
    }
}

/// `RoutePolicy` -> `routepolicies`, `Gateway` -> `gateways`.
fn plural(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    match lower.strip_suffix('y') {
        Some(stem) if !stem.ends_with(['a', 'e', 'i', 'o', 'u']) => format!("{stem}ies"),
        _ => format!("{lower}s"),
    }
}

/// The policy-wide `Accepted` condition (`attache status`), and the age.
fn printer_columns() -> Value {
    json!([
        {"name": "Accepted", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Accepted\")].status"},
        {"name": "Reason", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Accepted\")].reason"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
    ])
}

fn describe(schema: &mut Value, text: &str) {
    if let Some(object) = schema.as_object_mut() {
        object.insert("description".into(), Value::String(text.into()));
    }
}

/// Makes a generated OpenAPI v3 schema a structural one, in place.
fn structural(schema: &mut Value) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    for keyword in ["title", "nullable", "default", "$schema"] {
        object.remove(keyword);
    }
    if object.get("additionalProperties") == Some(&Value::Bool(false)) {
        object.remove("additionalProperties");
    }
    for_each_subschema(object, structural);
}

/// The settings that sit directly under `spec` (an opted-in policy's,
/// GEP-713 2025) may be `null` at every depth: a `PatchOverrides` policy
/// removes a field with it (RFC 7386), and an API server prunes a null a
/// schema does not declare `nullable`. The settings are the fields the
/// `defaults` stanza has too; inside the stanzas a null stays pruned (the
/// resolver refuses it there anyway).
fn nullable_settings(spec: &mut Value) {
    let settings: Vec<String> = spec
        .pointer("/properties/defaults/properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    let Some(Value::Object(properties)) = spec.get_mut("properties") else {
        return;
    };
    for name in settings {
        if let Some(field) = properties.get_mut(&name) {
            nullable(field);
        }
    }
}

fn nullable(schema: &mut Value) {
    if let Some(object) = schema.as_object_mut() {
        object.insert("nullable".into(), Value::Bool(true));
        for_each_subschema(object, nullable);
    }
}

/// Calls `f` on every schema directly inside `object` (not on keys of
/// `properties`, which are field names).
fn for_each_subschema(object: &mut Map<String, Value>, f: fn(&mut Value)) {
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        properties.values_mut().for_each(f);
    }
    for keyword in ["items", "not", "additionalProperties"] {
        if let Some(sub) = object.get_mut(keyword) {
            f(sub);
        }
    }
    for keyword in ["anyOf", "allOf", "oneOf"] {
        if let Some(Value::Array(list)) = object.get_mut(keyword) {
            list.iter_mut().for_each(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals_follow_kubernetes_names() {
        assert_eq!(plural("RoutePolicy"), "routepolicies");
        assert_eq!(plural("Gateway"), "gateways");
    }

    #[test]
    fn one_crd_per_kind_with_the_policy_label_and_a_status_subresource() {
        let all = crds();
        let names: Vec<&str> = all.iter().map(|c| c.file_name.as_str()).collect();
        assert_eq!(
            names,
            [
                "policy.attache.dev_routepolicies.yaml",
                "policy.attache.dev_clusterroutepolicies.yaml"
            ]
        );
        for crd in &all {
            let m = &crd.manifest;
            assert_eq!(
                m["metadata"]["labels"]["gateway.networking.k8s.io/policy"],
                "inherited"
            );
            assert_eq!(
                m["spec"]["versions"][0]["subresources"],
                json!({"status": {}})
            );
        }
        assert_eq!(all[1].manifest["spec"]["scope"], "Cluster");
    }

    #[test]
    fn the_schema_is_structural() {
        fn check(schema: &Value, at: &str) {
            let object = schema.as_object().unwrap();
            for forbidden in ["default", "title", "$ref"] {
                assert!(!object.contains_key(forbidden), "{forbidden} at {at}");
            }
            // `nullable` only on an opted-in policy's settings, directly
            // under spec (nullable_settings).
            let settings = at.contains(".spec.")
                && ![
                    ".spec.default",
                    ".spec.override",
                    ".spec.targetRef",
                    ".spec.mergeStrategy",
                ]
                .iter()
                .any(|stanza| at.contains(stanza));
            if object.contains_key("nullable") {
                assert!(settings, "nullable at {at}");
            }
            assert_ne!(
                object.get("additionalProperties"),
                Some(&Value::Bool(false)),
                "{at}"
            );
            if let Some(Value::Object(properties)) = object.get("properties") {
                for (name, sub) in properties {
                    check(sub, &format!("{at}.{name}"));
                }
            }
            if let Some(items) = object.get("items") {
                check(items, &format!("{at}[]"));
            }
        }
        for crd in crds() {
            let schema = &crd.manifest["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
            check(schema, &crd.file_name);
            // A PatchOverrides null survives the API server's pruning; a
            // null in a stanza does not.
            let spec = |path: &str| {
                schema
                    .pointer(&format!("/properties/spec/properties/{path}/nullable"))
                    .cloned()
            };
            assert_eq!(spec("timeouts/properties/request"), Some(Value::Bool(true)));
            assert_eq!(spec("retry"), Some(Value::Bool(true)));
            assert_eq!(
                spec("defaults/properties/timeouts/properties/request"),
                None
            );
            assert!(schema
                .pointer("/properties/spec/properties/defaults")
                .is_some());
        }
    }
}
