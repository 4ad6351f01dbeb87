//! Policy status changes for `attache diff`: the `Accepted` reason of each
//! policy as a whole, and of each of its targets. A policy with several
//! targetRefs stays Accepted when one target goes missing or becomes
//! Conflicted, so the policy-level reason alone would hide that change.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::ChangeKind;
use crate::model::policy::TargetKind;
use crate::status::{AncestorRef, Condition, PolicyStatus, StatusReport};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyChange {
    /// `Kind namespace/name` (`Kind name` for cluster-scoped kinds).
    pub policy: String,
    /// The policy as a whole; `old` is absent when the policy did not exist.
    #[serde(flatten)]
    pub accepted: ReasonChange,
    /// Targets whose own `Accepted` reason changed, when the policy exists
    /// and is valid on both sides (an Invalid policy has no targets to compare).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<TargetChange>,
    pub kinds: Vec<ChangeKind>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetChange {
    /// The target as status messages name it (`HTTPRoute shop/storefront rule checkout`).
    pub target: String,
    /// `old` is absent when the targetRef was not there.
    #[serde(flatten)]
    pub accepted: ReasonChange,
}

/// An `Accepted` condition before and after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReasonChange {
    /// The reason; absent when the object was not there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new: Option<String>,
    /// The new condition's message.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// One policy's `Accepted` reason and message, overall and per target.
struct Seen {
    reason: String,
    message: String,
    targets: BTreeMap<String, (String, String)>,
}

pub(super) fn policy_changes(old: &StatusReport, new: &StatusReport) -> Vec<PolicyChange> {
    let (before, after) = (index(old), index(new));
    let names: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    names
        .into_iter()
        .filter_map(|name| change(name, before.get(name), after.get(name)))
        .collect()
}

fn change(name: &str, old: Option<&Seen>, new: Option<&Seen>) -> Option<PolicyChange> {
    let (old_reason, new_reason) = (old.map(|s| &s.reason), new.map(|s| &s.reason));
    let mut kinds = BTreeSet::new();
    if old_reason != new_reason {
        kinds.extend(kind_of(old_reason, new_reason));
    }
    let invalid = |s: &Seen| s.reason == "Invalid";
    let targets = match (old, new) {
        (Some(o), Some(n)) if !invalid(o) && !invalid(n) => target_changes(o, n),
        _ => Vec::new(),
    };
    for t in &targets {
        kinds.extend(kind_of(t.accepted.old.as_ref(), t.accepted.new.as_ref()));
    }
    if old_reason == new_reason && targets.is_empty() {
        return None;
    }
    Some(PolicyChange {
        policy: name.to_string(),
        accepted: ReasonChange {
            old: old_reason.cloned(),
            new: new_reason.cloned(),
            message: new.map(|s| s.message.clone()).unwrap_or_default(),
        },
        targets,
        kinds: kinds.into_iter().collect(),
    })
}

fn target_changes(old: &Seen, new: &Seen) -> Vec<TargetChange> {
    let names: BTreeSet<&String> = old.targets.keys().chain(new.targets.keys()).collect();
    names
        .into_iter()
        .filter_map(|target| {
            let (o, n) = (old.targets.get(target), new.targets.get(target));
            (o.map(|(r, _)| r) != n.map(|(r, _)| r)).then(|| TargetChange {
                target: target.clone(),
                accepted: ReasonChange {
                    old: o.map(|(r, _)| r.clone()),
                    new: n.map(|(r, _)| r.clone()),
                    message: n.map(|(_, m)| m.clone()).unwrap_or_default(),
                },
            })
        })
        .collect()
}

/// The kind of a change of `Accepted` reason: becoming a failure reason, or
/// an existing failure becoming Accepted again.
fn kind_of(old: Option<&String>, new: Option<&String>) -> Option<ChangeKind> {
    match new.map(String::as_str) {
        Some("Invalid") => Some(ChangeKind::PolicyInvalid),
        Some("Conflicted") => Some(ChangeKind::PolicyConflicted),
        Some("TargetNotFound") => Some(ChangeKind::PolicyTargetNotFound),
        Some("Accepted") if old.is_some() => Some(ChangeKind::PolicyRecovered),
        _ => None,
    }
}

fn index(report: &StatusReport) -> BTreeMap<String, Seen> {
    report
        .policies
        .iter()
        .map(|p| {
            let (reason, message) = accepted(&p.status.conditions);
            // An Invalid policy has no ancestors; its targets are not compared.
            let targets = p
                .status
                .ancestors
                .iter()
                .map(|a| (target_name(&a.ancestor_ref), accepted(&a.conditions)))
                .collect();
            let seen = Seen {
                reason,
                message,
                targets,
            };
            (policy_name(p), seen)
        })
        .collect()
}

fn policy_name(p: &PolicyStatus) -> String {
    match &p.metadata.namespace {
        Some(ns) => format!("{} {ns}/{}", p.kind, p.metadata.name),
        None => format!("{} {}", p.kind, p.metadata.name),
    }
}

/// The target named as the status messages name it (`Target`'s display);
/// a kind the resolver does not attach to is named as written.
fn target_name(a: &AncestorRef) -> String {
    let section = a.section_name.clone();
    match TargetKind::named(&a.kind)
        .and_then(|kind| kind.target(a.namespace.as_deref(), &a.name, section))
    {
        Some(target) => target.to_string(),
        None => format!("{} {}", a.kind, a.name),
    }
}

/// The `Accepted` condition's reason and message.
fn accepted(conditions: &[Condition]) -> (String, String) {
    conditions
        .iter()
        .find(|c| c.kind == "Accepted")
        .map(|c| (c.reason.clone(), c.message.clone()))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{Origin, SourceDoc};

    /// A RoutePolicy on the given rules of HTTPRoute shop/web, and that route
    /// with the given rule names: status as `attache status` computes it.
    fn status(policy_rules: &[&str], route_rules: &[&str], request: &str) -> StatusReport {
        let doc = |document, value| SourceDoc {
            origin: Origin {
                file: "t.yaml".into(),
                document,
                item: None,
            },
            value,
        };
        let targets: Vec<_> = policy_rules
            .iter()
            .map(|rule| serde_json::json!({"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "web", "sectionName": rule}))
            .collect();
        let rules: Vec<_> = route_rules
            .iter()
            .map(|r| serde_json::json!({"name": r}))
            .collect();
        let docs = [
            doc(
                1,
                serde_json::json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
                "metadata": {"name": "web", "namespace": "shop"}, "spec": {"rules": rules}}),
            ),
            doc(
                2,
                serde_json::json!({"apiVersion": "policy.attache.dev/v1alpha1", "kind": "RoutePolicy",
                "metadata": {"name": "p", "namespace": "shop"},
                "spec": {"targetRefs": targets, "defaults": {"timeouts": {"request": request}}}}),
            ),
        ];
        crate::status::policy_status(&crate::parse(&docs))
    }

    #[test]
    fn one_target_of_several_going_missing_is_a_change_of_that_target() {
        let old = status(&["a", "b"], &["a", "b"], "5s");
        let new = status(&["a", "b"], &["a", "c"], "5s");
        let changes = policy_changes(&old, &new);
        assert_eq!(changes.len(), 1, "{changes:#?}");
        let change = &changes[0];
        assert_eq!(change.policy, "RoutePolicy shop/p");
        assert_eq!(
            (
                change.accepted.old.as_deref(),
                change.accepted.new.as_deref()
            ),
            (Some("Accepted"), Some("Accepted"))
        );
        assert_eq!(change.kinds, [ChangeKind::PolicyTargetNotFound]);
        assert_eq!(change.targets.len(), 1, "{changes:#?}");
        let target = &change.targets[0];
        assert_eq!(target.target, "HTTPRoute shop/web rule b");
        assert_eq!(
            (
                target.accepted.old.as_deref(),
                target.accepted.new.as_deref()
            ),
            (Some("Accepted"), Some("TargetNotFound"))
        );
        // ... and back: the target recovers.
        let back = policy_changes(&new, &old);
        assert_eq!(back[0].kinds, [ChangeKind::PolicyRecovered]);
    }

    #[test]
    fn an_invalid_policy_is_one_change_without_target_noise() {
        let old = status(&["a"], &["a"], "5s");
        let new = status(&["a"], &["a"], "5 seconds");
        let changes = policy_changes(&old, &new);
        assert_eq!(changes.len(), 1, "{changes:#?}");
        assert_eq!(changes[0].accepted.new.as_deref(), Some("Invalid"));
        assert_eq!(changes[0].kinds, [ChangeKind::PolicyInvalid]);
        assert!(changes[0].targets.is_empty(), "{changes:#?}");
        assert!(policy_changes(&old, &old).is_empty());
    }
}
