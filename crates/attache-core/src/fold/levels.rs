//! Which contributions fold into a route rule, in which order: the levels
//! of docs/semantics.md ("The levels of one route rule"), split at the listener. Everything below it
//! (the rule, its route, delegating parents) differs per rule; everything
//! from the listener up is shared by all rules on that listener, which is
//! what lets `shared` fold it once.

use crate::attach::Attachment;
use crate::field::{FieldKey, FieldMap, Group, Removal};
use crate::fold::peer_gate::{Gate, Part, Replaced};
use crate::fold::{Folded, Op};
use crate::model::levels::upper_targets;
use crate::model::Inputs;
use crate::model::{Gateway, HttpRoute, Listener, MergeStrategy, Rule, Target};
use crate::supplier::{Role, Source, Supplier};

/// The fold of one route rule in progress: its levels in order, with who
/// contributed what.
pub(crate) struct RuleFold<'a> {
    pub inputs: &'a Inputs,
    pub folded: Folded,
    pub suppliers: Vec<Supplier>,
    /// The settings each supplier contributed (parallel to `suppliers`).
    pub maps: Vec<&'a FieldMap>,
    /// Fold only this top-level field (groups fold independently).
    pub only: Option<Group>,
    /// Envoy Gateway's precedence among BackendTrafficPolicies, as far as
    /// the levels folded so far (fold/peer_gate.rs).
    pub gate: Gate,
    /// The BackendTrafficPolicies that gate kept out, for explain.
    pub replaced: Vec<Replaced>,
}

impl<'a> RuleFold<'a> {
    pub fn new(inputs: &'a Inputs) -> Self {
        RuleFold {
            inputs,
            folded: Folded::default(),
            suppliers: Vec::new(),
            maps: Vec::new(),
            only: None,
            gate: Gate::Open,
            replaced: Vec::new(),
        }
    }

    /// An opted-in policy (`spec.mergeStrategy`): its settings fold with
    /// its strategy (fold/strategy.rs); a PatchOverrides policy may carry
    /// only removals.
    fn push_strategy(
        &mut self,
        supplier: Supplier,
        map: &'a FieldMap,
        strategy: MergeStrategy,
        removals: &[Removal],
    ) {
        let part: FieldMap = map
            .iter()
            .filter(|(k, _)| self.only.is_none_or(|g| k.group() == g))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let removes = removals.iter().any(|r| {
            self.folded
                .fields
                .keys()
                .any(|k| r.covers(k) && self.only.is_none_or(|g| k.group() == g))
        });
        if part.is_empty() && !removes {
            return;
        }
        let id = self.suppliers.len();
        let suppliers = &self.suppliers;
        let by_policy = |_: &FieldKey, s: usize| {
            suppliers
                .get(s)
                .is_none_or(|x| matches!(x.source, Source::Policy { .. }))
        };
        self.folded
            .apply_strategy(id, &part, strategy, removals, &by_policy);
        self.suppliers.push(supplier);
        self.maps.push(map);
    }

    pub fn push(&mut self, supplier: Supplier, map: &'a FieldMap, op: Option<Op>) {
        if map.is_empty() {
            return;
        }
        let id = self.suppliers.len();
        let op = op.unwrap_or(supplier.role.op());
        match self.only {
            None => self.folded.apply(id, map, op, supplier.role.granularity()),
            Some(group) => {
                let part: FieldMap = map
                    .iter()
                    .filter(|(k, _)| k.group() == group)
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                if part.is_empty() {
                    return;
                }
                self.folded
                    .apply(id, &part, op, supplier.role.granularity());
            }
        }
        self.suppliers.push(supplier);
        self.maps.push(map);
    }

