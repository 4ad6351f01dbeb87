//! Reading the peers' policy kinds (docs/peers.md): kgateway's
//! TrafficPolicy and Envoy Gateway's BackendTrafficPolicy become plain
//! settings through the tables in `model/peers.rs`; every field they carry
//! that Attaché does not enforce is a note naming it, never dropped
//! silently (docs/semantics.md, "Peers' policy kinds").

use serde::Deserialize;
use serde_json::{Map, Value};

use super::policy::{finish, keep_unreadable, numbered, read_targets, start};
use super::*;
use crate::model::gateway::LabelSelector;
use crate::model::peers::{is_read, leads_to_read, mappings, their_field};
use crate::model::policy::{MergeType, TargetSelector};
use crate::settings::RawSettings;

/// A peer policy as far as its outline: the spec is read by the tables.
#[derive(Deserialize)]
struct PeerDoc {
    #[serde(default)]
    metadata: RawMeta,
    #[serde(default)]
    spec: Value,
}

/// kgateway's `LocalPolicyTargetSelector` and Envoy Gateway's
/// `TargetSelector`: a kind and a label selector.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawSelector {
    #[serde(default)]
    group: String,
    kind: String,
    #[serde(default)]
    match_labels: BTreeMap<String, String>,
    #[serde(default)]
    match_expressions: Vec<crate::model::gateway::LabelRequirement>,
}

pub(super) fn read_peer(doc: &SourceDoc, kind: PolicyKind, inputs: &mut Inputs) {
    let raw: PeerDoc = match typed(doc, &kind.to_string()) {
        Ok(raw) => raw,
        Err(d) => return keep_unreadable(doc, kind, *d, inputs),
    };
    let Some(mut policy) = start(doc, kind, raw.metadata, inputs) else {
        return;
    };
    let mut problems = Vec::new();
    let Value::Object(spec) = raw.spec else {
        problems.push(Problem {
            field: "spec".into(),
            message: "the spec is missing or not an object".into(),
            hint: "write the policy's spec as its project documents it (docs/peers.md)".into(),
        });
        return finish(policy, problems, &doc.origin, inputs);
    };
    let mut notes = Vec::new();
    unread(kind, &spec, "", &mut notes);
    policy.plain = settings_of(kind, &spec, &mut problems);
    policy.merge_type = merge_type(&spec, &mut problems);
    let mut refs = Vec::new();
    if let Some(one) = spec.get("targetRef") {
        refs.push(("spec.targetRef".to_string(), one.clone()));
    }
    let many = spec.get("targetRefs").and_then(Value::as_array).cloned();
    refs.extend(numbered("spec.targetRefs", many));
    let refs = refs
        .into_iter()
        .filter_map(|(path, value)| target_ref(path, value, &mut problems, &mut notes))
        .collect();
    let selectors = spec
        .get("targetSelectors")
        .and_then(Value::as_array)
        .cloned();
    for (path, value) in numbered("spec.targetSelectors", selectors) {
        if let Some(s) = selector(path, value, &mut problems, &mut notes) {
            policy.selectors.push(s);
        }
    }
    read_targets(&mut policy, refs, &mut problems);
    let object = policy.display_name();
    for (field, message) in notes {
        inputs.diagnostics.push(
            Diagnostic::note(message)
                .at(&doc.origin)
                .on(object.clone())
                .field(field)
                .hint("docs/peers.md lists the fields Attaché maps; the rest needs the peer's own controller"),
        );
    }
    finish(policy, problems, &doc.origin, inputs);
}

/// Every field under `spec` that is neither mapped nor read, named at the
/// highest path that holds nothing read (`spec.rateLimit`, not each leaf).
fn unread(
    kind: PolicyKind,
    object: &Map<String, Value>,
    prefix: &str,
    out: &mut Vec<(String, String)>,
) {
    for (key, value) in object {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        if is_read(kind, &path) {
            continue;
        }
        match value {
            Value::Object(inner) if leads_to_read(kind, &path) => unread(kind, inner, &path, out),
            _ => out.push((
                format!("spec.{path}"),
                "not enforced by Attaché: Envoy does not apply this field (the policy's mapped fields still apply)".to_string(),
            )),
        }
    }
}

