//! What [`crate::resolve::resolve_for_data_plane`] keeps between calls: each route
//! entry it folded, keyed by a hash of everything that entry's fold, its
//! clamp, its data-plane split and its notes read. A caller that resolves
//! the same Gateway again after a small change (the controller, after one
//! policy edit) folds again only the entries the change reaches; every
//! other entry is one hash and a copy.
//!
//! What the key covers, level by level (`fold/levels.rs`):
//! - each route of the delegation chain, outermost first: its kind, key,
//!   priority and origin, the rule's index, name and inline settings, and
//!   at its rule and route targets, the level's priority and every policy
//!   ranked there (in rank order, each by [`policy_hash`]);
//! - the listener (its key, which names the entry, and its ListenerSet's
//!   kind), and at each of its upper targets (listener, ListenerSet,
//!   Gateway, Namespace, GatewayClass) the same as for a route's targets;
//! - the data plane.
//!
//! The memo keeps only what the fold decides (an entry's settings and
//! notes); the entry's name, route, hostnames and matches are the
//! attachment's, built afresh, so they are not in the key.
//! `tests/incremental.rs` in the controller checks that a round with the
//! memo equals one from scratch after random edits.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::attach::Attachment;
use crate::contract::Settings;
use crate::diagnostic::Diagnostic;
use crate::model::levels::upper_targets;
use crate::model::{Gateway, HttpRoute, Inputs, Listener, Policy, Target};
use crate::who_applies::DataPlane;

/// What one entry's fold gave: its settings and notes (a clamp, an Istio
/// header clash). The rest of the entry (its name, listener, route,
/// hostnames and matches) is the attachment's, built each time.
#[derive(Debug, Clone)]
pub(crate) struct FoldedEntry {
    pub settings: Arc<Settings>,
    pub diagnostics: Vec<Diagnostic>,
}

/// Equal settings folded in one resolution, kept once: a route's rules
/// usually fold alike, and the memo holds every entry's settings between
/// rounds (at 10,000 routes x 3 rules about a third as many).
#[derive(Default)]
pub(crate) struct SharedSettings {
    seen: HashSet<Arc<Settings>>,
}

impl SharedSettings {
    pub fn share(&mut self, settings: Settings) -> Arc<Settings> {
        if let Some(same) = self.seen.get(&settings) {
            return Arc::clone(same);
        }
        let shared = Arc::new(settings);
        self.seen.insert(Arc::clone(&shared));
        shared
    }
}

/// The entries of one Gateway's last resolution, by key. Keep one per
/// Gateway: each resolution keeps only the entries it used.
#[derive(Debug, Default)]
pub struct EntryMemo {
    entries: HashMap<u64, FoldedEntry>,
    /// How many entries the last resolution took from the memo.
    reused: usize,
}

impl EntryMemo {
    /// How many entries it holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many entries the last resolution took from the memo rather
    /// than folding them.
    pub fn reused(&self) -> usize {
        self.reused
    }

    /// Takes the entry folded under `key` last time, if any.
    pub(crate) fn take(&mut self, key: u64) -> Option<FoldedEntry> {
        let found = self.entries.remove(&key);
        self.reused += usize::from(found.is_some());
        found
    }

    /// Starts a resolution: nothing reused yet.
    pub(crate) fn start(&mut self) {
        self.reused = 0;
    }

    /// Replaces what is kept with this resolution's entries.
    pub(crate) fn replace(&mut self, entries: HashMap<u64, FoldedEntry>) {
        self.entries = entries;
    }
}

/// Computes entry keys for one resolution of one Gateway; what several
/// entries share (a policy, a listener's upper levels) is hashed once.
pub(crate) struct EntryKeys<'a> {
    inputs: &'a Inputs,
    gateway: &'a Gateway,
    data_plane: DataPlane,
    /// `Steering::fingerprint`: every rule's header matches on the Gateway
    /// (an entry's refusals depend on other rules' matches).
    steering: u64,
    policies: Vec<Option<u64>>,
    /// By the listener's address: the listeners are the Gateway's own, so
    /// the address names one for the whole resolution.
    uppers: HashMap<*const Listener, u64>,
    /// By the route's address, as `uppers`: routes are `inputs`'.
    routes: HashMap<*const HttpRoute, u64>,
}

