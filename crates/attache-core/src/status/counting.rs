//! What each policy did, counted for its status: per (policy, target), the
//! entries it reached, the fields it set and lost, who won them, and whether
//! it lost on precedence alone (`crate::fold::is_conflict`, the one definition
//! of the Conflicted rule, docs/status.md). The listener-and-up levels are counted
//! once per listener through the shared fold, so status stays linear.

use std::collections::{BTreeMap, BTreeSet};

use crate::diagnostic::Diagnostic;
use crate::error::ResolveError;
use crate::field::{FieldKey, FieldMap};
use crate::fold::levels::RuleFold;
use crate::fold::peer_gate::Replaced;
use crate::fold::shared::SharedUpper;
use crate::fold::{is_conflict, Folded, Loss};
use crate::gateway_pass::{clamp, clamp_warning, fold_full, prepare};
use crate::model::levels::upper_targets;
use crate::model::peers::PEERS;
use crate::model::Inputs;
use crate::model::Target;
use crate::steering::{refusal_warning, Refusal, Steering};
use crate::supplier::{Source, Supplier};
use crate::topology::ObjectKey;

/// What one policy, through one target, did across the entries it reached.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ContributionStats {
    /// Route entries the policy reached through this target.
    pub entries: usize,
    /// Fields it set, summed over entries.
    pub fields_set: usize,
    /// Fields that did not end up in the result, summed over entries.
    pub fields_lost: usize,
    /// Who holds the fields it lost.
    pub winners: BTreeSet<String>,
    /// Policies at the same level and with the same operation that beat it
    /// on precedence with a different value.
    pub conflicts_with: BTreeSet<String>,
    /// Request-header changes refused because a rule's header match tests
    /// the header (crate::steering), counted per route rule.
    pub refused_changes: usize,
    /// What the first [`MAX_REFUSALS_NAMED`] refusals say.
    pub refused: BTreeSet<String>,
}

impl ContributionStats {
    /// Adds `other`'s counts to these (one Gateway's share of the status
    /// fold into the whole). Destructured: a new count does not compile
    /// until it is added here.
    pub fn absorb(&mut self, other: &ContributionStats) {
        let ContributionStats {
            entries,
            fields_set,
            fields_lost,
            winners,
            conflicts_with,
            refused_changes,
            refused,
        } = other;
        self.entries += entries;
        self.fields_set += fields_set;
        self.fields_lost += fields_lost;
        self.winners.extend(winners.iter().cloned());
        self.conflicts_with.extend(conflicts_with.iter().cloned());
        self.refused_changes += refused_changes;
        let room = MAX_REFUSALS_NAMED.saturating_sub(self.refused.len());
        self.refused.extend(refused.iter().take(room).cloned());
    }
}

/// At most this many refusals are named in one policy's status at one
/// target; the count says how many there were.
pub const MAX_REFUSALS_NAMED: usize = 3;

/// Per (index into `Inputs::policies`, target).
pub type StatsByTarget = BTreeMap<(usize, Target), ContributionStats>;

