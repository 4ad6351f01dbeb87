//! The fold of docs/semantics.md ("The fold"), in three parts:
//!
//! - this module, the step: one contribution at a time into the accumulated
//!   result, with one operation and one granularity, keeping who supplied
//!   each field and what lost ([`Folded`], [`Op`], [`Granularity`]);
//! - [`levels`]: which contributions fold into one route rule, in which
//!   order (rule, route, delegating parents, listener, Gateway, Namespace,
//!   GatewayClass), as a [`levels::RuleFold`];
//! - [`shared`]: the listener-and-up levels folded once per listener and
//!   memoised, so resolving 10,000 rules stays linear.
//!
//! `resolve` drives them per entry; `status::counting` reads what they lost.

use std::collections::{BTreeMap, BTreeSet};

use crate::field::{FieldKey, FieldMap, FieldValue, Group};
use crate::supplier::{Source, Supplier};

pub(crate) mod levels;
pub(crate) mod peer_gate;
pub(crate) mod shared;
pub(crate) mod strategy;

pub use crate::model::meta::{Granularity, Op};

/// An effective value and who supplied it (several after a deep join,
/// preferred first). Suppliers are indices the caller assigns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effective {
    pub value: FieldValue,
    pub suppliers: Vec<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LossReason {
    /// A fill found the field already set.
    AlreadySet,
    /// A shallow fill found the top-level field already set.
    GroupAlreadySet,
    /// A replace overwrote it.
    Replaced,
    /// A shallow replace took the whole top-level field.
    GroupReplaced,
    /// Atomic defaults: policies folded before it supplied something, so
    /// the whole policy went.
    AtomicDropped,
    /// Atomic overrides dropped what policies folded before it supplied.
    AtomicReplaced,
    /// Patch (RFC 7386): the other side's header list was taken whole.
    ListReplaced,
    /// Patch overrides: removed by a `null`.
    RemovedByNull,
}

/// A contribution's value that did not make it (or was later displaced).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loss {
    pub field: FieldKey,
    pub value: FieldValue,
    pub loser: usize,
    pub winner: usize,
    pub reason: LossReason,
    /// For a shallow fill: the field through which the winner held the
    /// top-level field (its first set field then).
    pub held_via: Option<FieldKey>,
}

/// The accumulated result.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Folded {
    pub fields: BTreeMap<FieldKey, Effective>,
    pub losses: Vec<Loss>,
}

impl Folded {
    /// Folds one contribution in.
    pub fn apply(
        &mut self,
        supplier: usize,
        contribution: &FieldMap,
        op: Op,
        granularity: Granularity,
    ) {
        match (granularity, op) {
            (Granularity::Shallow, Op::Fill) => self.shallow_fill(supplier, contribution),
            (Granularity::Shallow, Op::Replace) => self.shallow_replace(supplier, contribution),
            (_, op) => {
                let deep = granularity == Granularity::Deep;
                for (key, value) in contribution {
                    self.field(supplier, key, value, op, deep);
                }
            }
        }
    }

    fn shallow_fill(&mut self, supplier: usize, contribution: &FieldMap) {
        for group in groups(contribution) {
            let holder = self
                .fields
                .iter()
                .find(|(k, _)| k.group() == group)
                .map(|(k, e)| (k.clone(), first(e)));
            for (key, value) in contribution.iter().filter(|(k, _)| k.group() == group) {
                match &holder {
                    Some((via, winner)) => {
                        self.lose(key, value, supplier, *winner, LossReason::GroupAlreadySet);
                        if let Some(loss) = self.losses.last_mut() {
                            loss.held_via = Some(via.clone());
                        }
                    }
                    None => self.set(key, value, vec![supplier]),
                }
            }
        }
    }

    fn shallow_replace(&mut self, supplier: usize, contribution: &FieldMap) {
        for group in groups(contribution) {
            let displaced: Vec<FieldKey> = self
                .fields
                .keys()
                .filter(|k| k.group() == group)
                .cloned()
                .collect();
            for key in displaced {
                if let Some(old) = self.fields.remove(&key) {
                    let reason = if contribution.contains_key(&key) {
                        LossReason::Replaced
                    } else {
                        LossReason::GroupReplaced
                    };
                    for loser in old.suppliers {
                        self.lose(&key, &old.value, loser, supplier, reason);
                    }
                }
            }
            for (key, value) in contribution.iter().filter(|(k, _)| k.group() == group) {
                self.set(key, value, vec![supplier]);
            }
        }
    }

