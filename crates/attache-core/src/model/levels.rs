//! The levels above a route rule (docs/semantics.md, "The levels of one
//! route rule"), most specific first, and the target each level gives a
//! rule's listener: the fold, status, `reach` and `attache graph` walk
//! [`UPPER_LEVELS`] through [`upper_targets`], so a new level is one more
//! variant here (ARCHITECTURE.md, "Add a level").

use super::gateway::{Gateway, Listener};
use super::policy::Target;

/// A level above a route rule (docs/semantics.md, "The levels of one route
/// rule"). The route levels (rule, route, delegating parents) come from the
/// attachment's chain; these come from the listener and what holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpperLevel {
    /// The listener: a Gateway's (`Gateway g listener l`) or a
    /// ListenerSet's (`ListenerSet s listener l`).
    Listener,
    /// The ListenerSet of a set's listener; absent for a Gateway's own.
    ListenerSet,
    Gateway,
    Namespace,
    GatewayClass,
}

/// The upper levels, most specific first: the order the fold folds them in
/// and status counts them in. A set's listener reaches the Gateway level
/// (a Gateway policy reaches every attached set) but never the Gateway's
/// listeners; the Namespace stays the Gateway's (docs/semantics.md,
/// "ListenerSet").
pub const UPPER_LEVELS: &[UpperLevel] = &[
    UpperLevel::Listener,
    UpperLevel::ListenerSet,
    UpperLevel::Gateway,
    UpperLevel::Namespace,
    UpperLevel::GatewayClass,
];

impl UpperLevel {
    /// This level's target for a rule served by `listener` of `gw`; None
    /// when the listener has no such level (a Gateway's own listener has no
    /// ListenerSet).
    pub fn target(self, gw: &Gateway, listener: &Listener) -> Option<Target> {
        let section = Some(listener.name.clone());
        Some(match (self, &listener.set) {
            (UpperLevel::Listener, None) => Target::Gateway(gw.key.clone(), section),
            (UpperLevel::Listener, Some(set)) => Target::ListenerSet(set.clone(), section),
            (UpperLevel::ListenerSet, None) => return None,
            (UpperLevel::ListenerSet, Some(set)) => Target::ListenerSet(set.clone(), None),
            (UpperLevel::Gateway, _) => Target::Gateway(gw.key.clone(), None),
            (UpperLevel::Namespace, _) => Target::Namespace(gw.key.namespace.clone()),
            (UpperLevel::GatewayClass, _) => Target::GatewayClass(gw.class.clone()),
        })
    }
}

/// The upper levels' targets for one listener, most specific first.
pub fn upper_targets<'a>(
    gw: &'a Gateway,
    listener: &'a Listener,
) -> impl Iterator<Item = Target> + 'a {
    UPPER_LEVELS
        .iter()
        .filter_map(move |level| level.target(gw, listener))
}
