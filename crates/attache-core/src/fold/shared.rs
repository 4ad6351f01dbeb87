//! The upper levels (listener, Gateway, Namespace, GatewayClass) are the
//! same for every rule on a listener, so they are folded once per listener
//! and per *shape* of what the lower levels left set, not once per rule.
//! That keeps `resolve` linear in routes + policies even when hundreds of
//! policies sit on the Gateway.
//!
//! Why the shape is enough: fill and replace look only at whether a field
//! (or, for shallow merges, any field of its group) is set, never at its
//! value, except deep merges, which concatenate. So the lower result is
//! stood in for by placeholders (a sentinel text / word, supplier 0), the
//! upper levels fold over that once, and each rule substitutes its real
//! values and suppliers back in. A proptest checks this equals folding
//! every level per rule.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::field::{Direction, FieldKey, FieldValue, Group};
use crate::fold::levels::RuleFold;
use crate::fold::peer_gate::Gate;
use crate::fold::{is_conflict, Effective, Folded};
use crate::model::Inputs;
use crate::model::{Gateway, Listener, Target};
use crate::supplier::{Source, Supplier};
use crate::topology::ObjectKey;

const GROUPS: [Group; 4] = [
    Group::Timeouts,
    Group::Retry,
    Group::Headers(Direction::Request),
    Group::Headers(Direction::Response),
];

static NO_SETTINGS: crate::field::FieldMap = crate::field::FieldMap::new();

/// Cannot occur in a validated header value (CR, LF and NUL are rejected).
const SENTINEL: &str = "\0lower\0";

/// The upper fold over one shape: placeholder supplier 0 is "whatever the
/// lower levels set".
struct Upper {
    fields: Vec<(FieldKey, Effective)>,
    suppliers: Vec<Supplier>,
    /// Lower fields a shallow replace removed, and by whom.
    removed_by: BTreeMap<FieldKey, usize>,
    /// Only when counting (status): what each upper supplier did here.
    stats: Vec<UpperStats>,
    /// How many rules used this fold.
    uses: usize,
    /// Labels of the lower suppliers that, on the rules using this fold,
    /// held fields upper suppliers lost (by field; `First` only the first).
    lower_holders: BTreeMap<(FieldKey, LowerWinner), BTreeSet<String>>,
}

/// Who took a field an upper supplier lost, when that is on the lower side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum LowerWinner {
    /// Whoever holds the field in the end (lower suppliers among them).
    Holders,
    /// The lower value kept it out, then a shallow replace removed it: the
    /// loss names the lower field's first supplier.
    First,
}

/// One upper supplier's losses in one memoised fold.
struct UpperStats {
    key: (usize, Target),
    lost: usize,
    upper_winners: BTreeSet<String>,
    lower_winners: Vec<(FieldKey, LowerWinner)>,
    conflicts: BTreeSet<String>,
}

/// Per (policy, target): fields lost, winners and conflicts, summed over the
/// rules that used each memoised fold.
pub(crate) type UpperTotals =
    BTreeMap<(usize, Target), (usize, BTreeSet<String>, BTreeSet<String>)>;

/// Listener, group, the fields the lower levels left set in it, and where
/// Envoy Gateway's precedence stands (fold/peer_gate.rs).
type MemoKey = (String, Group, Vec<FieldKey>, Gate);

/// Memo of upper folds, keyed by listener and the set of fields the lower
/// levels left set.
pub(crate) struct SharedUpper<'a> {
    inputs: &'a Inputs,
    gateway: &'a Gateway,
    memo: HashMap<MemoKey, Upper>,
    /// Keep what status needs (losses per upper supplier).
    counting: bool,
}

impl<'a> SharedUpper<'a> {
    pub fn new(inputs: &'a Inputs, gateway: &'a Gateway) -> Self {
        SharedUpper {
            inputs,
            gateway,
            memo: HashMap::new(),
            counting: false,
        }
    }

    /// Also keep per-supplier losses, for status.
    pub fn counting(mut self) -> Self {
        self.counting = true;
        self
    }

