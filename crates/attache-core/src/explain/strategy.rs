//! `explain`'s lines for GEP-713 (2025) strategies (docs/semantics.md,
//! "Merge strategies"): each policy's strategy in the GEP's words, what an
//! atomic policy did whole, and where the 2025 order and the seeds' differ.
//! Only folds with an opted-in policy get them, so nothing else changes.

use std::collections::BTreeMap;

use crate::authored_form::Written;
use crate::fold::{Folded, LossReason, Op};
use crate::model::{MergeStrategy, Policy};
use crate::supplier::{Role, Source, Supplier};

/// The notes of one folded entry; empty unless a policy opted in.
pub(crate) fn strategy_notes<'p>(
    folded: &Folded,
    suppliers: &[Supplier],
    policy: impl Fn(usize) -> Option<&'p Policy>,
) -> Vec<String> {
    let opted = |s: &Supplier| match s.role {
        Role::Strategy(strategy) => Some(strategy),
        Role::Defaults | Role::Overrides | Role::Plain(_) | Role::Inline(_) | Role::Merged => None,
    };
    if !suppliers.iter().any(|s| opted(s).is_some()) {
        return Vec::new();
    }
    let of = |s: &Supplier| match &s.source {
        Source::Policy { index, .. } => policy(*index),
        Source::Inline { .. } => None,
    };
    let mut notes = Vec::new();
    for s in suppliers {
        let Some(words) = of(s).and_then(|p| s.role.strategy_words(p)) else {
            continue;
        };
        let line = format!("strategy of {} at {}: {words}", s.who(), s.level);
        if !notes.contains(&line) {
            notes.push(line);
        }
    }
    let path = |l: &crate::fold::Loss, s: &Supplier| {
        Written::new(&l.field, &l.value, of(s).map(|p| p.kind)).path
    };
    for (id, s) in suppliers.iter().enumerate() {
        match opted(s) {
            Some(MergeStrategy::AtomicDefaults) => {
                let mut dropped: BTreeMap<usize, Vec<String>> = BTreeMap::new();
                for l in folded.losses.iter().filter(|l| l.loser == id) {
                    if l.reason == LossReason::AtomicDropped {
                        dropped.entry(l.winner).or_default().push(path(l, s));
                    }
                }
                let holds = folded.fields.values().any(|e| e.suppliers.contains(&id));
                if holds {
                    notes.push(format!(
                        "from {} (Atomic defaults; nothing more specific)",
                        s.who()
                    ));
                }
                for (winner, fields) in dropped {
                    let Some(w) = suppliers.get(winner) else {
                        continue;
                    };
                    let more = if w.level == s.level {
                        "newer (2025 order)"
                    } else {
                        "more specific"
                    };
                    notes.push(format!(
                        "{} dropped whole: {} at {} is {more}; it went: {}",
                        s.who(),
                        w.who(),
                        w.level,
                        fields.join(", ")
                    ));
                }
            }
            Some(MergeStrategy::AtomicOverrides) => {
                let mut dropped: BTreeMap<String, Vec<String>> = BTreeMap::new();
                for l in folded.losses.iter().filter(|l| l.winner == id) {
                    if l.reason == LossReason::AtomicReplaced {
                        if let Some(loser) = suppliers.get(l.loser) {
                            dropped.entry(loser.who()).or_default().push(path(l, loser));
                        }
                    }
                }
                let dropped: Vec<String> = dropped
                    .into_iter()
                    .map(|(who, fields)| format!("{who} {}", fields.join(", ")))
                    .collect();
                let dropped = if dropped.is_empty() {
                    "nothing".to_string()
                } else {
                    dropped.join("; ")
                };
                notes.push(format!(
                    "{} replaces all below; dropped: {dropped}",
                    s.who()
                ));
            }
            Some(
                MergeStrategy::PatchDefaults
                | MergeStrategy::PatchOverrides
                | MergeStrategy::Custom(_),
            )
            | None => {}
        }
    }
    notes.extend(order_notes(folded, suppliers, |s| {
        of(s).map_or(0, |p| p.weight)
    }));
    notes
}

/// Where two opted-in policies at one level met and the orders differ:
/// among defaults the 2025 order lets the newer win, the seeds the older;
/// among overrides the 2025 order has no weight, the seeds rank by it.
fn order_notes(
    folded: &Folded,
    suppliers: &[Supplier],
    weight: impl Fn(&Supplier) -> i64,
) -> Vec<String> {
    let mut out = Vec::new();
    for l in &folded.losses {
        let (Some(loser), Some(winner)) = (suppliers.get(l.loser), suppliers.get(l.winner)) else {
            continue;
        };
        let ops = match (loser.role, winner.role) {
            (Role::Strategy(a), Role::Strategy(b)) if a.op() == b.op() => Some(a.op()),
            _ => None,
        };
        if loser.level != winner.level {
            continue;
        }
        let (w, l, at) = (winner.who(), loser.who(), &winner.level);
        let line = match ops {
            Some(Op::Fill) => format!(
                "2025 order: the newer default wins here ({w} over {l} at {at}); the seeds: the older"
            ),
            Some(Op::Replace) if weight(loser) > weight(winner) => format!(
                "2025 order: the older override wins here ({w} over {l} at {at}); the seeds: the higher \
                 policy-weight"
            ),
            Some(Op::Replace) | None => continue,
        };
        if !out.contains(&line) {
            out.push(line);
        }
    }
    out
}