impl<'a> EntryKeys<'a> {
    pub fn new(
        inputs: &'a Inputs,
        gateway: &'a Gateway,
        data_plane: DataPlane,
        steering: u64,
    ) -> Self {
        EntryKeys {
            inputs,
            gateway,
            data_plane,
            steering,
            policies: vec![None; inputs.policies.len()],
            uppers: HashMap::new(),
            routes: HashMap::new(),
        }
    }

    /// The key of one attachment's entry.
    pub fn of(&mut self, att: &Attachment<'_>) -> u64 {
        let mut h = DefaultHasher::new();
        (self.data_plane == DataPlane::Istio).hash(&mut h);
        self.steering.hash(&mut h);
        self.upper(att.listener).hash(&mut h);
        att.chain.len().hash(&mut h);
        for (route, rule) in &att.chain {
            route.kind.hash(&mut h);
            route.key.hash(&mut h);
            route.meta.priority.hash(&mut h);
            route.meta.origin.hash(&mut h);
            rule.index.hash(&mut h);
            rule.name.hash(&mut h);
            rule.inline.hash(&mut h);
            if let Some(name) = &rule.name {
                let target = Target::Route(route.kind, route.key.clone(), Some(name.clone()));
                self.level(&target, &mut h);
            }
            self.route_level(route).hash(&mut h);
        }
        h.finish()
    }

    /// The route's own level, hashed once for all its rules.
    fn route_level(&mut self, route: &HttpRoute) -> u64 {
        if let Some(&known) = self.routes.get(&std::ptr::from_ref(route)) {
            return known;
        }
        let mut h = DefaultHasher::new();
        self.level(&Target::Route(route.kind, route.key.clone(), None), &mut h);
        let key = h.finish();
        self.routes.insert(std::ptr::from_ref(route), key);
        key
    }

    /// The listener's name and set, and every level above it.
    fn upper(&mut self, listener: &Listener) -> u64 {
        if let Some(&known) = self.uppers.get(&std::ptr::from_ref(listener)) {
            return known;
        }
        let mut h = DefaultHasher::new();
        listener.name.hash(&mut h);
        listener.set.hash(&mut h);
        for target in upper_targets(self.gateway, listener) {
            self.level(&target, &mut h);
        }
        let key = h.finish();
        self.uppers.insert(std::ptr::from_ref(listener), key);
        key
    }

    /// One level: the target, its priority, and its policies in rank order.
    fn level(&mut self, target: &Target, h: &mut DefaultHasher) {
        target.hash(h);
        self.inputs.priority_of(target).hash(h);
        let ranked = self.inputs.by_target.get(target);
        ranked.map_or(0, Vec::len).hash(h);
        for &index in ranked.into_iter().flatten() {
            self.policy(index).hash(h);
        }
    }

    fn policy(&mut self, index: usize) -> Option<u64> {
        let slot = self.policies.get_mut(index)?;
        if slot.is_none() {
            *slot = self.inputs.policy(index).map(policy_hash);
        }
        *slot
    }
}

/// What the fold reads of a policy: its name and kind (suppliers,
/// Envoy Gateway's precedence), its age and weight (order within a
/// level, GEP-713's opted-in order), its settings, merge type, strategy
/// and removals, and whether it is valid.
pub(crate) fn policy_hash(policy: &Policy) -> u64 {
    let mut h = DefaultHasher::new();
    policy.kind.hash(&mut h);
    policy.meta.namespace.hash(&mut h);
    policy.meta.name.hash(&mut h);
    policy.meta.created.hash(&mut h);
    policy.weight.hash(&mut h);
    policy.defaults.hash(&mut h);
    policy.overrides.hash(&mut h);
    policy.plain.hash(&mut h);
    policy.merge_type.hash(&mut h);
    policy.strategy.hash(&mut h);
    policy.removals.hash(&mut h);
    policy.invalid.hash(&mut h);
    h.finish()
}