    /// Completes a lower fold with the upper levels of `listener`: the same
    /// fields and suppliers as folding every level in one go (losses are
    /// not kept; `explain` folds in full when it needs them).
    pub fn complete(
        &mut self,
        listener: &Listener,
        lower: &Folded,
        gate: &Gate,
        mut suppliers: Vec<Supplier>,
    ) -> (Folded, Vec<Supplier>) {
        let lower_len = suppliers.len();
        let mut out = Folded::default();
        // Top-level fields fold independently (shallow merges act on one
        // group, field and deep merges on one key), so each group is
        // memoised on its own shape: far fewer shapes, and each upper fold
        // only sees the contributions that touch the group.
        for group in GROUPS {
            let shape: Vec<FieldKey> = lower
                .fields
                .keys()
                .filter(|k| k.group() == group)
                .cloned()
                .collect();
            let key = (listener.key(), group, shape, gate.clone());
            if !self.memo.contains_key(&key) {
                let upper = self.fold_upper(listener, group, &key.2, gate);
                self.memo.insert(key.clone(), upper);
            }
            let counting = self.counting;
            let Some(upper) = self.memo.get_mut(&key) else {
                continue;
            };
            merge_group(upper, lower, &mut suppliers, &mut out);
            if counting {
                record_lower_holders(upper, lower, lower_len, &out, &suppliers);
            }
        }
        (out, suppliers)
    }

    /// Who removed a lower field the upper levels dropped whole (shallow
    /// replace), as a label; for status.
    pub fn removed_by(
        &self,
        listener: &Listener,
        lower: &Folded,
        gate: &Gate,
        field: &FieldKey,
    ) -> Option<String> {
        let shape: Vec<FieldKey> = lower
            .fields
            .keys()
            .filter(|k| k.group() == field.group())
            .cloned()
            .collect();
        let upper = self
            .memo
            .get(&(listener.key(), field.group(), shape, gate.clone()))?;
        let u = upper.removed_by.get(field)?;
        upper.suppliers.get(*u).map(Supplier::to_string)
    }

    /// Lost fields, winners and conflicts of every upper supplier, summed
    /// over the rules that used each fold.
    pub fn totals(self) -> UpperTotals {
        let mut totals = UpperTotals::new();
        for upper in self.memo.into_values() {
            for s in upper.stats {
                let t = totals.entry(s.key).or_default();
                t.0 += upper.uses * s.lost;
                if upper.uses == 0 {
                    continue;
                }
                t.1.extend(s.upper_winners);
                for key in &s.lower_winners {
                    if let Some(names) = upper.lower_holders.get(key) {
                        t.1.extend(names.iter().cloned());
                    }
                }
                t.2.extend(s.conflicts);
            }
        }
        totals
    }

    fn fold_upper(
        &self,
        listener: &Listener,
        group: Group,
        shape: &[FieldKey],
        gate: &Gate,
    ) -> Upper {
        let mut fold = RuleFold::new(self.inputs);
        fold.only = Some(group);
        fold.gate = gate.clone();
        fold.suppliers.push(Supplier {
            source: Source::Inline {
                kind: crate::model::kinds::RouteKind::Http,
                route: ObjectKey {
                    namespace: String::new(),
                    name: String::new(),
                },
                rule: String::new(),
            },
            role: crate::supplier::Role::Defaults,
            level: String::new(),
            leaf: true,
        });
        // Keeps `maps` parallel to `suppliers`.
        fold.maps.push(&NO_SETTINGS);
        for field in shape {
            let placeholder = match field {
                FieldKey::HeaderRemove(_) => FieldValue::Words(vec![SENTINEL.to_string()]),
                _ => FieldValue::Text(SENTINEL.to_string()),
            };
            fold.folded.fields.insert(
                field.clone(),
                Effective {
                    value: placeholder,
                    suppliers: vec![0],
                },
            );
        }
        fold.upper(self.gateway, listener);
        let mut removed_by = BTreeMap::new();
        for loss in fold.folded.losses.iter().filter(|l| l.loser == 0) {
            if !fold.folded.fields.contains_key(&loss.field) {
                removed_by.insert(loss.field.clone(), loss.winner);
            }
        }
        let stats = if self.counting {
            upper_stats(&fold)
        } else {
            Vec::new()
        };
        Upper {
            fields: fold.folded.fields.into_iter().collect(),
            suppliers: fold.suppliers,
            removed_by,
            stats,
            uses: 0,
            lower_holders: BTreeMap::new(),
        }
    }
}

/// Puts one memoised upper fold on top of a rule's lower fold. Only the
/// upper suppliers that hold a field are copied: copying all of them per
/// rule would make resolve O(rules x policies).
fn merge_group(upper: &Upper, lower: &Folded, suppliers: &mut Vec<Supplier>, out: &mut Folded) {
    let mut remap: HashMap<usize, usize> = HashMap::new();
    for (field, eff) in &upper.fields {
        let from_lower = lower.fields.get(field);
        let mut ids = Vec::with_capacity(eff.suppliers.len());
        for &u in &eff.suppliers {
            match (u, from_lower) {
                (0, Some(l)) => ids.extend_from_slice(&l.suppliers),
                (0, None) => {}
                (u, _) => {
                    if let Some(id) = remap.get(&u) {
                        ids.push(*id);
                    } else if let Some(supplier) = upper.suppliers.get(u) {
                        suppliers.push(supplier.clone());
                        remap.insert(u, suppliers.len() - 1);
                        ids.push(suppliers.len() - 1);
                    }
                }
            }
        }
        let value = match from_lower {
            Some(l) if eff.suppliers.contains(&0) => substitute(&eff.value, &l.value),
            _ => eff.value.clone(),
        };
        out.fields.insert(
            field.clone(),
            Effective {
                value,
                suppliers: ids,
            },
        );
    }
}

