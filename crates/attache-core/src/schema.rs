//! The OpenAPI v3 schema of a policy's `spec` and `status`, generated from
//! the raw types the resolver reads (their `#[schemars]` attributes) so that
//! a cluster rejects what the resolver rejects. `attache-render` wraps these
//! into CustomResourceDefinitions (`attache crds`).
//!
//! The helpers below turn the header rules of `attache_contract::safety` (the
//! one definition the resolver and the filter share) into patterns; where a
//! rule needs more than a pattern it becomes a CEL rule
//! (`x-kubernetes-validations`). Rules the schema cannot state exactly are
//! listed in docs/istio.md ("What the CRDs check").

use attache_contract::safety;
use schemars::generate::SchemaSettings;
use schemars::{json_schema, Schema, SchemaGenerator};
use serde_json::{json, Value};

use crate::model::policy::{PolicyKind, RawPolicySpec, TargetKind};
use crate::model::route::GATEWAY_GROUP;
use crate::settings::RETRY_TRIGGERS;
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
    match kind {
        TargetKind::GatewayClass => (GATEWAY_GROUP, "GatewayClass", false),
        TargetKind::Namespace => ("", "Namespace", false),
        TargetKind::Gateway => (GATEWAY_GROUP, "Gateway", true),
        TargetKind::HttpRoute => (GATEWAY_GROUP, "HTTPRoute", true),
    }
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

/// `spec.default` and `spec.override` are read as `defaults` and `overrides`
/// (the serde aliases on [`RawPolicySpec`], GEP-713's singular spelling).
pub(crate) fn add_stanza_aliases(schema: &mut Schema) {
    let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    for (name, alias) in [("defaults", "default"), ("overrides", "override")] {
        if let Some(stanza) = properties.get(name).cloned() {
            properties.insert(alias.to_string(), stanza);
        }
    }
}

/// The spec-level rules of `crate::parse::policy`: something to target, and
/// settings either in stanzas or plain, never both.
pub(crate) fn spec_rules() -> Value {
    let plain = "has(self.timeouts) || has(self.retry) || has(self.requestHeaderModifier) || \
                 has(self.responseHeaderModifier)";
    let stanzas =
        "has(self.defaults) || has(self.default) || has(self.overrides) || has(self.override)";
    json!([
        {
            "rule": "has(self.targetRef) || (has(self.targetRefs) && size(self.targetRefs) > 0)",
            "message": "the policy targets nothing: add targetRefs"
        },
        {
            "rule": format!("!(({plain}) && ({stanzas}))"),
            "message": "settings directly under spec are mixed with a defaults/overrides stanza"
        },
        {
            "rule": "!(has(self.defaults) && has(self.default)) && !(has(self.overrides) && has(self.override))",
            "message": "default and defaults (override and overrides) are one field spelled two ways; use one"
        }
    ])
}

/// RFC 9110 token, as Gateway API's `HTTPHeaderName` writes it (`\x60` is
/// the backquote).
const TOKEN_PATTERN: &str = r"^[A-Za-z0-9!#$%&'*+\-.^_\x60|~]+$";

/// Any case of `word`, as a pattern without flags (Kubernetes compiles
/// patterns with Go's RE2, clients with ECMA-262: `(?i)` is not portable).
fn any_case(word: &str) -> String {
    word.chars()
        .map(|c| {
            if c.is_ascii_alphabetic() {
                format!("[{}{}]", c.to_ascii_uppercase(), c.to_ascii_lowercase())
            } else {
                regex_escape(c)
            }
        })
        .collect()
}

/// `-` stays as it is: it is literal outside a class, and `\-` there is an
/// error in ECMA-262's Unicode mode.
fn regex_escape(c: char) -> String {
    if "\\.+*?()|[]{}^$".contains(c) {
        format!("\\{c}")
    } else {
        c.to_string()
    }
}