/// The mapped fields, moved to where the project's settings have them and
/// validated like a RoutePolicy's; problems keep the peer's field names.
fn settings_of(
    kind: PolicyKind,
    spec: &Map<String, Value>,
    problems: &mut Vec<Problem>,
) -> Option<FieldMap> {
    let mut ours = Value::Object(Map::new());
    for m in mappings(kind) {
        let Some(value) = get_path(spec, m.theirs) else {
            continue;
        };
        let mut one = Value::Object(Map::new());
        set_path(&mut one, m.ours, value.clone());
        // Each field alone first, so that a type error names its field.
        if let Err(err) = serde_json::from_value::<RawSettings>(one) {
            problems.push(Problem {
                field: format!("spec.{}", m.theirs),
                message: err.to_string(),
                hint: "see docs/peers.md for the type Attaché reads here".into(),
            });
            continue;
        }
        set_path(&mut ours, m.ours, value.clone());
    }
    let raw: RawSettings = serde_json::from_value(ours).ok()?;
    let mut found = Vec::new();
    let map = settings::settings(&raw, "spec", &mut found);
    problems.extend(found.into_iter().map(|p| Problem {
        field: their_field(kind, &p.field),
        ..p
    }));
    (!map.is_empty()).then_some(map)
}

fn merge_type(spec: &Map<String, Value>, problems: &mut Vec<Problem>) -> Option<MergeType> {
    match spec.get("mergeType")?.as_str() {
        Some("StrategicMerge") => Some(MergeType::StrategicMerge),
        Some("JSONMerge") => Some(MergeType::JsonMerge),
        _ => {
            problems.push(Problem {
                field: "spec.mergeType".into(),
                message: "mergeType is StrategicMerge or JSONMerge".into(),
                hint: "leave it out to have the most specific policy replace the others whole"
                    .into(),
            });
            None
        }
    }
}

/// A targetRef; kinds Attaché does not serve (GRPCRoute, ...) are a note.
fn target_ref(
    path: String,
    value: Value,
    problems: &mut Vec<Problem>,
    notes: &mut Vec<(String, String)>,
) -> Option<(String, RawTargetRef)> {
    match serde_json::from_value::<RawTargetRef>(value) {
        Ok(r) if matches!(r.kind.as_str(), "Gateway" | "HTTPRoute") => Some((path, r)),
        Ok(r) => {
            let message = format!(
                "{path} names a {}, which Attaché does not serve; that target is not enforced",
                r.kind
            );
            notes.push((format!("{path}.kind"), message));
            None
        }
        Err(err) => {
            problems.push(Problem {
                field: path,
                message: err.to_string(),
                hint: "a targetRef has group, kind, name and optionally sectionName".into(),
            });
            None
        }
    }
}

fn selector(
    path: String,
    value: Value,
    problems: &mut Vec<Problem>,
    notes: &mut Vec<(String, String)>,
) -> Option<TargetSelector> {
    let raw: RawSelector = match serde_json::from_value(value) {
        Ok(raw) => raw,
        Err(err) => {
            problems.push(Problem {
                field: path,
                message: err.to_string(),
                hint: "a target selector has group, kind and matchLabels".into(),
            });
            return None;
        }
    };
    let kind = match (raw.group.as_str(), raw.kind.as_str()) {
        (GATEWAY_GROUP, "Gateway") => TargetKind::Gateway,
        (GATEWAY_GROUP, "HTTPRoute") => TargetKind::HttpRoute,
        (_, other) => {
            let message = format!(
                "{path} selects {other} objects, which Attaché does not serve; not enforced"
            );
            notes.push((format!("{path}.kind"), message));
            return None;
        }
    };
    Some(TargetSelector {
        kind,
        selector: LabelSelector {
            match_labels: raw.match_labels,
            match_expressions: raw.match_expressions,
        },
        path,
    })
}

fn get_path<'a>(object: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    let mut parts = path.split('.');
    let mut at = object.get(parts.next()?)?;
    for part in parts {
        at = at.get(part)?;
    }
    (!at.is_null()).then_some(at)
}

fn set_path(root: &mut Value, path: &str, value: Value) {
    let mut at = root;
    for part in path.split('.') {
        if !at.is_object() {
            *at = Value::Object(Map::new());
        }
        let Value::Object(map) = at else {
            return;
        };
        at = map.entry(part.to_string()).or_insert(Value::Null);
    }
    *at = value;
}