/// For status: names the lower suppliers that beat an upper supplier on
/// this rule (the memoised fold only knew them as placeholder 0).
fn record_lower_holders(
    upper: &mut Upper,
    lower: &Folded,
    lower_len: usize,
    out: &Folded,
    suppliers: &[Supplier],
) {
    upper.uses += 1;
    let wanted: BTreeSet<(FieldKey, LowerWinner)> = upper
        .stats
        .iter()
        .flat_map(|s| s.lower_winners.iter().cloned())
        .collect();
    for (field, mode) in wanted {
        let ids: Vec<usize> = match mode {
            LowerWinner::Holders => out
                .fields
                .get(&field)
                .map(|e| {
                    e.suppliers
                        .iter()
                        .copied()
                        .filter(|i| *i < lower_len)
                        .collect()
                })
                .unwrap_or_default(),
            LowerWinner::First => lower
                .fields
                .get(&field)
                .and_then(|e| e.suppliers.first().copied())
                .into_iter()
                .collect(),
        };
        let names = upper.lower_holders.entry((field, mode)).or_default();
        for id in ids {
            if let Some(s) = suppliers.get(id) {
                names.insert(s.to_string());
            }
        }
    }
}

/// What each upper supplier (index > 0) lost in a memoised fold, in the
/// terms of `resolve::record_stats` (the full fold), with the lower side's
/// winners left to be named per rule.
fn upper_stats(fold: &RuleFold<'_>) -> Vec<UpperStats> {
    let folded = &fold.folded;
    let label = |i: usize| fold.suppliers.get(i).map(Supplier::to_string);
    let mut out = Vec::new();
    for (id, supplier) in fold.suppliers.iter().enumerate().skip(1) {
        let Source::Policy { index, target, .. } = &supplier.source else {
            continue;
        };
        let mut lost = BTreeSet::new();
        let mut upper_winners = BTreeSet::new();
        let mut lower_winners = Vec::new();
        let mut conflicts = BTreeSet::new();
        for loss in folded.losses.iter().filter(|l| l.loser == id) {
            lost.insert(loss.field.clone());
            match folded.fields.get(&loss.field) {
                Some(e) => {
                    for &h in &e.suppliers {
                        if h == 0 {
                            lower_winners.push((loss.field.clone(), LowerWinner::Holders));
                        } else if let Some(name) = label(h) {
                            upper_winners.insert(name);
                        }
                    }
                }
                // The lower value kept it out (through `held_via` for a
                // shallow fill), then a shallow replace removed it.
                None if loss.winner == 0 => lower_winners.push((
                    loss.held_via.clone().unwrap_or_else(|| loss.field.clone()),
                    LowerWinner::First,
                )),
                None => upper_winners.extend(label(loss.winner)),
            }
            let Some(winner) = fold.suppliers.get(loss.winner) else {
                continue;
            };
            // The placeholder (supplier 0) is inline, never a policy, so it
            // is never a conflict.
            if is_conflict(supplier, winner, &fold.maps, loss) {
                conflicts.insert(winner.who());
            }
        }
        lower_winners.sort();
        lower_winners.dedup();
        out.push(UpperStats {
            key: (*index, target.clone()),
            lost: lost.len(),
            upper_winners,
            lower_winners,
            conflicts,
        });
    }
    out
}

/// Puts the lower value back where the placeholder stood (inside a deep
/// join, or as the whole value).
fn substitute(upper: &FieldValue, lower: &FieldValue) -> FieldValue {
    match (upper, lower) {
        (FieldValue::Text(u), FieldValue::Text(l)) => FieldValue::Text(u.replace(SENTINEL, l)),
        (FieldValue::Words(u), FieldValue::Words(l)) => {
            let mut out: Vec<String> = Vec::with_capacity(u.len() + l.len());
            for w in u {
                let expanded: &[String] = if w == SENTINEL {
                    l
                } else {
                    std::slice::from_ref(w)
                };
                for w in expanded {
                    if !out.contains(w) {
                        out.push(w.clone());
                    }
                }
            }
            FieldValue::Words(out)
        }
        // Not joinable: the placeholder stood for the lower value whole.
        _ => lower.clone(),
    }
}
