//! What the reconcile keeps between rounds (docs/controller.md,
//! "Incremental reconcile"): per served Gateway, the plugin it resolved to
//! with the fingerprint of the scope it was resolved from, the pieces its
//! table was sealed into and its folded entries. Each is pure memory of a
//! pure result: a round with the memo plans what a round from scratch
//! plans (`tests/incremental.rs`).

use std::collections::{BTreeMap, HashMap};

use attache_core::topology::ObjectKey;
use attache_core::EntryMemo;
use attache_render::wasmplugin::SealedPieces;
use serde_json::Value;

use super::{managed_by_us, Kept};
use crate::scope::Fingerprint;
use crate::warnings::PolicyWarning;

/// What a Gateway resolved to: its plugin and the resolver's notes on
/// it, or why its last configuration is kept.
pub(super) type Desired = Result<(Encoded, Found), Kept>;

/// The resolver's notes on one Gateway: a line each for the log, and those
/// published as Events (`crate::warnings`).
#[derive(Debug, Clone, Default)]
pub(super) struct Found {
    pub lines: Vec<String>,
    pub warnings: Vec<PolicyWarning>,
}

/// A Gateway's plugin as a resolve gives it: what the memo keeps, and the
/// object itself for this round's apply.
pub(super) struct Fresh {
    pub desired: (Encoded, Found),
    pub plugin: Value,
}

/// A plugin as the memo keeps it between rounds: its JSON text, and a hash
/// of what [`same`] compares with the live one. Not the `Value` tree, which
/// costs about twenty times its text (a Gateway of 100 routes: ~1 MiB; 100
/// such Gateways kept ~100 MiB between rounds).
#[derive(Debug, Clone)]
pub(super) struct Encoded {
    pub text: Box<str>,
    pub identity: u64,
}

impl Encoded {
    pub fn of(plugin: &Value) -> Result<Self, serde_json::Error> {
        Ok(Encoded {
            text: serde_json::to_string(plugin)?.into_boxed_str(),
            identity: identity(plugin),
        })
    }
}

/// What earlier rounds resolved, by Gateway, with the fingerprint of the
/// scope each was resolved from: a Gateway whose fingerprint is the same
/// resolves to the same plugin, so it is not resolved again. A memo serves
/// one [`super::Config`] (the loop keeps one for its life). What each object
/// gave when read is kept by the read cache (`crate::snapshot::ReadObject`).
#[derive(Debug, Default)]
pub struct Memo {
    pub(super) gateways: HashMap<ObjectKey, (Fingerprint, Desired)>,
    /// Each Gateway's last sealed table, so that an edit deflates only the
    /// pieces it changed (`attache_render::wasmplugin::wasm_plugin_reusing`).
    pub(super) sealed: HashMap<ObjectKey, SealedPieces>,
    /// Each Gateway's last folded entries, so that an edit folds again only
    /// the entries it reaches (`attache_core::resolve_for_data_plane`).
    pub(super) entries: HashMap<ObjectKey, EntryMemo>,
}

impl Memo {
    /// Forgets every Gateway no longer served: resolved afresh if it returns.
    pub(super) fn keep_only<V>(&mut self, served: &BTreeMap<ObjectKey, V>) {
        self.gateways.retain(|key, _| served.contains_key(key));
        self.sealed.retain(|key, _| served.contains_key(key));
        self.entries.retain(|key, _| served.contains_key(key));
    }
}

/// Whether the live object already says what we would apply: the spec, our
/// label and the ownerReference (the API server adds the rest of metadata).
/// Spec and ownerReferences are compared by a 64-bit hash, as the memo keeps
/// them (an accidental collision is out of reach in practice).
pub(super) fn same(live: &Value, desired: &Encoded) -> bool {
    managed_by_us(live) && identity(live) == desired.identity
}

/// A hash of a plugin's spec and ownerReferences: what [`same`] compares.
fn identity(plugin: &Value) -> u64 {
    use std::hash::Hasher;
    let mut hasher = std::hash::DefaultHasher::new();
    crate::content_hash::hash_value(&plugin["spec"], &mut hasher);
    crate::content_hash::hash_value(&plugin["metadata"]["ownerReferences"], &mut hasher);
    hasher.finish()
}
