//! The fold step of a policy that opted into a GEP-713 (2025) strategy
//! (docs/semantics.md, "Merge strategies"). P is the policy folded in, A
//! what the policies folded before it supplied: the fields every supplier
//! of which is a policy. The rule's own values are never in an atomic unit
//! or a patch; P meets them field by field, a defaults value filling, an
//! overrides value replacing.
//!
//! - AtomicDefaults: P's settings whole if A is empty, else nothing.
//! - AtomicOverrides: A is dropped; P's settings stand whole.
//! - PatchDefaults: RFC 7386, target P, patch A: A wins per scalar; a
//!   header list A holds is A's whole.
//! - PatchOverrides: target A, patch P: P wins per scalar, a list P sets is
//!   P's whole, a `null` in P removes that field from A.
//! - Custom: the seeds' fold (`Folded::apply`), called by the caller.

use crate::field::{FieldKey, FieldMap, Removal};
use crate::fold::{Folded, LossReason, Op};
use crate::model::MergeStrategy;

/// Whether the supplier with this id, holding this field, is a policy (not
/// a rule's own value).
pub(crate) type ByPolicy<'a> = &'a dyn Fn(&FieldKey, usize) -> bool;

impl Folded {
    /// Folds an opted-in policy's settings with its strategy; `Custom` is
    /// the seeds' step.
    pub(crate) fn apply_strategy(
        &mut self,
        supplier: usize,
        contribution: &FieldMap,
        strategy: MergeStrategy,
        removals: &[Removal],
        by_policy: ByPolicy<'_>,
    ) {
        match strategy {
            MergeStrategy::Custom(p) => self.apply(supplier, contribution, p.op(), p.granularity()),
            MergeStrategy::AtomicDefaults => {
                self.atomic_defaults(supplier, contribution, by_policy)
            }
            MergeStrategy::AtomicOverrides => {
                self.drop_policies(supplier, by_policy, LossReason::AtomicReplaced, |_| true);
                self.leaves(supplier, contribution, Op::Replace);
            }
            MergeStrategy::PatchDefaults => self.patch_defaults(supplier, contribution, by_policy),
            MergeStrategy::PatchOverrides => {
                self.drop_policies(supplier, by_policy, LossReason::RemovedByNull, |k| {
                    removals.iter().any(|r| r.covers(k))
                });
                let lists: Vec<_> = contribution
                    .keys()
                    .filter_map(FieldKey::header_list)
                    .collect();
                self.drop_policies(supplier, by_policy, LossReason::ListReplaced, |k| {
                    !contribution.contains_key(k)
                        && k.header_list().is_some_and(|l| lists.contains(&l))
                });
                self.leaves(supplier, contribution, Op::Replace);
            }
        }
    }

    /// The fields of A (every supplier a policy).
    fn held_by_policies(&self, by_policy: ByPolicy<'_>) -> Vec<FieldKey> {
        self.fields
            .iter()
            .filter(|(k, e)| {
                !e.suppliers.is_empty() && e.suppliers.iter().all(|s| by_policy(k, *s))
            })
            .map(|(k, _)| k.clone())
            .collect()
    }

    fn atomic_defaults(
        &mut self,
        supplier: usize,
        contribution: &FieldMap,
        by_policy: ByPolicy<'_>,
    ) {
        let held = self.held_by_policies(by_policy);
        let holder = held.first().and_then(|k| {
            let winner = self.fields.get(k)?.suppliers.first().copied()?;
            Some((k.clone(), winner))
        });
        match holder {
            None => self.leaves(supplier, contribution, Op::Fill),
            Some((via, winner)) => {
                for (key, value) in contribution {
                    self.lose(key, value, supplier, winner, LossReason::AtomicDropped);
                    self.held_via(&via);
                }
            }
        }
    }

    fn patch_defaults(
        &mut self,
        supplier: usize,
        contribution: &FieldMap,
        by_policy: ByPolicy<'_>,
    ) {
        let held = self.held_by_policies(by_policy);
        for (key, value) in contribution {
            let list_holder = key.header_list().and_then(|list| {
                let via = held.iter().find(|k| k.header_list() == Some(list))?;
                let winner = self.fields.get(via)?.suppliers.first().copied()?;
                Some((via.clone(), winner))
            });
            match (self.fields.contains_key(key), list_holder) {
                (false, Some((via, winner))) => {
                    self.lose(key, value, supplier, winner, LossReason::ListReplaced);
                    self.held_via(&via);
                }
                _ => self.field(supplier, key, value, Op::Fill, false),
            }
        }
    }

    /// Removes the fields of A that `which` selects, each supplier losing
    /// it to `supplier` for `reason`.
    fn drop_policies(
        &mut self,
        supplier: usize,
        by_policy: ByPolicy<'_>,
        reason: LossReason,
        which: impl Fn(&FieldKey) -> bool,
    ) {
        for key in self.held_by_policies(by_policy) {
            if !which(&key) {
                continue;
            }
            if let Some(old) = self.fields.remove(&key) {
                self.restore_own(&key, by_policy);
                for loser in old.suppliers {
                    self.lose(&key, &old.value, loser, supplier, reason);
                }
            }
        }
    }