/// Per (policy index, target): what it did on this Gateway; plus the
/// Gateway's diagnostics. Like `resolve`, the listener-and-up levels are
/// folded once per shape (`shared`), so status stays linear too; the
/// lower levels are counted per rule.
pub(crate) fn contributions(
    inputs: &Inputs,
    gateway: &ObjectKey,
) -> Result<(StatsByTarget, Vec<Diagnostic>), ResolveError> {
    if crate::fold::folds_per_rule(inputs) {
        return contributions_per_rule(inputs, gateway);
    }
    let mut prepared = prepare(inputs, gateway)?;
    let steering = Steering::new(&prepared.attachments);
    let gw = prepared.gateway;
    let mut stats = StatsByTarget::new();
    let mut shared = SharedUpper::new(inputs, gw).counting();
    let mut rules_on: BTreeMap<String, usize> = BTreeMap::new();
    for att in &prepared.attachments {
        *rules_on.entry(att.listener.key()).or_default() += 1;
        let mut lower = RuleFold::new(inputs);
        lower.lower(att);
        let (mut merged, suppliers) = shared.complete(
            att.listener,
            &lower.folded,
            &lower.gate,
            lower.suppliers.clone(),
        );
        if let Some(note) = clamp(&mut merged) {
            prepared
                .diagnostics
                .push(clamp_warning(&note, att, &att.entry_name()));
        }
        record_lower_stats(
            &lower,
            &merged,
            &suppliers,
            |field| shared.removed_by(att.listener, &lower.folded, &lower.gate, field),
            &mut stats,
        );
        record_replaced(inputs, gw, att.listener, &lower, &mut stats);
        let refusals = steering.refuse(att, &mut merged, &suppliers);
        record_refusals(
            inputs,
            att,
            &refusals,
            &suppliers,
            &mut stats,
            &mut prepared.diagnostics,
        );
    }
    // Every rule on a listener reaches every policy of its upper levels.
    for listener in &gw.listeners {
        let rules = rules_on.get(&listener.key()).copied().unwrap_or(0);
        if rules == 0 {
            continue;
        }
        for target in upper_targets(gw, listener) {
            for &index in inputs
                .by_target
                .get(&target)
                .map(Vec::as_slice)
                .unwrap_or_default()
            {
                let Some(p) = inputs.policies.get(index) else {
                    continue;
                };
                let set: usize = [&p.defaults, &p.overrides, &p.plain]
                    .iter()
                    .filter_map(|m| m.as_ref())
                    .map(|m| m.len())
                    .sum();
                if set == 0 {
                    continue;
                }
                let s = stats.entry((index, target.clone())).or_default();
                s.entries += rules;
                s.fields_set += rules * set;
            }
        }
    }
    for (key, (lost, winners, conflicts)) in shared.totals() {
        let s = stats.entry(key).or_default();
        s.fields_lost += lost;
        s.winners.extend(winners);
        s.conflicts_with.extend(conflicts);
    }
    Ok((stats, prepared.diagnostics))
}

/// BackendTrafficPolicies that Envoy Gateway's precedence kept out of one
/// rule (fold/peer_gate.rs) lose every field they set there to the policy
/// that replaced them. The lower fold knows its own; the listener and
/// Gateway levels (the only upper ones a BackendTrafficPolicy can target)
/// are walked here in the fold's order. The upper counting below already
/// counts their entries and fields.
fn record_replaced(
    inputs: &Inputs,
    gw: &crate::model::Gateway,
    listener: &crate::model::Listener,
    lower: &RuleFold<'_>,
    stats: &mut StatsByTarget,
) {
    let mut gate = lower.gate.clone();
    let mut replaced = lower.replaced.clone();
    // The upper levels a kind that replaces whole may target.
    let gated = |target: &Target| {
        PEERS
            .iter()
            .any(|p| p.replaces_whole && p.kind.info().targets.contains(&target.kind()))
    };
    for target in upper_targets(gw, listener).filter(gated) {
        if let Some(ranked) = inputs.by_target.get(&target) {
            gate.step(inputs, &target, ranked, &mut replaced);
        }
    }
    count_replaced(inputs, replaced, true, stats);
}

/// Each replaced policy loses every field it sets on this rule.
/// `upper_reached`: the listener and Gateway levels' entries and fields
/// are counted elsewhere (the shared fold's per-listener count).
fn count_replaced(
    inputs: &Inputs,
    replaced: Vec<Replaced>,
    upper_reached: bool,
    stats: &mut StatsByTarget,
) {
    for r in replaced {
        let Some(p) = inputs.policies.get(r.index) else {
            continue;
        };
        let set = p.plain.as_ref().map_or(0, FieldMap::len);
        if set == 0 {
            continue;
        }
        let upper = matches!(r.target, Target::Gateway(..) | Target::ListenerSet(..));
        let s = stats.entry((r.index, r.target)).or_default();
        if !(upper && upper_reached) {
            s.entries += 1;
            s.fields_set += set;
        }
        s.fields_lost += set;
        s.winners.insert(format!(
            "{} (Envoy Gateway precedence: it replaces it whole)",
            r.by
        ));
    }
}