    /// One level: fills in precedence order, then replaces in reverse
    /// precedence order so that the top-ranked one is applied last.
    pub fn level(&mut self, target: Target) {
        let inputs = self.inputs;
        let Some(ranked) = inputs.by_target.get(&target) else {
            return;
        };
        let priority = inputs.priority_of(&target);
        let level = target.to_string();
        let parts = self.gate.step(inputs, &target, ranked, &mut self.replaced);
        let part = |index: usize| {
            parts
                .iter()
                .find(|(i, _)| *i == index)
                .map_or(Part::Applies, |(_, part)| *part)
        };
        let supplier = |index: usize, p: &crate::model::Policy, role: Role| Supplier {
            source: Source::Policy {
                index,
                name: p.display_name(),
                target: target.clone(),
            },
            role,
            level: level.clone(),
            leaf: false,
        };
        let policy = |index: usize| inputs.policies.get(index).filter(|p| p.strategy.is_none());
        for &index in ranked {
            let Some(p) = policy(index) else {
                continue;
            };
            match (part(index), &p.plain) {
                (Part::Replaced, _) => continue,
                (Part::Merged, Some(map)) => {
                    self.push(supplier(index, p, Role::Merged), map, None);
                    continue;
                }
                _ => {}
            }
            if let Some(map) = &p.defaults {
                self.push(supplier(index, p, Role::Defaults), map, None);
            }
            if let (Some(map), Op::Fill) = (&p.plain, priority.op()) {
                self.push(supplier(index, p, Role::Plain(priority)), map, None);
            }
        }
        // GEP-713 (2025): opted-in policies after the seeds' fills and
        // before their replaces, newest first, the established (oldest,
        // then namespace/name first) last; no weight.
        let mut opted: Vec<(&crate::model::Policy, usize, MergeStrategy)> = ranked
            .iter()
            .filter_map(|&i| {
                let p = inputs.policy(i)?;
                Some((p, i, p.strategy?))
            })
            .collect();
        opted.sort_by(|a, b| b.0.established_key().cmp(&a.0.established_key()));
        for (p, index, strategy) in opted {
            if part(index) != Part::Applies {
                continue;
            }
            let map = p.plain.as_ref().unwrap_or(&NO_SETTINGS);
            let s = supplier(index, p, Role::Strategy(strategy));
            self.push_strategy(s, map, strategy, &p.removals);
        }
        for &index in ranked.iter().rev() {
            let Some(p) = policy(index) else {
                continue;
            };
            if part(index) != Part::Applies {
                continue;
            }
            if let Some(map) = &p.overrides {
                self.push(supplier(index, p, Role::Overrides), map, None);
            }
            if let (Some(map), Op::Replace) = (&p.plain, priority.op()) {
                self.push(supplier(index, p, Role::Plain(priority)), map, None);
            }
        }
    }

    /// The rule's own values, then rule, route and delegating parents
    /// (innermost first), each parent rule's own values before its policies.
    pub fn lower(&mut self, att: &Attachment<'a>) {
        let Some((leaf_route, leaf_rule)) = att.leaf() else {
            return;
        };
        // The leaf rule's own values are the starting point (a fill into nothing).
        self.push(
            inline(leaf_route, leaf_rule, true),
            &leaf_rule.inline,
            Some(Op::Fill),
        );
        for (depth, (route, rule)) in att.chain.iter().enumerate().rev() {
            if depth + 1 < att.chain.len() {
                // A delegating parent rule's own values, per its route's annotation.
                self.push(inline(route, rule, false), &rule.inline, None);
            }
            if let Some(name) = &rule.name {
                self.level(Target::Route(
                    route.kind,
                    route.key.clone(),
                    Some(name.clone()),
                ));
            }
            self.level(Target::Route(route.kind, route.key.clone(), None));
        }
    }

    /// Listener, Gateway, Namespace of the Gateway, GatewayClass.
    pub fn upper(&mut self, gw: &Gateway, listener: &Listener) {
        for target in upper_targets(gw, listener) {
            self.level(target);
        }
    }
}

static NO_SETTINGS: FieldMap = FieldMap::new();

fn inline(route: &HttpRoute, rule: &Rule, leaf: bool) -> Supplier {
    Supplier {
        source: Source::Inline {
            kind: route.kind,
            route: route.key.clone(),
            rule: rule.label(),
        },
        role: Role::Inline(route.meta.priority),
        level: format!("{} rule {} (inline)", route.object(), rule.label()),
        leaf,
    }
}