    fn field(&mut self, supplier: usize, key: &FieldKey, value: &FieldValue, op: Op, deep: bool) {
        let Some(existing) = self.fields.get(key).cloned() else {
            return self.set(key, value, vec![supplier]);
        };
        if deep {
            if let Some(joined) = join(&existing, supplier, value, op) {
                self.fields.insert(key.clone(), joined);
                return;
            }
        }
        match op {
            Op::Fill => self.lose(
                key,
                value,
                supplier,
                first(&existing),
                LossReason::AlreadySet,
            ),
            Op::Replace => {
                for loser in existing.suppliers {
                    self.lose(key, &existing.value, loser, supplier, LossReason::Replaced);
                }
                self.set(key, value, vec![supplier]);
            }
        }
    }

    fn set(&mut self, key: &FieldKey, value: &FieldValue, suppliers: Vec<usize>) {
        self.fields.insert(
            key.clone(),
            Effective {
                value: value.clone(),
                suppliers,
            },
        );
    }

    fn lose(
        &mut self,
        key: &FieldKey,
        value: &FieldValue,
        loser: usize,
        winner: usize,
        reason: LossReason,
    ) {
        self.losses.push(Loss {
            field: key.clone(),
            value: value.clone(),
            loser,
            winner,
            reason,
            held_via: None,
        });
    }
}

fn first(e: &Effective) -> usize {
    e.suppliers.first().copied().unwrap_or_default()
}

fn groups(contribution: &FieldMap) -> BTreeSet<Group> {
    contribution.keys().map(FieldKey::group).collect()
}

/// Deep merge of one field; `None` when the field is not deep-mergeable
/// (scalars and atomic lists follow the field rules).
fn join(existing: &Effective, supplier: usize, value: &FieldValue, op: Op) -> Option<Effective> {
    // The preferred side comes first: the child (accumulated) for fill,
    // the parent (contribution) for replace.
    let (value, suppliers) = match (&existing.value, value) {
        (FieldValue::Text(old), FieldValue::Text(new)) => match op {
            Op::Fill => (
                FieldValue::Text(format!("{old},{new}")),
                with(&existing.suppliers, supplier, false),
            ),
            Op::Replace => (
                FieldValue::Text(format!("{new},{old}")),
                with(&existing.suppliers, supplier, true),
            ),
        },
        (FieldValue::Words(old), FieldValue::Words(new)) => {
            let (a, b, front) = match op {
                Op::Fill => (old, new, false),
                Op::Replace => (new, old, true),
            };
            let mut union = a.clone();
            union.extend(b.iter().filter(|w| !a.contains(w)).cloned());
            (
                FieldValue::Words(union),
                with(&existing.suppliers, supplier, front),
            )
        }
        _ => return None,
    };
    Some(Effective { value, suppliers })
}

fn with(suppliers: &[usize], supplier: usize, front: bool) -> Vec<usize> {
    let mut out = Vec::with_capacity(suppliers.len() + 1);
    if front {
        out.push(supplier);
        out.extend_from_slice(suppliers);
    } else {
        out.extend_from_slice(suppliers);
        out.push(supplier);
    }
    out
}

/// Whether some valid policy opted into a GEP-713 (2025) strategy. Then
/// `resolve` and status fold every level per rule instead of sharing the
/// upper levels (fold/shared.rs): an atomic strategy looks at all four
/// groups at once and at whether a policy or the rule supplied each
/// field, which the shared fold's shapes do not keep.
pub(crate) fn folds_per_rule(inputs: &crate::model::Inputs) -> bool {
    inputs
        .policies
        .iter()
        .any(|p| p.is_valid() && p.strategy.is_some())
}