    /// A rule's own value that a policy had replaced comes back when that
    /// policy's value is dropped: the rule's own values are never part of
    /// an atomic unit or a patch (the latest one replaced, and its loss
    /// is no longer one).
    fn restore_own(&mut self, key: &FieldKey, by_policy: ByPolicy<'_>) {
        let replaced = |l: &crate::fold::Loss| {
            l.field == *key
                && !by_policy(key, l.loser)
                && matches!(l.reason, LossReason::Replaced | LossReason::GroupReplaced)
        };
        let Some(at) = self.losses.iter().rposition(replaced) else {
            return;
        };
        let loss = self.losses.remove(at);
        self.set(key, &loss.value, vec![loss.loser]);
    }

    /// The field through which the winner of the last loss held what the
    /// loser wanted (status names the lower holder through it).
    fn held_via(&mut self, via: &FieldKey) {
        if let Some(loss) = self.losses.last_mut() {
            loss.held_via = Some(via.clone());
        }
    }

    fn leaves(&mut self, supplier: usize, contribution: &FieldMap, op: Op) {
        for (key, value) in contribution {
            self.field(supplier, key, value, op, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::{Direction::Request, FieldValue, Group};
    use crate::fold::Granularity;

    /// Supplier 0 is the rule's own value; every other is a policy.
    fn policy(_: &FieldKey, s: usize) -> bool {
        s != 0
    }

    fn map(pairs: &[(FieldKey, u64)]) -> FieldMap {
        pairs
            .iter()
            .map(|(k, v)| (k.clone(), FieldValue::Millis(*v)))
            .collect()
    }

    fn set(name: &str, value: &str) -> (FieldKey, FieldValue) {
        (
            FieldKey::HeaderSet(Request, name.into()),
            FieldValue::Text(value.into()),
        )
    }

    #[test]
    fn atomic_defaults_contributes_only_over_nothing_from_policies() {
        let mut f = Folded::default();
        let own = map(&[(FieldKey::RequestTimeout, 1)]);
        f.apply(0, &own, Op::Fill, Granularity::Field);
        let p = map(&[
            (FieldKey::RequestTimeout, 5),
            (FieldKey::BackendRequestTimeout, 2),
        ]);
        f.apply_strategy(1, &p, MergeStrategy::AtomicDefaults, &[], &policy);
        // The rule's own value is not A: P fills around it.
        assert_eq!(f.fields[&FieldKey::RequestTimeout].suppliers, [0]);
        assert_eq!(f.fields[&FieldKey::BackendRequestTimeout].suppliers, [1]);
        let q = map(&[(FieldKey::RetryBackoff, 7)]);
        f.apply_strategy(2, &q, MergeStrategy::AtomicDefaults, &[], &policy);
        assert!(!f.fields.contains_key(&FieldKey::RetryBackoff));
        assert_eq!(
            f.losses.last().map(|l| l.reason),
            Some(LossReason::AtomicDropped)
        );
    }

    #[test]
    fn atomic_overrides_drops_what_policies_supplied_not_the_rules_own() {
        let mut f = Folded::default();
        f.apply(
            0,
            &map(&[(FieldKey::RequestTimeout, 1)]),
            Op::Fill,
            Granularity::Field,
        );
        f.apply(
            1,
            &map(&[(FieldKey::RetryBackoff, 3)]),
            Op::Fill,
            Granularity::Field,
        );
        let p = map(&[(FieldKey::BackendRequestTimeout, 2)]);
        f.apply_strategy(2, &p, MergeStrategy::AtomicOverrides, &[], &policy);
        assert!(f.fields.contains_key(&FieldKey::RequestTimeout));
        assert!(!f.fields.contains_key(&FieldKey::RetryBackoff));
        assert_eq!(f.fields[&FieldKey::BackendRequestTimeout].suppliers, [2]);
    }

    #[test]
    fn patch_replaces_header_lists_whole_and_null_removes_from_policies_only() {
        let mut f = Folded::default();
        let own: FieldMap = [set("x-own", "1")].into();
        f.apply(0, &own, Op::Fill, Granularity::Field);
        let lower: FieldMap = [
            set("x-a", "1"),
            (FieldKey::RetryBackoff, FieldValue::Millis(3)),
        ]
        .into();
        f.apply(1, &lower, Op::Fill, Granularity::Field);
        let defaults: FieldMap = [set("x-b", "2")].into();
        f.apply_strategy(2, &defaults, MergeStrategy::PatchDefaults, &[], &policy);
        assert!(!f
            .fields
            .contains_key(&FieldKey::HeaderSet(Request, "x-b".into())));
        assert_eq!(
            f.losses.last().map(|l| l.reason),
            Some(LossReason::ListReplaced)
        );
        let overrides: FieldMap = [set("x-c", "3")].into();
        let removals = [Removal::Group(Group::Retry)];
        f.apply_strategy(
            3,
            &overrides,
            MergeStrategy::PatchOverrides,
            &removals,
            &policy,
        );
        let names: Vec<String> = f.fields.keys().map(ToString::to_string).collect();
        assert_eq!(
            names,
            ["requestHeaders.set.x-c", "requestHeaders.set.x-own"]
        );
    }
}
