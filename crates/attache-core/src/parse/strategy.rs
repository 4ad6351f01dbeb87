//! `spec.mergeStrategy` (GEP-713, 2025; docs/semantics.md, "Merge
//! strategies"): the strategy a RoutePolicy or ClusterRoutePolicy opts
//! into, what may not sit beside it, and the `null`s of a PatchOverrides
//! policy. A policy without the field is read exactly as before.

use serde_json::Value;

use super::*;
use crate::field::document::{policy_name, SCALARS};
use crate::field::{Group, HeaderList, Removal};
use crate::model::strategy::{MergeStrategy, STRATEGY_VALUES};

/// A `null` under the settings of an opted-in policy: what it removes and
/// where it was written.
pub(super) type Null = (String, Removal);

/// When `spec.mergeStrategy` is set: the document without the `null`s under
/// its settings (RFC 7386 removals, read by [`read_strategy`]) and those
/// `null`s. `None` leaves a policy that does not opt in untouched.
pub(super) fn strip_nulls(doc: &SourceDoc) -> Option<(SourceDoc, Vec<Null>)> {
    let spec = doc.value.get("spec")?.as_object()?;
    spec.get("mergeStrategy")?;
    let mut value = doc.value.clone();
    let mut nulls = Vec::new();
    if let Some(spec) = value.get_mut("spec").and_then(Value::as_object_mut) {
        for group in Group::ALL {
            let name = group.policy_name();
            match spec.get_mut(name) {
                Some(Value::Null) => {
                    spec.remove(name);
                    nulls.push((format!("spec.{name}"), Removal::Group(group)));
                }
                Some(Value::Object(fields)) => {
                    let null_keys: Vec<String> = fields
                        .iter()
                        .filter(|(_, v)| v.is_null())
                        .map(|(k, _)| k.clone())
                        .collect();
                    for key in null_keys {
                        if let Some(removal) = removal_of(group, &key) {
                            fields.remove(&key);
                            nulls.push((format!("spec.{name}.{key}"), removal));
                        }
                    }
                }
                _ => {}
            }
        }
    }
    let doc = SourceDoc {
        origin: doc.origin.clone(),
        value,
    };
    Some((doc, nulls))
}

/// The field a `null` at `group.key` removes; `None` for a name the
/// settings do not have (the typed read reports it).
fn removal_of(group: Group, key: &str) -> Option<Removal> {
    match group {
        Group::Headers(d) => {
            let list = match key {
                "set" => HeaderList::Set,
                "add" => HeaderList::Add,
                "remove" => HeaderList::Remove,
                _ => return None,
            };
            Some(Removal::List(d, list))
        }
        Group::Timeouts | Group::Retry => SCALARS
            .iter()
            .find(|k| k.group() == group && policy_name(k) == key)
            .map(|k| Removal::Leaf(k.clone())),
    }
}

/// Reads `spec.mergeStrategy`: its value, no stanza beside it, `null`
/// only under PatchOverrides. The settings themselves are the plain ones.
pub(super) fn read_strategy(
    policy: &mut Policy,
    spec: &RawPolicySpec,
    nulls: Vec<Null>,
    problems: &mut Vec<Problem>,
) {
    let Some(text) = &spec.merge_strategy else {
        return;
    };
    let strategy = match MergeStrategy::parse(text) {
        Ok(s) => s,
        Err(e) => {
            return problems.push(Problem {
                field: "spec.mergeStrategy".into(),
                message: e.to_string(),
                hint: format!("use one of {}", STRATEGY_VALUES.join(", ")),
            })
        }
    };
    policy.strategy = Some(strategy);
    for (present, field) in [
        (spec.defaults.is_some(), "spec.defaults"),
        (spec.overrides.is_some(), "spec.overrides"),
    ] {
        if present {
            problems.push(Problem {
                field: field.into(),
                message: format!("a stanza beside spec.mergeStrategy: {text}"),
                hint: "with mergeStrategy the settings sit directly under spec (GEP-713: one strategy per \
                       policy); move them there, or remove mergeStrategy"
                    .into(),
            });
        }
    }
    if strategy.takes_null() {
        policy.removals = nulls.into_iter().map(|(_, r)| r).collect();
        policy.removals.sort();
        policy.removals.dedup();
        return;
    }
    for (path, _) in nulls {
        problems.push(Problem {
            field: path,
            message: format!("null removes a field only under mergeStrategy: PatchOverrides, not {text}"),
            hint: "remove the field, or use mergeStrategy: PatchOverrides (RFC 7386: null removes what less \
                   specific policies supplied)"
                .into(),
        });
    }
}

/// The note for a policy-weight annotation on an opted-in policy: the 2025
/// order has no weight.
pub(super) fn weight_ignored(policy: &Policy) -> Option<Diagnostic> {
    policy.strategy?;
    let key = WEIGHT_KEYS
        .iter()
        .find(|k| policy.meta.annotations.contains_key(**k))?;
    Some(
        Diagnostic::note(
            "policy-weight is ignored on a policy with spec.mergeStrategy: GEP-713's order (established \
             and challenger) has no weight",
        )
        .at(&policy.meta.origin)
        .on(policy.display_name())
        .field(format!("metadata.annotations[{key}]"))
        .hint("remove the annotation; inside a level the older policy is established"),
    )
}