/// The `Conflicted` rule (docs/status.md): the loser lost a field to a
/// policy at the same level, folding with the same operation, that set a
/// different value. One definition for both the shared and the full fold.
pub(crate) fn is_conflict(
    loser: &Supplier,
    winner: &Supplier,
    maps: &[&FieldMap],
    loss: &Loss,
) -> bool {
    let same_level = winner.level == loser.level && matches!(winner.source, Source::Policy { .. });
    let same_op = winner.role.op() == loser.role.op();
    let differs = maps.get(loss.winner).and_then(|m| m.get(&loss.field)) != Some(&loss.value);
    same_level && same_op && differs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::Direction::Request;

    fn headers(pairs: &[(&str, &str)]) -> FieldMap {
        pairs
            .iter()
            .map(|(n, v)| {
                (
                    FieldKey::HeaderSet(Request, n.to_string()),
                    FieldValue::Text(v.to_string()),
                )
            })
            .collect()
    }

    fn text(f: &Folded, name: &str) -> Option<String> {
        match f
            .fields
            .get(&FieldKey::HeaderSet(Request, name.into()))
            .map(|e| &e.value)
        {
            Some(FieldValue::Text(t)) => Some(t.clone()),
            _ => None,
        }
    }

    /// Seed 004, deep: every route DeepMergePreferParent.
    #[test]
    fn deep_merge_prefer_parent_joins_parent_first() {
        let mut f = Folded::default();
        f.apply(
            0,
            &headers(&[
                ("x-season", "spring"),
                ("x-holiday", "easter"),
                ("x-discount", "10%"),
            ]),
            Op::Fill,
            Granularity::Field,
        );
        f.apply(
            1,
            &headers(&[("x-season", "winter"), ("x-holiday", "christmas")]),
            Op::Replace,
            Granularity::Deep,
        );
        f.apply(
            2,
            &headers(&[("x-season", "summer")]),
            Op::Replace,
            Granularity::Deep,
        );
        assert_eq!(
            text(&f, "x-season").as_deref(),
            Some("summer,winter,spring")
        );
        assert_eq!(text(&f, "x-holiday").as_deref(), Some("christmas,easter"));
        assert_eq!(text(&f, "x-discount").as_deref(), Some("10%"));
        assert_eq!(
            f.fields[&FieldKey::HeaderSet(Request, "x-season".into())].suppliers,
            vec![2, 1, 0]
        );
        assert!(f.losses.is_empty());
    }

    /// Seed 004, shallow: ShallowMergePreferChild drops the parent's whole modifier.
    #[test]
    fn shallow_prefer_child_keeps_the_child_modifier_whole() {
        let mut f = Folded::default();
        f.apply(
            0,
            &headers(&[("x-season", "winter"), ("x-holiday", "christmas")]),
            Op::Fill,
            Granularity::Field,
        );
        f.apply(
            1,
            &headers(&[("x-season", "summer"), ("x-parent-only", "1")]),
            Op::Fill,
            Granularity::Shallow,
        );
        assert_eq!(text(&f, "x-season").as_deref(), Some("winter"));
        assert_eq!(text(&f, "x-holiday").as_deref(), Some("christmas"));
        assert_eq!(
            text(&f, "x-parent-only"),
            None,
            "shallow: the parent's modifier is atomic"
        );
        assert_eq!(f.losses.len(), 2);
        assert!(f
            .losses
            .iter()
            .all(|l| l.loser == 1 && l.winner == 0 && l.reason == LossReason::GroupAlreadySet));
    }

    #[test]
    fn field_fill_merges_header_entries_by_name() {
        let mut f = Folded::default();
        f.apply(
            0,
            &headers(&[("x-season", "winter")]),
            Op::Fill,
            Granularity::Field,
        );
        f.apply(
            1,
            &headers(&[("x-season", "summer"), ("x-parent-only", "1")]),
            Op::Fill,
            Granularity::Field,
        );
        assert_eq!(text(&f, "x-season").as_deref(), Some("winter"));
        assert_eq!(text(&f, "x-parent-only").as_deref(), Some("1"));
    }

    #[test]
    fn shallow_replace_drops_fields_the_parent_does_not_set() {
        let mut f = Folded::default();
        let child: FieldMap = [
            (FieldKey::RequestTimeout, FieldValue::Millis(1)),
            (FieldKey::BackendRequestTimeout, FieldValue::Millis(2)),
        ]
        .into();
        let parent: FieldMap = [(FieldKey::RequestTimeout, FieldValue::Millis(9))].into();
        f.apply(0, &child, Op::Fill, Granularity::Field);
        f.apply(1, &parent, Op::Replace, Granularity::Shallow);
        assert_eq!(
            f.fields[&FieldKey::RequestTimeout].value,
            FieldValue::Millis(9)
        );
        assert!(!f.fields.contains_key(&FieldKey::BackendRequestTimeout));
        let reasons: Vec<LossReason> = f.losses.iter().map(|l| l.reason).collect();
        assert_eq!(reasons, [LossReason::Replaced, LossReason::GroupReplaced]);
    }

    #[test]
    fn deep_unions_remove_lists_preferred_first() {
        let mut f = Folded::default();
        let rm = |names: &[&str]| -> FieldMap {
            [(
                FieldKey::HeaderRemove(Request),
                FieldValue::Words(names.iter().map(|s| s.to_string()).collect()),
            )]
            .into()
        };
        f.apply(0, &rm(&["a", "b"]), Op::Fill, Granularity::Field);
        f.apply(1, &rm(&["c", "a"]), Op::Replace, Granularity::Deep);
        assert_eq!(
            f.fields[&FieldKey::HeaderRemove(Request)].value,
            FieldValue::Words(vec!["c".into(), "a".into(), "b".into()])
        );
    }
}