/// The names [`safety::check_policy_header_name`] refuses although they are
/// tokens: `host`, the framing headers, and the `x-envoy-` prefix
/// (pseudo-headers are not tokens, so the token pattern refuses them).
fn refused_names_pattern() -> String {
    let exact: Vec<String> = std::iter::once("host")
        .chain(safety::FRAMING_HEADERS.iter().copied())
        .map(any_case)
        .collect();
    format!("^(?:{})$|^{}", exact.join("|"), any_case("x-envoy-"))
}

/// A header name a policy may operate on.
pub(crate) fn header_name(_: &mut SchemaGenerator) -> Schema {
    header_name_schema()
}

/// A list of header names (`remove`).
pub(crate) fn header_name_items(list: &mut Schema) {
    list.insert("items".into(), header_name_schema().to_value());
}

/// A list of Envoy retry triggers (`retryOn`): [`RETRY_TRIGGERS`].
pub(crate) fn retry_triggers(list: &mut Schema) {
    if let Some(items) = list.get_mut("items") {
        items["enum"] = json!(RETRY_TRIGGERS);
    }
}

fn header_name_schema() -> Schema {
    json_schema!({
        "type": "string",
        "description": "An HTTP header name (RFC 9110 token, any case); not host, a framing or hop-by-hop header, or x-envoy-*.",
        "pattern": TOKEN_PATTERN,
        "not": {"pattern": refused_names_pattern()}
    })
}

/// Visible characters, spaces and tabs; no control characters, no space or
/// tab at either end.
const VALUE_PATTERN: &str =
    r"^(?:[^\x00-\x20\x7F](?:[^\x00-\x08\x0A-\x1F\x7F]*[^\x00-\x20\x7F])?)?$";

/// A header value a policy may send: [`safety::check_header_value`]. The
/// limit is in bytes, which only CEL can count; `maxLength` (characters)
/// bounds the rule's cost.
pub(crate) fn header_value(_: &mut SchemaGenerator) -> Schema {
    let max = safety::MAX_HEADER_VALUE_BYTES;
    json_schema!({
        "type": "string",
        "description": "A header value: visible characters, spaces and tabs, not starting or ending with space or tab.",
        "maxLength": max,
        "pattern": VALUE_PATTERN,
        "x-kubernetes-validations": [{
            "rule": format!("size(bytes(self)) <= {max}"),
            "message": format!("a header value may be at most {max} bytes")
        }]
    })
}

/// At most [`safety::MAX_HEADER_OPERATIONS`] operations per direction.
pub(crate) fn operation_count_rule() -> Value {
    let max = safety::MAX_HEADER_OPERATIONS;
    let count = |list: &str| format!("(has(self.{list}) ? size(self.{list}) : 0)");
    json!({
        "rule": format!("{} + {} + {} <= {max}", count("set"), count("add"), count("remove")),
        "message": format!("set, add and remove together may list at most {max} headers")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_case_spells_every_letter_both_ways_and_escapes_the_rest() {
        assert_eq!(any_case("te"), "[Tt][Ee]");
        assert_eq!(any_case("x-envoy-"), "[Xx]-[Ee][Nn][Vv][Oo][Yy]-");
        assert_eq!(any_case("a.b"), "[Aa]\\.[Bb]");
    }

    #[test]
    fn each_kind_may_target_only_its_kinds() {
        let cluster = policy_schemas(PolicyKind::ClusterRoutePolicy).spec;
        let kinds = cluster.pointer("/properties/targetRefs/items/properties/kind/enum");
        assert_eq!(kinds, Some(&json!(["GatewayClass", "Namespace"])));
        let namespaced = policy_schemas(PolicyKind::RoutePolicy).spec;
        let kinds = namespaced.pointer("/properties/targetRef/properties/kind/enum");
        assert_eq!(kinds, Some(&json!(["Namespace", "Gateway", "HTTPRoute"])));
        assert!(namespaced.pointer("/properties/default").is_some());
    }
}
