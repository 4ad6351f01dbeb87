//! The data behind `attache explain`: for one route entry, every effective
//! field with who supplied it, and every contribution that lost and why.

use serde::Serialize;

mod strategy;
pub(crate) use strategy::strategy_notes;

use crate::authored_form::Written;
use crate::field::FieldKey;
use crate::fold::{Folded, LossReason};
use crate::model::{MergeStrategy, PolicyKind};
use crate::supplier::{Role, Source, Supplier, SupplierView};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// Schema-1 entry name.
    pub entry: String,
    /// The listener's own name.
    pub listener: String,
    /// `ListenerSet team-a/ls-a` (or `XListenerSet ...`) when the listener
    /// is a ListenerSet's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listener_set: Option<String>,
    /// `namespace/name` of the leaf route.
    pub route: String,
    /// The leaf route's kind when it is not an HTTPRoute (`GRPCRoute`), as
    /// in the entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route_kind: Option<String>,
    pub rule: String,
    /// Delegating parents, outermost first (`HTTPRoute ns/name rule r`).
    pub via: Vec<String>,
    pub fields: Vec<ExplainedField>,
    pub lost: Vec<LostContribution>,
    /// Post-fold adjustments such as the backendRequest clamp.
    pub notes: Vec<String>,
}

impl Explanation {
    /// The leaf route's kind name: `HTTPRoute` unless `route_kind` says.
    pub fn route_kind_name(&self) -> &str {
        self.route_kind.as_deref().unwrap_or("HTTPRoute")
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExplainedField {
    /// Schema-1 path, e.g. `timeouts.requestMs`.
    pub field: String,
    pub value: String,
    /// Preferred first; several only after a deep merge joined values.
    pub from: Vec<SupplierView>,
    /// Path and value as the first supplier's kind writes them (for
    /// people; the JSON keeps the schema-1 names above).
    #[serde(skip)]
    pub written: Written,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LostContribution {
    pub field: String,
    pub value: String,
    pub source: SupplierView,
    pub beaten_by: SupplierView,
    pub why: String,
    /// Path and value as the loser's kind writes them.
    #[serde(skip)]
    pub written: Written,
}

/// Builds the explanation of one folded entry; `kind_of` names the kind of
/// a policy (an index into `Inputs::policies`) so that each field is also
/// given as that kind writes it.
pub(crate) fn explain(
    folded: &Folded,
    suppliers: &[Supplier],
    head: Explanation,
    kind_of: impl Fn(usize) -> Option<PolicyKind>,
) -> Explanation {
    let view = |i: usize| suppliers.get(i).map(SupplierView::from);
    let kind = |s: &Supplier| match &s.source {
        Source::Policy { index, .. } => kind_of(*index),
        Source::Inline { .. } => None,
    };
    let fields = folded
        .fields
        .iter()
        .map(|(key, e)| {
            let first = e.suppliers.first().and_then(|i| suppliers.get(*i));
            ExplainedField {
                field: key.to_string(),
                value: e.value.to_string(),
                from: e.suppliers.iter().filter_map(|i| view(*i)).collect(),
                written: Written::new(key, &e.value, first.and_then(kind)),
            }
        })
        .collect();
    let lost = folded
        .losses
        .iter()
        .filter_map(|l| {
            let loser = suppliers.get(l.loser)?;
            let winner = suppliers.get(l.winner)?;
            Some(LostContribution {
                field: l.field.to_string(),
                value: l.value.to_string(),
                source: loser.into(),
                beaten_by: winner.into(),
                why: why(l.reason, &l.field, loser, winner),
                written: Written::new(&l.field, &l.value, kind(loser)),
            })
        })
        .collect();
    Explanation {
        fields,
        lost,
        ..head
    }
}

/// The winner where it stands, each name once: `RoutePolicy a/b at Gateway
/// a/gw`, or a rule's own value, which is its own level.
fn at_level(s: &Supplier) -> String {
    match s.source {
        Source::Policy { .. } => format!("{} at {}", s.who(), s.level),
        Source::Inline { .. } => s.who(),
    }
}

/// Why a contribution lost, without repeating what the line already says
/// (the loser, its role and level are printed before it).
fn why(reason: LossReason, field: &FieldKey, loser: &Supplier, winner: &Supplier) -> String {
    let group = crate::authored_form::group_name(field.group());
    let same_level = winner.level == loser.level;
    let w = winner.who();
    let role = winner.role;
    match reason {
        LossReason::AlreadySet
            if loser.role == Role::Strategy(MergeStrategy::PatchDefaults)
                && matches!(winner.source, Source::Policy { .. }) =>
        {
            format!("{} over it (Patch defaults, RFC 7386)", at_level(winner))
        }
        LossReason::Replaced
            if role == Role::Strategy(MergeStrategy::PatchOverrides)
                && matches!(loser.source, Source::Policy { .. }) =>
        {
            format!(
                "{w} at {} over it (Patch overrides, RFC 7386)",
                winner.level
            )
        }
        LossReason::AlreadySet if same_level => {
            format!("it fills only unset fields, and {w} ranks higher at the same level")
        }
        LossReason::AlreadySet => {
            format!(
                "it fills only unset fields; already set by {}",
                at_level(winner)
            )
        }
        LossReason::GroupAlreadySet => {
            format!(
                "shallow merge keeps {group} whole; {} already set {group}",
                at_level(winner)
            )
        }
        LossReason::Replaced if same_level => {
            format!("replaced by {w} ({role}), which ranks higher at the same level")
        }
        LossReason::Replaced => match winner.source {
            Source::Policy { .. } => {
                format!(
                    "replaced by {w} ({role}) at the less specific {}",
                    winner.level
                )
            }
            Source::Inline { .. } => format!("replaced by the less specific {w} ({role})"),
        },
        LossReason::GroupReplaced => {
            format!(
                "shallow replace: {w} ({role}) at {} took {group} whole",
                winner.level
            )
        }
        LossReason::AtomicDropped => {
            let more = if same_level {
                "newer (2025 order)"
            } else {
                "more specific"
            };
            format!("dropped whole: {} is {more}", at_level(winner))
        }
        LossReason::AtomicReplaced => {
            format!("{w} ({role}) at {} replaces all below", winner.level)
        }
        LossReason::ListReplaced => {
            let strategy = match (loser.role, winner.role) {
                (Role::Strategy(MergeStrategy::PatchDefaults), _) => MergeStrategy::PatchDefaults,
                _ => MergeStrategy::PatchOverrides,
            };
            format!(
                "list replaced whole ({strategy}, RFC 7386): {} holds it",
                at_level(winner)
            )
        }
        LossReason::RemovedByNull => format!("removed by {w} (null) at {}", winner.level),
    }
}
