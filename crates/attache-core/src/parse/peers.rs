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
use crate::model::peers::{
    fields_below, is_read, leads_to_read, mappings, peer, their_field, Peer,
};
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

/// kgateway's `LocalPolicyTargetSelectorWithSectionName` and Envoy
/// Gateway's `TargetSelector`, read as one shape; what only one of them
/// has is checked per kind in [`selector`].
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawSelector {
    group: Option<String>,
    kind: String,
    #[serde(default)]
    match_labels: BTreeMap<String, String>,
    #[serde(default)]
    match_expressions: Vec<crate::model::gateway::LabelRequirement>,
    /// kgateway only.
    section_name: Option<String>,
    /// Envoy Gateway only (`TargetSelectorNamespaces`).
    namespaces: Option<Value>,
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
    let Value::Object(mut spec) = raw.spec else {
        problems.push(Problem {
            field: "spec".into(),
            message: "the spec is missing or not an object".into(),
            hint: "write the policy's spec as its project documents it (docs/peers.md)".into(),
        });
        return finish(policy, problems, &doc.origin, inputs);
    };
    let mut notes = Vec::new();
    unread(kind, &spec, "", &mut notes, &mut problems);
    let defaulted = stored_defaults(kind, &mut spec);
    policy.plain = settings_of(kind, &spec, &mut problems);
    // kgateway has no mergeType: on a TrafficPolicy it is an unmapped
    // field, noted by `unread`, not a value to check.
    if peer(kind).is_some_and(|p| p.merge_type) {
        policy.merge_type = merge_type(&spec, &mut problems);
    }
    let before = problems.len();
    let mut refs = Vec::new();
    // Envoy Gateway's deprecated singular targetRef; kgateway has none, so
    // on a TrafficPolicy it is noted by `unread` and attaches nothing.
    if is_read(kind, "targetRef") {
        if let Some(one) = spec.get("targetRef").filter(|v| !v.is_null()) {
            refs.push(("spec.targetRef".to_string(), one.clone()));
        }
    }
    refs.extend(listed(&spec, "targetRefs", &mut problems));
    let refs: Vec<_> = refs
        .into_iter()
        .filter_map(|(path, value)| target_ref(kind, path, value, &mut problems, &mut notes))
        .collect();
    for (path, value) in listed(&spec, "targetSelectors", &mut problems) {
        if let Some(s) = selector(kind, path, value, &mut problems, &mut notes) {
            policy.selectors.push(s);
        }
    }
    // A target that failed is already an error; "targets nothing, add
    // targetRefs" after it would send the reader the wrong way.
    if !(refs.is_empty() && problems.len() > before) {
        read_targets(&mut policy, refs, &mut problems);
    }
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
    // Only a policy that applies: a default on a refused one is noise.
    if let Some((field, message)) = defaulted.filter(|_| problems.is_empty()) {
        inputs.diagnostics.push(
            Diagnostic::note(message)
                .at(&doc.origin)
                .on(object)
                .field(field)
                .hint("write retry.numRetries to make the count explicit (docs/peers.md)"),
        );
    }
    finish(policy, problems, &doc.origin, inputs);
}

/// Every field under `spec` that is neither mapped nor read, named at the
/// highest path that holds nothing read (`spec.rateLimit`, not each leaf).
/// A parent of mapped fields that is not an object (`retry: "3"`) is an
/// error: its settings cannot be read, so the policy must not pass as
/// applying nothing. Null is absent, as Kubernetes reads it.
fn unread(
    kind: PolicyKind,
    object: &Map<String, Value>,
    prefix: &str,
    notes: &mut Vec<(String, String)>,
    problems: &mut Vec<Problem>,
) {
    for (key, value) in object {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        if is_read(kind, &path) || value.is_null() {
            continue;
        }
        match value {
            Value::Object(inner) if leads_to_read(kind, &path) => {
                unread(kind, inner, &path, notes, problems)
            }
            _ if leads_to_read(kind, &path) => problems.push(Problem {
                field: format!("spec.{path}"),
                message: format!("{} where an object is expected", shape(value)),
                hint: format!(
                    "write spec.{path} as an object with {} (docs/peers.md)",
                    fields_below(kind, &path).join(", ")
                ),
            }),
            _ => notes.push((format!("spec.{path}"), not_enforced(kind, &path))),
        }
    }
}

/// Why a field is noted: kgateway's TrafficPolicy has no singular
/// `targetRef` (its spec has `targetRefs` only), so kgateway never attaches
/// through it; every other unread field is one Envoy does not get from us.
fn not_enforced(kind: PolicyKind, path: &str) -> String {
    // A peer that reads targetRefs but not the singular targetRef.
    let plural_only = |p: &&Peer| p.read.contains(&"targetRefs") && !p.read.contains(&"targetRef");
    if let Some(p) = peer(kind)
        .filter(plural_only)
        .filter(|_| path == "targetRef")
    {
        return format!(
            "not a {} field ({} reads targetRefs, a list); nothing is attached through it",
            kind.info().name,
            p.project
        );
    }
    "Attaché does not enforce this field: it reads it and puts nothing of it into Envoy (the policy's mapped fields still apply)"
        .into()
}

