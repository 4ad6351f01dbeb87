//! Status drift (docs/semantics.md section 13): a policy's conditions
//! computed now beside those its `.status` holds under our controllerName.
//! `lastTransitionTime` and messages are not compared: the first is the
//! writer's clock, the second free text that may be cut.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::Value;

use super::{AncestorRef, Condition, PolicyStatus, CONTROLLER_NAME};
use crate::model::policy::KINDS;

/// How the written status stands against the computed one. When several
/// hold, the first in this order is given: the one that explains the
/// others (nothing of ours written explains every difference; a write
/// for an older generation explains its differences).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Drift {
    /// Entries only of another controller: someone else writes this status.
    Foreign,
    /// No ancestor entry (nor policy condition) of ours.
    Unwritten,
    /// A condition of ours observed an older `metadata.generation`.
    Stale,
    /// Type, status or reason of a condition differ.
    Differs,
    /// What is written is what is computed.
    InSync,
    /// A peer's kind: its own controller writes its status, not us.
    NotOurs,
}

impl Drift {
    /// The word of the DRIFT column (`-` when there is none).
    pub fn word(self) -> &'static str {
        match self {
            Drift::Foreign => "foreign",
            Drift::Unwritten => "unwritten",
            Drift::Stale => "stale",
            Drift::Differs => "differs",
            Drift::InSync | Drift::NotOurs => "-",
        }
    }

    /// Whether `--strict` fails on it.
    pub fn is_drift(self) -> bool {
        !matches!(self, Drift::InSync | Drift::NotOurs)
    }
}

/// (type, status, reason) of each condition.
type Facts = BTreeSet<(String, String, String)>;

/// (group, kind, namespace, name, sectionName) of an ancestorRef.
type RefKey = (String, String, String, String, String);

/// Each ancestor of ours with its conditions' facts.
type Ancestors = BTreeSet<(RefKey, Facts)>;

fn facts(conditions: &[Condition]) -> Facts {
    conditions
        .iter()
        .map(|c| (c.kind.clone(), c.status.clone(), c.reason.clone()))
        .collect()
}

fn written_facts(conditions: &Value) -> Facts {
    let text = |c: &Value, field: &str| c[field].as_str().unwrap_or_default().to_string();
    conditions
        .as_array()
        .map(|list| {
            list.iter()
                .map(|c| (text(c, "type"), text(c, "status"), text(c, "reason")))
                .collect()
        })
        .unwrap_or_default()
}

fn ref_key(r: &AncestorRef) -> RefKey {
    (
        r.group.clone(),
        r.kind.clone(),
        r.namespace.clone().unwrap_or_default(),
        r.name.clone(),
        r.section_name.clone().unwrap_or_default(),
    )
}

fn written_ref_key(r: &Value) -> RefKey {
    let text = |field: &str| r[field].as_str().unwrap_or_default().to_string();
    (
        text("group"),
        text("kind"),
        text("namespace"),
        text("name"),
        text("sectionName"),
    )
}

/// Whether `kind` is one whose status we write.
fn ours(kind: &str) -> bool {
    KINDS.iter().any(|k| k.name == kind && k.own)
}

