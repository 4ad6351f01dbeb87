//! ListenerSet (GEP-1713): listeners a team adds to a Gateway another team
//! owns, read alike from `gateway.networking.k8s.io/v1 ListenerSet` and the
//! experimental `gateway.networking.x-k8s.io/v1alpha1 XListenerSet`
//! (docs/semantics.md, "ListenerSet"). Attached sets' listeners join their
//! Gateway's `listeners`, each carrying its set ([`Listener::set`]).

use std::fmt;

use serde::Deserialize;

use super::gateway::{LabelSelector, Listener, RawListener};
use super::meta::{Meta, RawMeta};
use super::route::GATEWAY_GROUP;
use crate::topology::ObjectKey;

/// The experimental group; only its `XListenerSet` is read.
pub const X_GATEWAY_GROUP: &str = "gateway.networking.x-k8s.io";

/// The two kinds of a ListenerSet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SetKind {
    ListenerSet,
    XListenerSet,
}

impl SetKind {
    pub const ALL: [SetKind; 2] = [SetKind::ListenerSet, SetKind::XListenerSet];

    pub fn name(self) -> &'static str {
        match self {
            SetKind::ListenerSet => "ListenerSet",
            SetKind::XListenerSet => "XListenerSet",
        }
    }

    pub fn group(self) -> &'static str {
        match self {
            SetKind::ListenerSet => GATEWAY_GROUP,
            SetKind::XListenerSet => X_GATEWAY_GROUP,
        }
    }

    /// The version read.
    pub fn version(self) -> &'static str {
        match self {
            SetKind::ListenerSet => "v1",
            SetKind::XListenerSet => "v1alpha1",
        }
    }

    /// The kind a (group, kind) names, when it is one of the two.
    pub fn find(group: &str, kind: &str) -> Option<SetKind> {
        SetKind::ALL
            .into_iter()
            .find(|k| k.group() == group && k.name() == kind)
    }

    /// The kind named `kind` in any group (a parentRef that pairs it with
    /// the wrong group is still recognisable, and warned about).
    pub fn named(kind: &str) -> Option<SetKind> {
        SetKind::ALL.into_iter().find(|k| k.name() == kind)
    }
}

/// Which ListenerSet: its kind and `namespace/name`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SetRef {
    pub kind: SetKind,
    pub key: ObjectKey,
}

impl fmt::Display for SetRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind.name(), self.key)
    }
}

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

/// A Gateway's `spec.allowedListeners.namespaces.from`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ListenersFrom {
    /// The default: no ListenerSet is taken.
    #[default]
    None,
    Same,
    All,
    Selector(LabelSelector),
}

impl ListenersFrom {
    /// The value as written, for messages.
    pub fn as_str(&self) -> &'static str {
        match self {
            ListenersFrom::None => "None",
            ListenersFrom::Same => "Same",
            ListenersFrom::All => "All",
            ListenersFrom::Selector(_) => "Selector",
        }
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

#[derive(Debug, Default, Deserialize)]
pub struct RawAllowedListeners {
    pub namespaces: Option<RawListenerNamespaces>,
}

#[derive(Debug, Deserialize)]
pub struct RawListenerNamespaces {
    pub from: Option<RawListenersFrom>,
    pub selector: Option<LabelSelector>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
pub enum RawListenersFrom {
    None,
    Same,
    All,
    Selector,
}
