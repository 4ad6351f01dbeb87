//! GEP-713's (2025) `Programmed` condition, per ancestor (docs/status.md):
//! the `Attached` result in the GEP's words. True `Programmed` (Attached),
//! True `PartiallyProgrammed` (Merged: the message names the winners and
//! the policy's strategy), False `Overridden` (nothing supplied), False
//! `Reconciling` (not yet applied, or the apply failed and is retried).
//! Absent while `Accepted` is False. Offline (`attache status`) it is
//! computed as if applied; the controller says what it applied.

use super::{condition, AncestorStatus, PolicyStatus, StatusReport};
use crate::model::{Inputs, Policy};
use crate::supplier::Role;

pub const PROGRAMMED: &str = "Programmed";

/// Whether the configuration carrying the policy's values under one
/// ancestor was applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    /// Applied (offline: as if applied).
    Yes,
    /// Not applied yet.
    Pending,
    /// The apply failed with this error; it is retried.
    Failed(String),
}

/// The `Programmed` condition of one policy at one ancestor, from its
/// `Accepted` and `Attached` conditions; `None` while Accepted is not True.
/// `strategies`: the policy's strategy in the GEP's words ([`strategies`]).
pub fn programmed(
    ancestor: &AncestorStatus,
    strategies: &[String],
    applied: &Applied,
    generation: Option<i64>,
) -> Option<super::Condition> {
    let of = |kind: &str| ancestor.conditions.iter().find(|c| c.kind == kind);
    if of("Accepted")?.status != "True" {
        return None;
    }
    let strategy = if strategies.is_empty() {
        String::new()
    } else {
        format!("; strategy: {}", strategies.join(", "))
    };
    Some(match applied {
        Applied::Pending => condition(
            PROGRAMMED,
            false,
            "Reconciling",
            "the configuration carrying it is not applied yet".into(),
            generation,
        ),
        Applied::Failed(error) => condition(
            PROGRAMMED,
            false,
            "Reconciling",
            format!("applying the configuration failed, retried: {error}"),
            generation,
        ),
        Applied::Yes => {
            let attached = of("Attached")?;
            let message = format!("{}{strategy}", attached.message);
            match attached.reason.as_str() {
                "Merged" => condition(PROGRAMMED, true, "PartiallyProgrammed", message, generation),
                "Overridden" => condition(PROGRAMMED, false, "Overridden", message, generation),
                // Every value it sets was refused (crate::steering).
                "Refused" => condition(PROGRAMMED, false, "Refused", message, generation),
                // Attached: every value it sets is in effect (or no rule
                // is served through it, which the message says).
                _ => condition(PROGRAMMED, true, "Programmed", message, generation),
            }
        }
    })
}

/// The policy's strategy at an ancestor, in the GEP's words (docs/semantics.md,
/// "Merge strategies"): its `mergeStrategy`, else one entry per stanza it
/// holds, its plain settings named by the target's annotation.
pub fn strategies(inputs: &Inputs, policy: &Policy, ancestor: usize) -> Vec<String> {
    let priority = policy
        .targets
        .get(ancestor)
        .and_then(|t| t.resolved.as_ref())
        .map(|t| inputs.priority_of(t))
        .unwrap_or_default();
    let roles: Vec<Role> = match policy.strategy {
        Some(s) => vec![Role::Strategy(s)],
        None => [
            policy.defaults.as_ref().map(|_| Role::Defaults),
            policy.overrides.as_ref().map(|_| Role::Overrides),
            policy.plain.as_ref().map(|_| Role::Plain(priority)),
        ]
        .into_iter()
        .flatten()
        .collect(),
    };
    roles
        .into_iter()
        .filter_map(|r| r.strategy_words(policy))
        .collect()
}

/// Per policy (index into `report.policies`, which is `inputs.policies`'
/// order) and ancestor (index into its `status.ancestors`): the
/// `Programmed` condition, `applied` saying what was applied there. What
/// the controller calls, then puts each condition beside the others.
pub fn programmed_conditions(
    inputs: &Inputs,
    report: &StatusReport,
    applied: impl Fn(&PolicyStatus, &AncestorStatus) -> Applied,
) -> Vec<(usize, usize, super::Condition)> {
    let mut out = Vec::new();
    for (i, (status, policy)) in report.policies.iter().zip(&inputs.policies).enumerate() {
        for (a, ancestor) in status.status.ancestors.iter().enumerate() {
            let words = strategies(inputs, policy, a);
            let applied = applied(status, ancestor);
            if let Some(c) = programmed(ancestor, &words, &applied, policy.meta.generation) {
                out.push((i, a, c));
            }
        }
    }
    out
}

/// Offline: every ancestor's `Programmed`, computed as if applied, added
/// after its other conditions.
pub fn with_programmed(inputs: &Inputs, report: &mut StatusReport) {
    let found = programmed_conditions(inputs, report, |_, _| Applied::Yes);
    for (i, a, c) in found {
        if let Some(ancestor) = report
            .policies
            .get_mut(i)
            .and_then(|p| p.status.ancestors.get_mut(a))
        {
            ancestor.conditions.push(c);
        }
    }
}
