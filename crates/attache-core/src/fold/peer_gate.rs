//! Envoy Gateway's own precedence among BackendTrafficPolicies
//! (docs/semantics.md, "Peers' policy kinds"; docs/peers.md): the most
//! specific one (route rule, route, listener, Gateway) replaces the less
//! specific ones whole, unless it sets `mergeType`, in which case the next
//! less specific one is merged under it (its set fields win). Other kinds
//! never pass through the gate.
//!
//! The fold visits levels from the most specific up, so the gate is a small
//! state carried level to level: open until the first
//! BackendTrafficPolicy, then merging or closed.

use crate::model::peers::peer;
use crate::model::Inputs;
use crate::model::Target;

/// Where the walk up the levels stands.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub(crate) enum Gate {
    /// No BackendTrafficPolicy below this level.
    #[default]
    Open,
    /// The one below sets `mergeType`: the next one is merged under it.
    Merging,
    /// The one below (named) replaces every less specific one whole.
    Closed(String),
}

/// What a BackendTrafficPolicy at a level does for this rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// It takes part as any plain-settings policy would.
    Applies,
    /// A more specific one set `mergeType`: it fills what that one left
    /// unset, field by field.
    Merged,
    /// A more specific one (or a higher-ranked one at the same level)
    /// replaces it whole.
    Replaced,
}

/// A BackendTrafficPolicy that does not apply to a rule, and who replaced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replaced {
    pub index: usize,
    pub target: Target,
    pub by: String,
}

impl Gate {
    /// The parts of the BackendTrafficPolicies among `ranked` (one level, in
    /// precedence order), moving the gate past this level. Envoy Gateway
    /// applies one policy per target, so a lower-ranked one at the same
    /// level is replaced by the top-ranked one.
    pub fn step(
        &mut self,
        inputs: &Inputs,
        target: &Target,
        ranked: &[usize],
        replaced: &mut Vec<Replaced>,
    ) -> Vec<(usize, Part)> {
        let mut parts = Vec::new();
        let mut top: Option<(String, bool)> = None;
        for &index in ranked {
            let Some(p) = inputs.policies.get(index) else {
                continue;
            };
            if !peer(p.kind).is_some_and(|q| q.replaces_whole) {
                continue;
            }
            let by = match (&*self, &top) {
                (Gate::Closed(by), _) => Some(by.clone()),
                (_, Some((name, _))) => Some(name.clone()),
                (Gate::Open | Gate::Merging, None) => None,
            };
            if let Some(by) = by {
                parts.push((index, Part::Replaced));
                replaced.push(Replaced {
                    index,
                    target: target.clone(),
                    by,
                });
                continue;
            }
            let part = if *self == Gate::Merging {
                Part::Merged
            } else {
                Part::Applies
            };
            parts.push((index, part));
            top = Some((p.display_name(), p.merge_type.is_some()));
        }
        if let Some((name, merges)) = top {
            *self = if merges {
                Gate::Merging
            } else {
                Gate::Closed(name)
            };
        }
        parts
    }
}