/// Stats of the lower-level suppliers of one rule: what they lost inside
/// the lower fold, and what the upper levels then took from them.
fn record_lower_stats(
    lower: &RuleFold<'_>,
    merged: &Folded,
    suppliers: &[Supplier],
    removed_by: impl Fn(&FieldKey) -> Option<String>,
    stats: &mut StatsByTarget,
) {
    let label = |i: usize| suppliers.get(i).map(Supplier::to_string);
    let mut touched: BTreeSet<(usize, Target)> = BTreeSet::new();
    for (id, supplier) in lower.suppliers.iter().enumerate() {
        let set = lower.maps.get(id).map_or(0, |m| m.len());
        let Some(s) = policy_stats(supplier, set, stats, &mut touched) else {
            continue;
        };
        let mut lost = BTreeSet::new();
        let holders = |field: &FieldKey| merged.fields.get(field).map(|e| e.suppliers.clone());
        for loss in lower.folded.losses.iter().filter(|l| l.loser == id) {
            lost.insert(loss.field.clone());
            match holders(&loss.field) {
                Some(ids) => s.winners.extend(ids.into_iter().filter_map(label)),
                None => s.winners.extend(label(loss.winner)),
            }
            let Some(winner) = lower.suppliers.get(loss.winner) else {
                continue;
            };
            if is_conflict(supplier, winner, &lower.maps, loss) {
                s.conflicts_with.insert(winner.who());
            }
        }
        for (field, e) in &lower.folded.fields {
            if !e.suppliers.contains(&id) {
                continue;
            }
            match holders(field) {
                Some(ids) if ids.contains(&id) => {}
                Some(ids) => {
                    lost.insert(field.clone());
                    s.winners.extend(ids.into_iter().filter_map(label));
                }
                None => {
                    lost.insert(field.clone());
                    s.winners.extend(removed_by(field));
                }
            }
        }
        s.fields_lost += lost.len();
    }
}

/// Each policy whose request-header change was refused on this rule
/// (crate::steering): one more refused change, and the field lost when
/// the whole field went. Counted after the fold's own losses, which never
/// include a field the policy still held.
fn record_refusals(
    inputs: &Inputs,
    att: &crate::attach::Attachment<'_>,
    refusals: &[Refusal],
    suppliers: &[Supplier],
    stats: &mut StatsByTarget,
    diagnostics: &mut Vec<Diagnostic>,
) {
    for refusal in refusals {
        diagnostics.extend(refusal_warning(
            inputs,
            refusal,
            suppliers,
            &att.entry_name(),
        ));
        for &i in &refusal.policies {
            let Some(Source::Policy { index, target, .. }) = suppliers.get(i).map(|s| &s.source)
            else {
                continue;
            };
            let s = stats.entry((*index, target.clone())).or_default();
            s.refused_changes += 1;
            if refusal.whole_field {
                s.fields_lost += 1;
            }
            if s.refused.len() < MAX_REFUSALS_NAMED {
                s.refused.insert(refusal.describe());
            }
        }
    }
}

/// Folds every level per rule: the reference `contributions` must agree
/// with (tests only).
#[doc(hidden)]
pub fn contributions_full(
    inputs: &Inputs,
    gateway: &ObjectKey,
) -> Result<StatsByTarget, ResolveError> {
    contributions_per_rule(inputs, gateway).map(|(stats, _)| stats)
}

