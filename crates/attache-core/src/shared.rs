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

use std::collections::HashMap;

use crate::field::{Direction, FieldKey, FieldValue, Group};
use crate::fold::{Effective, Folded};
use crate::levels::Fold;
use crate::model::{Gateway, Listener};
use crate::parse::Inputs;
use crate::supplier::{Source, Supplier};
use crate::topology::ObjectKey;

const GROUPS: [Group; 4] = [
    Group::Timeouts,
    Group::Retry,
    Group::Headers(Direction::Request),
    Group::Headers(Direction::Response),
];

/// Cannot occur in a validated header value (CR, LF and NUL are rejected).
const SENTINEL: &str = "\0lower\0";

/// The upper fold over one shape: placeholder supplier 0 is "whatever the
/// lower levels set".
struct Upper {
    fields: Vec<(FieldKey, Effective)>,
    suppliers: Vec<Supplier>,
}

/// Memo of upper folds, keyed by listener and the set of fields the lower
/// levels left set.
pub(crate) struct SharedUpper<'a> {
    inputs: &'a Inputs,
    gateway: &'a Gateway,
    memo: HashMap<(String, Group, Vec<FieldKey>), Upper>,
}

impl<'a> SharedUpper<'a> {
    pub fn new(inputs: &'a Inputs, gateway: &'a Gateway) -> Self {
        SharedUpper {
            inputs,
            gateway,
            memo: HashMap::new(),
        }
    }

    /// Completes a lower fold with the upper levels of `listener`: the same
    /// fields and suppliers as folding every level in one go (losses are
    /// not kept; `explain` folds in full when it needs them).
    pub fn complete(
        &mut self,
        listener: &Listener,
        lower: Folded,
        mut suppliers: Vec<Supplier>,
    ) -> (Folded, Vec<Supplier>) {
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
            let key = (listener.name.clone(), group, shape);
            if !self.memo.contains_key(&key) {
                let upper = self.fold_upper(listener, group, &key.2);
                self.memo.insert(key.clone(), upper);
            }
            let Some(upper) = self.memo.get(&key) else {
                continue;
            };
            // Only the upper suppliers that hold a field are copied: copying
            // all of them per rule would make resolve O(rules x policies).
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
        (out, suppliers)
    }

    fn fold_upper(&self, listener: &Listener, group: Group, shape: &[FieldKey]) -> Upper {
        let mut fold = Fold::new(self.inputs);
        fold.only = Some(group);
        fold.suppliers.push(Supplier {
            source: Source::Inline {
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
        Upper {
            fields: fold.folded.fields.into_iter().collect(),
            suppliers: fold.suppliers,
        }
    }
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
