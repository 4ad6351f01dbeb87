//! The schema helpers the `#[schemars]` attributes of the raw types name
//! (`crate::settings`, `crate::model::policy`): the rules of
//! `attache_contract::safety` as patterns and CEL rules. They sit beside the
//! raw types, below the model; `crate::schema` assembles the CRD schemas.

use attache_contract::safety;
use schemars::{json_schema, Schema, SchemaGenerator};
use serde_json::{json, Value};

use crate::contract::safety::RETRY_TRIGGERS;

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

/// The spec-level rules of `crate::parse::policy`: something to target,
/// settings either in stanzas or plain, never both, and no stanza beside
/// `mergeStrategy` (`crate::parse::strategy`).
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
        },
        {
            "rule": format!("!(has(self.mergeStrategy) && ({stanzas}))"),
            "message": "a defaults/overrides stanza beside mergeStrategy: with mergeStrategy the settings sit \
                        directly under spec (GEP-713: one strategy per policy)"
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
        "maxLength": safety::MAX_HEADER_NAME_BYTES,
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

/// A duration above 0s (`retry.backoff`): Envoy refuses a zero back-off
/// base interval (settings/mod.rs says so to the resolver's users). A Gateway
/// API duration is zero exactly when it has no digit 1-9.
pub(crate) fn positive_duration(schema: &mut Schema) {
    schema.insert(
        "x-kubernetes-validations".into(),
        json!([{
            "rule": "self.matches('[1-9]')",
            "message": "must be above 0s: Envoy refuses a zero back-off"
        }]),
    );
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

/// Header names listed once per list, compared case-insensitively, as
/// `crate::settings::header_modifier` compares them. The list-map keys of
/// `set` and `add` (and `remove`'s set type) refuse only exact duplicates,
/// so `X-A` beside `x-a` needs this rule. Cost: at most 64 x 64 comparisons
/// of names of at most 256 bytes, well under the API server's per-rule
/// estimate limit.
pub(crate) fn unique_names_rule() -> Value {
    let unique = |list: &str, name: &str| {
        format!(
            "(!has(self.{list}) || self.{list}.all(a, self.{list}.exists_one(b, \
             b{name}.lowerAscii() == a{name}.lowerAscii())))"
        )
    };
    let rule = [
        unique("set", ".name"),
        unique("add", ".name"),
        unique("remove", ""),
    ]
    .join(" && ");
    json!({
        "rule": rule,
        "message": "a header name is listed twice in set, add or remove (names compare case-insensitively)"
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
}