/// `contributions` folding every level per rule: the reference, and the
/// path taken when a policy opted into a GEP-713 strategy
/// (`fold::folds_per_rule`).
fn contributions_per_rule(
    inputs: &Inputs,
    gateway: &ObjectKey,
) -> Result<(StatsByTarget, Vec<Diagnostic>), ResolveError> {
    let mut prepared = prepare(inputs, gateway)?;
    let steering = Steering::new(&prepared.attachments);
    let mut stats = BTreeMap::new();
    for att in &prepared.attachments {
        let mut fold = fold_full(inputs, prepared.gateway, att);
        if let Some(note) = clamp(&mut fold.folded) {
            prepared
                .diagnostics
                .push(clamp_warning(&note, att, &att.entry_name()));
        }
        record_stats(&fold.folded, &fold.suppliers, &fold.maps, &mut stats);
        let refusals = steering.refuse(att, &mut fold.folded, &fold.suppliers);
        record_refusals(
            inputs,
            att,
            &refusals,
            &fold.suppliers,
            &mut stats,
            &mut prepared.diagnostics,
        );
        count_replaced(
            inputs,
            std::mem::take(&mut fold.replaced),
            false,
            &mut stats,
        );
    }
    Ok((stats, prepared.diagnostics))
}

/// The shared-fold `contributions` (tests only).
#[doc(hidden)]
pub fn contributions_shared(
    inputs: &Inputs,
    gateway: &ObjectKey,
) -> Result<StatsByTarget, ResolveError> {
    contributions(inputs, gateway).map(|(stats, _)| stats)
}

/// The stats of a policy supplier (None for a rule's own values): one more
/// entry the first time the (policy, target) is seen for this rule, and the
/// `set` fields it supplied.
fn policy_stats<'s>(
    supplier: &Supplier,
    set: usize,
    stats: &'s mut StatsByTarget,
    touched: &mut BTreeSet<(usize, Target)>,
) -> Option<&'s mut ContributionStats> {
    let Source::Policy { index, target, .. } = &supplier.source else {
        return None;
    };
    let key = (*index, target.clone());
    let s = stats.entry(key.clone()).or_default();
    if touched.insert(key) {
        s.entries += 1;
    }
    s.fields_set += set;
    Some(s)
}

fn record_stats(
    folded: &Folded,
    suppliers: &[Supplier],
    maps: &[&FieldMap],
    stats: &mut StatsByTarget,
) {
    // Losses by loser, and supplier labels made once: both are per rule
    // and would otherwise cost suppliers x losses.
    let mut losses_of: Vec<Vec<&Loss>> = vec![Vec::new(); suppliers.len()];
    for loss in &folded.losses {
        if let Some(list) = losses_of.get_mut(loss.loser) {
            list.push(loss);
        }
    }
    let mut labels: Vec<Option<String>> = vec![None; suppliers.len()];
    let mut label = |i: usize| -> Option<String> {
        let slot = labels.get_mut(i)?;
        if slot.is_none() {
            *slot = suppliers.get(i).map(Supplier::to_string);
        }
        slot.clone()
    };
    let mut touched: BTreeSet<(usize, Target)> = BTreeSet::new();
    for (id, supplier) in suppliers.iter().enumerate() {
        let set = maps.get(id).map_or(0, |m| m.len());
        let Some(s) = policy_stats(supplier, set, stats, &mut touched) else {
            continue;
        };
        let mut lost = BTreeSet::new();
        for loss in losses_of.get(id).map(Vec::as_slice).unwrap_or_default() {
            lost.insert(&loss.field);
            let Some(winner) = suppliers.get(loss.winner) else {
                continue;
            };
            // Status names who holds the field in the end; the loss itself
            // may have been to an intermediate holder.
            let holders: Vec<usize> = match folded.fields.get(&loss.field) {
                Some(e) => e.suppliers.clone(),
                None => vec![loss.winner],
            };
            for holder in holders {
                if let Some(name) = label(holder) {
                    if !s.winners.contains(&name) {
                        s.winners.insert(name);
                    }
                }
            }
            if is_conflict(supplier, winner, maps, loss) {
                s.conflicts_with.insert(winner.who());
            }
        }
        s.fields_lost += lost.len();
    }
}