/// The drift of one policy: `computed` as `attache status` gives it (with
/// `Programmed`, as the controller writes it), `generation` its
/// `metadata.generation`, `written` its `.status` (null when it has none).
pub fn drift(computed: &PolicyStatus, generation: Option<i64>, written: &Value) -> Drift {
    if !ours(&computed.kind) {
        return Drift::NotOurs;
    }
    let ancestors: &[Value] = written["ancestors"].as_array().map_or(&[], Vec::as_slice);
    let (mine, others): (Vec<&Value>, Vec<&Value>) = ancestors
        .iter()
        .partition(|a| a["controllerName"] == CONTROLLER_NAME);
    let policy_conditions: &[Value] = written["conditions"].as_array().map_or(&[], Vec::as_slice);
    if mine.is_empty() && policy_conditions.is_empty() {
        return if others.is_empty() {
            Drift::Unwritten
        } else {
            Drift::Foreign
        };
    }
    if !computed.status.ancestors.is_empty() && mine.is_empty() {
        return Drift::Unwritten;
    }
    let observed = policy_conditions
        .iter()
        .chain(
            mine.iter()
                .flat_map(|a| a["conditions"].as_array().into_iter().flatten()),
        )
        .filter_map(|c| c["observedGeneration"].as_i64());
    if let Some(generation) = generation {
        if observed.clone().any(|seen| seen < generation) {
            return Drift::Stale;
        }
    }
    let same_policy = facts(&computed.status.conditions) == written_facts(&written["conditions"]);
    let computed_ancestors: Ancestors = computed
        .status
        .ancestors
        .iter()
        .map(|a| (ref_key(&a.ancestor_ref), facts(&a.conditions)))
        .collect();
    let written_ancestors: Ancestors = mine
        .iter()
        .map(|a| {
            (
                written_ref_key(&a["ancestorRef"]),
                written_facts(&a["conditions"]),
            )
        })
        .collect();
    if same_policy && computed_ancestors == written_ancestors {
        Drift::InSync
    } else {
        Drift::Differs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::{AncestorStatus, PolicyStatusBody, StatusMeta};
    use serde_json::json;

    fn condition(kind: &str, status: &str, reason: &str) -> Condition {
        Condition {
            kind: kind.into(),
            status: status.into(),
            reason: reason.into(),
            message: "computed words".into(),
            observed_generation: Some(2),
        }
    }

    fn computed(kind: &str) -> PolicyStatus {
        PolicyStatus {
            api_version: "policy.attache.dev/v1alpha1".into(),
            kind: kind.into(),
            metadata: StatusMeta {
                name: "p".into(),
                namespace: Some("shop".into()),
            },
            status: PolicyStatusBody {
                conditions: vec![condition("Accepted", "True", "Accepted")],
                ancestors: vec![AncestorStatus {
                    ancestor_ref: AncestorRef {
                        group: "gateway.networking.k8s.io".into(),
                        kind: "Gateway".into(),
                        name: "edge".into(),
                        namespace: Some("infra".into()),
                        section_name: None,
                    },
                    controller_name: CONTROLLER_NAME.into(),
                    conditions: vec![condition("Attached", "True", "Attached")],
                }],
            },
        }
    }

    /// The status the controller would write for [`computed`], with other
    /// words and times (which are not compared).
    fn written(generation: i64, reason: &str, controller: &str) -> Value {
        let cond = |t: &str, r: &str| {
            json!({"type": t, "status": "True", "reason": r,
            "message": "other words", "observedGeneration": generation,
            "lastTransitionTime": "2026-01-01T00:00:00Z"})
        };
        json!({
            "conditions": [cond("Accepted", "Accepted")],
            "ancestors": [{
                "ancestorRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway",
                    "name": "edge", "namespace": "infra"},
                "controllerName": controller,
                "conditions": [cond("Attached", reason)]
            }]
        })
    }

    #[test]
    fn each_kind_of_drift_is_told_apart() {
        let p = computed("RoutePolicy");
        assert_eq!(
            drift(&p, Some(2), &written(2, "Attached", CONTROLLER_NAME)),
            Drift::InSync
        );
        assert_eq!(
            drift(&p, Some(3), &written(2, "Attached", CONTROLLER_NAME)),
            Drift::Stale
        );
        assert_eq!(
            drift(&p, Some(2), &written(2, "Merged", CONTROLLER_NAME)),
            Drift::Differs
        );
        assert_eq!(drift(&p, Some(2), &Value::Null), Drift::Unwritten);
        let mut foreign = written(2, "Attached", "example.com/other");
        foreign.as_object_mut().unwrap().remove("conditions");
        assert_eq!(drift(&p, Some(2), &foreign), Drift::Foreign);
        // A peer's policy: its own controller writes its status.
        assert_eq!(
            drift(&computed("TrafficPolicy"), Some(2), &Value::Null),
            Drift::NotOurs
        );
    }

    #[test]
    fn a_missing_or_extra_ancestor_differs() {
        let p = computed("RoutePolicy");
        let mut extra = written(2, "Attached", CONTROLLER_NAME);
        let copy = extra["ancestors"][0].clone();
        let mut other = copy.clone();
        other["ancestorRef"]["name"] = json!("other");
        extra["ancestors"] = json!([copy, other]);
        assert_eq!(drift(&p, Some(2), &extra), Drift::Differs);
        // Another controller's entry beside ours changes nothing.
        let mut beside = written(2, "Attached", CONTROLLER_NAME);
        let mut theirs = beside["ancestors"][0].clone();
        theirs["controllerName"] = json!("example.com/other");
        theirs["conditions"][0]["reason"] = json!("Whatever");
        beside["ancestors"].as_array_mut().unwrap().push(theirs);
        assert_eq!(drift(&p, Some(2), &beside), Drift::InSync);
    }
}
