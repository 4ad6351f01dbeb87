//! The data behind `attache explain`: for one route entry, every effective
//! field with who supplied it, and every contribution that lost and why.

use serde::Serialize;

use crate::field::FieldKey;
use crate::fold::{Folded, LossReason};
use crate::supplier::{Supplier, SupplierView};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// Schema-1 entry name.
    pub entry: String,
    pub listener: String,
    /// `namespace/name` of the leaf route.
    pub route: String,
    pub rule: String,
    /// Delegating parents, outermost first (`HTTPRoute ns/name rule r`).
    pub via: Vec<String>,
    pub fields: Vec<ExplainedField>,
    pub lost: Vec<LostContribution>,
    /// Post-fold adjustments such as the backendRequest clamp.
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExplainedField {
    /// Schema-1 path, e.g. `timeouts.requestMs`.
    pub field: String,
    pub value: String,
    /// Preferred first; several only after a deep merge joined values.
    pub from: Vec<SupplierView>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LostContribution {
    pub field: String,
    pub value: String,
    pub source: SupplierView,
    pub beaten_by: SupplierView,
    pub why: String,
}

/// Builds the explanation of one folded entry.
pub(crate) fn explain(folded: &Folded, suppliers: &[Supplier], head: Explanation) -> Explanation {
    let view = |i: usize| suppliers.get(i).map(SupplierView::from);
    let fields = folded
        .fields
        .iter()
        .map(|(key, e)| ExplainedField {
            field: key.to_string(),
            value: e.value.to_string(),
            from: e.suppliers.iter().filter_map(|i| view(*i)).collect(),
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
            })
        })
        .collect();
    Explanation {
        fields,
        lost,
        ..head
    }
}

fn why(reason: LossReason, field: &FieldKey, loser: &Supplier, winner: &Supplier) -> String {
    let group = match field.group() {
        crate::field::Group::Timeouts => "timeouts",
        crate::field::Group::Retry => "retry",
        crate::field::Group::Headers(crate::field::Direction::Request) => "requestHeaderModifier",
        crate::field::Group::Headers(crate::field::Direction::Response) => "responseHeaderModifier",
    };
    let w = winner.who();
    match reason {
        LossReason::AlreadySet if winner.level == loser.level => {
            format!(
                "{} fills only unset fields; {w} ranks higher at the same level and set it first",
                loser.role
            )
        }
        LossReason::AlreadySet => format!(
            "{} fills only unset fields; already set by {w} at {}",
            loser.role, winner.level
        ),
        LossReason::GroupAlreadySet => {
            format!(
                "shallow merge keeps {group} whole; {w} at {} already set {group}",
                winner.level
            )
        }
        LossReason::Replaced if winner.level == loser.level => {
            format!(
                "replaced by {w} ({}), which ranks higher at the same level",
                winner.role
            )
        }
        LossReason::Replaced => format!(
            "replaced by {w} ({}) at the less specific {}",
            winner.role, winner.level
        ),
        LossReason::GroupReplaced => {
            format!(
                "shallow replace: {w} ({}) at {} took {group} whole",
                winner.role, winner.level
            )
        }
    }
}
