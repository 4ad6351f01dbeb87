//! The OpenAPI v3 schema of a policy's `spec` and `status`, generated from
//! the raw types the resolver reads (their `#[schemars]` attributes) so that
//! a cluster rejects what the resolver rejects. `attache-render` wraps these
//! into CustomResourceDefinitions (`attache crds`).
//!
//! The helpers in `crate::settings::schema_rules` turn the header rules of `attache_contract::safety` (the
//! one definition the resolver and the filter share) into patterns; where a
//! rule needs more than a pattern it becomes a CEL rule
//! (`x-kubernetes-validations`). Rules the schema cannot state exactly are
//! listed in docs/istio.md ("What the CRDs check").

use schemars::generate::SchemaSettings;
use schemars::Schema;
use serde_json::{json, Value};

use crate::model::policy::{PolicyKind, RawPolicySpec, TargetKind};
use crate::status::PolicyStatusBody;

/// The schemas of one policy kind, in OpenAPI v3 form (inline, no `$ref`).
#[derive(Debug, Clone)]
pub struct PolicySchemas {
    pub spec: Schema,
    pub status: Schema,
}

/// The `spec` schema of `kind` (its targetRefs may name only the kinds the
/// resolver lets it target) and the `status` schema `attache status` writes.
pub fn policy_schemas(kind: PolicyKind) -> PolicySchemas {
    let settings = SchemaSettings::openapi3().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let mut spec = settings
        .clone()
        .into_generator()
        .into_root_schema_for::<RawPolicySpec>();
    for pointer in ["/properties/targetRef", "/properties/targetRefs/items"] {
        if let Some(target) = spec.pointer_mut(pointer) {
            restrict_target_kinds(target, kind.info().targets);
        }
    }
    let status = settings
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<PolicyStatusBody>();
    PolicySchemas { spec, status }
}

/// The group, kind and whether a sectionName may name a part of it.
fn target_kind(kind: TargetKind) -> (&'static str, &'static str, bool) {
    let info = kind.info();
    (info.group, info.name, info.sections)
}

/// `kind` one of `targets`, `group` the group of that kind (an absent group
/// is `""`, as the resolver reads it), and no sectionName where the kind has
/// no sections.
fn restrict_target_kinds(target: &mut Value, targets: &[TargetKind]) {
    let kinds: Vec<&str> = targets.iter().map(|t| target_kind(*t).1).collect();
    let pairs: Vec<Value> = targets
        .iter()
        .map(|t| {
            let (group, kind, sections) = target_kind(*t);
            let mut branch = json!({
                "properties": {"group": {"enum": [group]}, "kind": {"enum": [kind]}}
            });
            if !group.is_empty() {
                branch["required"] = json!(["group"]);
            }
            if !sections {
                branch["not"] = json!({"required": ["sectionName"]});
            }
            branch
        })
        .collect();
    if let Some(kind) = target.pointer_mut("/properties/kind") {
        kind["enum"] = json!(kinds);
    }
    target["anyOf"] = Value::Array(pairs);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_may_target_only_its_kinds() {
        let cluster = policy_schemas(PolicyKind::ClusterRoutePolicy).spec;
        let kinds = cluster.pointer("/properties/targetRefs/items/properties/kind/enum");
        assert_eq!(kinds, Some(&json!(["GatewayClass", "Namespace"])));
        let namespaced = policy_schemas(PolicyKind::RoutePolicy).spec;
        let kinds = namespaced.pointer("/properties/targetRef/properties/kind/enum");
        assert_eq!(
            kinds,
            Some(&json!([
                "Namespace",
                "Gateway",
                "ListenerSet",
                "XListenerSet",
                "HTTPRoute",
                "GRPCRoute"
            ]))
        );
        // Each set kind only with its own group.
        let pairs = namespaced
            .pointer("/properties/targetRef/anyOf")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        assert!(pairs.contains(&json!({
            "properties": {"group": {"enum": ["gateway.networking.x-k8s.io"]}, "kind": {"enum": ["XListenerSet"]}},
            "required": ["group"]
        })));
        assert!(namespaced.pointer("/properties/default").is_some());
    }
}
