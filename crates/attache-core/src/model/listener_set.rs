//! ListenerSet (GEP-1713): listeners a team adds to a Gateway another team
//! owns, read alike from `gateway.networking.k8s.io/v1 ListenerSet` and the
//! experimental `gateway.networking.x-k8s.io/v1alpha1 XListenerSet`
//! (docs/semantics.md, "ListenerSet"). Attached sets' listeners join their
//! Gateway's `listeners`, each carrying its set ([`Listener::set`]).

use serde::Deserialize;

use super::gateway::{Listener, RawListener};
pub use super::gateway::{
    ListenersFrom, RawAllowedListeners, RawListenerNamespaces, RawListenersFrom,
};
pub use super::kinds::{SetKind, SetRef, X_GATEWAY_GROUP};
use super::meta::{Meta, RawMeta};
use crate::topology::ObjectKey;

/// Whether a set's listeners exist on its Gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetState {
    Attached,
    /// Its Gateway is missing or its `allowedListeners` does not admit it;
    /// the text says which (for the warning and for status).
    Detached(String),
    /// Dropped in favour of another object (an XListenerSet beside a
    /// ListenerSet of one name); the text names it.
    Dropped(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerSet {
    pub meta: Meta,
    pub id: SetRef,
    /// `spec.parentRef`: the Gateway.
    pub parent: ObjectKey,
    /// In `spec.listeners` order; each has `set` = this set.
    pub listeners: Vec<Listener>,
    pub state: SetState,
    /// Listener name -> why it is Conflicted (it has no entries).
    pub conflicted: Vec<(String, String)>,
}

impl ListenerSet {
    /// Listener precedence among sets: `creationTimestamp` (absent first),
    /// then `namespace/name` (GEP-1713 "Listener Validation").
    pub fn precedence(&self) -> (Option<&str>, &ObjectKey, SetKind) {
        (self.meta.created.as_deref(), &self.id.key, self.id.kind)
    }
}

// ---- raw shapes ----

#[derive(Debug, Deserialize)]
pub struct RawListenerSet {
    #[serde(default)]
    pub metadata: RawMeta,
    pub spec: RawListenerSetSpec,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawListenerSetSpec {
    pub parent_ref: RawSetParent,
    pub listeners: Vec<RawListener>,
}

#[derive(Debug, Deserialize)]
pub struct RawSetParent {
    pub group: Option<String>,
    pub kind: Option<String>,
    pub name: String,
    pub namespace: Option<String>,
}
