//! Server-side apply and the field ownership of other writes
//! (kubernetes.io/docs/reference/using-api/server-side-apply/): an apply
//! sets the fields of its configuration, removes the fields its manager
//! applied before and no longer applies (unless another manager owns them),
//! and fails with 409 and one cause per field when another manager owns a
//! field with a different value, unless `force` moves the ownership. Any
//! other write (create, update, merge patch) takes the fields it changes
//! from every other manager, without conflicts ("Update" operations).

use serde_json::{Map, Value};

use crate::error::{ApiError, Cause};
use crate::fields::{self, Entry, FieldSet, Path};

/// Who writes, and where.
#[derive(Debug, Clone)]
pub struct Writer<'a> {
    pub manager: &'a str,
    /// `""` or `"status"`.
    pub subresource: &'a str,
    pub api_version: &'a str,
    pub now: &'a str,
}

/// RFC 7386 JSON merge patch (`application/merge-patch+json`): maps merge,
/// `null` removes, anything else replaces.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(map) = target {
        for (key, value) in patch {
            if value.is_null() {
                map.remove(key);
            } else {
                merge_patch(map.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
    }
}

/// Applies `config` over `live` for `writer`; returns the merged object with
/// its `managedFields`. `live` is `{}`-like for a new object.
pub fn apply(
    live: &Value,
    config: &Value,
    writer: &Writer<'_>,
    force: bool,
) -> Result<Value, ApiError> {
    let applied = fields::leaves(config);
    let mut entries = fields::read_managed(live);
    let (at, mut own) = fields::take_entry(
        &mut entries,
        &Entry::new(writer.manager, "Apply", writer.subresource),
    );
    let conflicts = conflicts(live, config, &applied, &entries, writer);
    if !conflicts.is_empty() && !force {
        return Err(conflict_error(&conflicts));
    }
    for entry in &mut entries {
        entry
            .fields
            .retain(|p| !conflicts.iter().any(|(m, q)| *m == entry.manager && q == p));
    }
    let mut merged = live.clone();
    for path in own.fields.difference(&applied) {
        let owned_elsewhere = entries
            .iter()
            .any(|e| e.fields.iter().any(|q| fields::related(q, path)));
        if !owned_elsewhere {
            fields::remove(&mut merged, path);
        }
    }
    merge_patch(&mut merged, config);
    own.fields = applied;
    own.api_version = writer.api_version.into();
    own.time = writer.now.into();
    entries.insert(at, own);
    fields::write_managed(&mut merged, &entries);
    Ok(merged)
}

/// (manager, field) pairs where another manager owns a field `config`
/// sets to a different value.
fn conflicts(
    live: &Value,
    config: &Value,
    applied: &FieldSet,
    entries: &[Entry],
    writer: &Writer<'_>,
) -> Vec<(String, Path)> {
    let mut out = Vec::new();
    for entry in entries {
        if entry.manager == writer.manager || entry.subresource != writer.subresource {
            continue;
        }
        for owned in &entry.fields {
            let clash = applied
                .iter()
                .any(|p| fields::related(p, owned) && fields::at(live, p) != fields::at(config, p));
            if clash {
                out.push((entry.manager.clone(), owned.clone()));
            }
        }
    }
    out
}

fn conflict_error(conflicts: &[(String, Path)]) -> ApiError {
    let causes: Vec<Cause> = conflicts
        .iter()
        .map(|(manager, path)| {
            let field = format!(".{}", path.join("."));
            Cause {
                reason: "FieldManagerConflict".into(),
                message: format!("conflict with \"{manager}\": {field}"),
                field,
            }
        })
        .collect();
    let list: Vec<&str> = causes.iter().map(|c| c.message.as_str()).collect();
    let mut error = ApiError::new(
        409,
        "Conflict",
        format!(
            "Apply failed with {} conflict{}: {}",
            causes.len(),
            if causes.len() == 1 { "" } else { "s" },
            list.join("\n")
        ),
    );
    error.causes = causes;
    error
}

/// Records a non-apply write from `old` to `new` for `writer` (operation
/// `Update`): the fields it changed or added become its own and leave every
/// other manager; removed fields leave every manager.
pub fn record_update(old: Option<&Value>, new: &mut Value, writer: &Writer<'_>) {
    let null = Value::Null;
    let old_value = old.unwrap_or(&null);
    let new_leaves = fields::leaves(new);
    let old_leaves = fields::leaves(old_value);
    let changed: FieldSet = new_leaves
        .iter()
        .filter(|p| fields::at(old_value, p) != fields::at(new, p))
        .cloned()
        .collect();
    let removed: Vec<&Path> = old_leaves.difference(&new_leaves).collect();
    let mut entries = old.map(fields::read_managed).unwrap_or_default();
    if changed.is_empty() && removed.is_empty() {
        fields::write_managed(new, &entries);
        return;
    }
    let (at, mut own) = fields::take_entry(
        &mut entries,
        &Entry::new(writer.manager, "Update", writer.subresource),
    );
    for entry in entries.iter_mut().chain(std::iter::once(&mut own)) {
        entry.fields.retain(|q| {
            !changed.iter().any(|p| fields::related(p, q))
                && !removed.iter().any(|p| fields::related(p, q))
        });
    }
    own.fields.extend(changed);
    own.api_version = writer.api_version.into();
    own.time = writer.now.into();
    entries.insert(at, own);
    fields::write_managed(new, &entries);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn writer(manager: &str) -> Writer<'_> {
        Writer {
            manager,
            subresource: "",
            api_version: "x/v1",
            now: "2025-01-01T00:00:00Z",
        }
    }

    #[test]
    fn apply_removes_what_the_manager_no_longer_applies() {
        let live = json!({"metadata": {"name": "n"}});
        let first = apply(
            &live,
            &json!({"spec": {"a": 1, "b": 2}}),
            &writer("m"),
            false,
        )
        .unwrap();
        let second = apply(&first, &json!({"spec": {"a": 1}}), &writer("m"), false).unwrap();
        assert_eq!(second["spec"], json!({"a": 1}));
    }

    #[test]
    fn same_value_is_shared_not_a_conflict_and_update_takes_fields() {
        let live = json!({"metadata": {"name": "n"}});
        let one = apply(&live, &json!({"spec": {"a": 1}}), &writer("one"), false).unwrap();
        let two = apply(&one, &json!({"spec": {"a": 1}}), &writer("two"), false).unwrap();
        assert_eq!(
            two["metadata"]["managedFields"].as_array().unwrap().len(),
            2
        );
        let mut edited = two.clone();
        edited["spec"]["a"] = json!(5);
        record_update(Some(&two), &mut edited, &writer("kubectl-edit"));
        let managers: Vec<&str> = edited["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["manager"].as_str().unwrap())
            .collect();
        assert_eq!(managers, ["kubectl-edit"]);
    }

    #[test]
    fn a_field_an_update_took_conflicts_with_the_applier_unless_the_value_agrees() {
        let live = json!({"metadata": {"name": "n"}});
        let applied = apply(&live, &json!({"spec": {"a": 1}}), &writer("one"), false).unwrap();
        let mut edited = applied.clone();
        edited["spec"]["a"] = json!(2);
        record_update(Some(&applied), &mut edited, &writer("edit"));
        let error = apply(&edited, &json!({"spec": {"a": 1}}), &writer("one"), false).unwrap_err();
        assert_eq!(error.code, 409);
        assert_eq!(error.causes[0].field, ".spec.a");
        assert_eq!(error.causes[0].message, "conflict with \"edit\": .spec.a");
        assert!(apply(&edited, &json!({"spec": {"a": 2}}), &writer("one"), false).is_ok());
        let forced = apply(&edited, &json!({"spec": {"a": 1}}), &writer("one"), true).unwrap();
        assert_eq!(forced["spec"]["a"], 1);
        let managers: Vec<&str> = forced["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["manager"].as_str().unwrap())
            .collect();
        assert_eq!(managers, ["one"]);
    }
}