/// A JSON value's kind, for messages.
fn shape(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// `spec.<field>[i]` for each item of a list field; absent or null is an
/// empty list, anything else an error naming the field.
fn listed(
    spec: &Map<String, Value>,
    field: &str,
    problems: &mut Vec<Problem>,
) -> Vec<(String, Value)> {
    let path = format!("spec.{field}");
    match spec.get(field) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => numbered(&path, Some(items.clone())),
        Some(other) => {
            problems.push(Problem {
                field: path,
                message: format!("{} where a list is expected", shape(other)),
                hint: format!(
                    "write {field} as a list: one `- {{group: ..., kind: ...}}` item per target"
                ),
            });
            Vec::new()
        }
    }
}

/// Envoy Gateway's CRD defaults `retry.numRetries` to 2
/// (`+kubebuilder:default=2` in its api/v1alpha1/retry_types.go), so the API
/// server stores 2 in every BackendTrafficPolicy that has a `retry`
/// (`Peer::stored_num_retries`). A manifest read before it reached a cluster
/// may lack it; Attaché reads it as stored, and says so.
///
/// Fills in what the API server would have stored; returns the field it
/// filled, with a note to tell the reader.
fn stored_defaults(kind: PolicyKind, spec: &mut Map<String, Value>) -> Option<(String, String)> {
    let peer = peer(kind)?;
    let n = peer.stored_num_retries?;
    let Some(Value::Object(retry)) = spec.get_mut("retry") else {
        return None;
    };
    if !retry.get("numRetries").is_none_or(Value::is_null) {
        return None;
    }
    retry.insert("numRetries".into(), n.into());
    let project = peer.project;
    Some((
        "spec.retry.numRetries".into(),
        format!("absent: {project}'s API server stores its default, {n}, in every retry; Attaché applies {n} retries as {project} would"),
    ))
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
    match spec.get("mergeType")? {
        Value::Null => None,
        Value::String(s) if s == "StrategicMerge" => Some(MergeType::StrategicMerge),
        Value::String(s) if s == "JSONMerge" => Some(MergeType::JsonMerge),
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

/// A targetRef; kinds Attaché does not serve for this peer's kind (its
/// `KINDS` row's namespaced targets: Gateway, HTTPRoute, GRPCRoute) are a note.
fn target_ref(
    kind: PolicyKind,
    path: String,
    value: Value,
    problems: &mut Vec<Problem>,
    notes: &mut Vec<(String, String)>,
) -> Option<(String, RawTargetRef)> {
    match serde_json::from_value::<RawTargetRef>(value) {
        // The namespaced kinds of `TARGET_KINDS` this peer's kind may
        // target (`KINDS`); another is a note.
        Ok(r)
            if TargetKind::named(&r.kind)
                .is_some_and(|k| k.info().namespaced && kind.info().targets.contains(&k)) =>
        {
            Some((path, r))
        }
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
    kind: PolicyKind,
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
    let group = selector_fields(kind, &raw, &path, problems, notes)?;
    // Selectors select in the policy's namespace: namespaced kinds only.
    let targets = kind.info().targets;
    let kind = match TargetKind::find(&group, &raw.kind)
        .filter(|k| k.info().namespaced && targets.contains(k))
    {
        Some(kind) => kind,
        None => {
            let other = raw.kind.as_str();
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
        section_name: raw.section_name,
        path,
    })
}

/// What differs between the two peers' selectors: the group (required by
/// kgateway, defaulted by Envoy Gateway), `sectionName` (kgateway only) and
/// `namespaces` (Envoy Gateway only, noted: Attaché selects in the policy's
/// namespace). Returns the group, or `None` after a problem.
fn selector_fields(
    kind: PolicyKind,
    raw: &RawSelector,
    path: &str,
    problems: &mut Vec<Problem>,
    notes: &mut Vec<(String, String)>,
) -> Option<String> {
    let peer = peer(kind)?;
    let project = peer.project;
    let problem = |field: &str, message: &str, hint: &str| Problem {
        field: format!("{path}{field}"),
        message: message.into(),
        hint: hint.into(),
    };
    if !peer.selector_section_name && raw.section_name.is_some() {
        problems.push(problem(
            ".sectionName",
            &format!("{project}'s targetSelectors have no sectionName"),
            "use targetRefs with sectionName to reach one listener or rule",
        ));
        return None;
    }
    if !peer.selector_namespaces && raw.namespaces.is_some() {
        problems.push(problem(
            ".namespaces",
            &format!("{project}'s targetSelectors have no namespaces: they select in the policy's namespace"),
            "remove namespaces",
        ));
        return None;
    }
    if peer.selector_namespaces && raw.namespaces.as_ref().is_some_and(|v| !v.is_null()) {
        notes.push((
            format!("{path}.namespaces"),
            "not enforced by Attaché: it selects only in the policy's own namespace".into(),
        ));
    }
    match (&raw.group, peer.selector_default_group) {
        (Some(group), _) => Some(group.clone()),
        (None, Some(group)) => Some(group.into()),
        (None, None) => {
            problems.push(problem(
                ".group",
                &format!("group is required in {project}'s targetSelectors"),
                "add group: gateway.networking.k8s.io",
            ));
            None
        }
    }
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
