//! What a change to policies or routes does to every route (`attache diff`):
//! two resolved documents and two status reports in, the entries added and
//! removed, every changed field with its old and new value and the new
//! winning source, and every policy whose status changed.
//!
//! Fields are named and valued as `explain` shows them (`FieldKey` and
//! `FieldValue` display), and the source of a new value is the document's
//! `sources` entry, written with `Supplier`'s display: the words `explain`
//! prints. Only effective changes count: a field whose value is the same but
//! whose supplier changed is not a change to traffic.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::contract::{Document, RouteEntry};
use crate::field::document::read_back;
use crate::field::{FieldKey, FieldValue, Group};
use crate::status::StatusReport;

mod policies;
pub use policies::{PolicyChange, ReasonChange, TargetChange};

/// One kind of change, for `--fail-on` (docs/diff.md defines each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeKind {
    EntryAdded,
    EntryRemoved,
    MatchChanged,
    TimeoutShorter,
    TimeoutLonger,
    RetriesIncrease,
    RetriesDecrease,
    RetryChanged,
    HeaderChanged,
    PolicyInvalid,
    PolicyConflicted,
    PolicyTargetNotFound,
    PolicyRecovered,
}

impl ChangeKind {
    pub const ALL: [ChangeKind; 13] = [
        ChangeKind::EntryAdded,
        ChangeKind::EntryRemoved,
        ChangeKind::MatchChanged,
        ChangeKind::TimeoutShorter,
        ChangeKind::TimeoutLonger,
        ChangeKind::RetriesIncrease,
        ChangeKind::RetriesDecrease,
        ChangeKind::RetryChanged,
        ChangeKind::HeaderChanged,
        ChangeKind::PolicyInvalid,
        ChangeKind::PolicyConflicted,
        ChangeKind::PolicyTargetNotFound,
        ChangeKind::PolicyRecovered,
    ];

    /// The kebab-case name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            ChangeKind::EntryAdded => "entry-added",
            ChangeKind::EntryRemoved => "entry-removed",
            ChangeKind::MatchChanged => "match-changed",
            ChangeKind::TimeoutShorter => "timeout-shorter",
            ChangeKind::TimeoutLonger => "timeout-longer",
            ChangeKind::RetriesIncrease => "retries-increase",
            ChangeKind::RetriesDecrease => "retries-decrease",
            ChangeKind::RetryChanged => "retry-changed",
            ChangeKind::HeaderChanged => "header-changed",
            ChangeKind::PolicyInvalid => "policy-invalid",
            ChangeKind::PolicyConflicted => "policy-conflicted",
            ChangeKind::PolicyTargetNotFound => "policy-target-not-found",
            ChangeKind::PolicyRecovered => "policy-recovered",
        }
    }

    pub fn parse(name: &str) -> Option<ChangeKind> {
        ChangeKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// Everything that changed for one Gateway.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Diff {
    pub gateway: String,
    pub entries_added: Vec<String>,
    pub entries_removed: Vec<String>,
    pub entries_changed: Vec<EntryChanges>,
    pub policies: Vec<PolicyChange>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EntryChanges {
    pub entry: String,
    pub fields: Vec<FieldChange>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldChange {
    /// Schema-1 path, as `explain` names it (`timeouts.requestMs`).
    pub field: String,
    /// Absent when the field was not set before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old: Option<DiffValue>,
    /// Absent when the field is no longer set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new: Option<DiffValue>,
    /// Who supplies the new value, as `explain` words it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub kinds: Vec<ChangeKind>,
}

impl Diff {
    /// Every kind of change present, once.
    pub fn kinds(&self) -> BTreeSet<ChangeKind> {
        let mut kinds = BTreeSet::new();
        if !self.entries_added.is_empty() {
            kinds.insert(ChangeKind::EntryAdded);
        }
        if !self.entries_removed.is_empty() {
            kinds.insert(ChangeKind::EntryRemoved);
        }
        let fields = self.entries_changed.iter().flat_map(|e| &e.fields);
        kinds.extend(fields.flat_map(|f| f.kinds.iter().copied()));
        kinds.extend(self.policies.iter().flat_map(|p| p.kinds.iter().copied()));
        kinds
    }

    /// Whether anything effective changed.
    pub fn is_empty(&self) -> bool {
        self.entries_added.is_empty()
            && self.entries_removed.is_empty()
            && self.entries_changed.is_empty()
            && self.policies.is_empty()
    }
}

/// Compares two resolutions of one Gateway. Either may be absent: a Gateway
/// that is new has every entry added, one that is deleted every entry removed.
pub fn diff(
    gateway: &str,
    old: Option<&Document>,
    new: Option<&Document>,
    old_status: &StatusReport,
    new_status: &StatusReport,
) -> Diff {
    let (old_entries, new_entries) = (by_name(old), by_name(new));
    let mut out = Diff {
        gateway: gateway.to_string(),
        ..Diff::default()
    };
    for (name, entry) in &new_entries {
        match old_entries.get(name) {
            None => out.entries_added.push((*name).to_string()),
            Some(before) => {
                let fields = field_changes(before, entry);
                if !fields.is_empty() {
                    out.entries_changed.push(EntryChanges {
                        entry: (*name).to_string(),
                        fields,
                    });
                }
            }
        }
    }
    out.entries_removed = old_entries
        .keys()
        .filter(|name| !new_entries.contains_key(*name))
        .map(|name| (*name).to_string())
        .collect();
    out.policies = policies::policy_changes(old_status, new_status);
    out
}

fn by_name(doc: Option<&Document>) -> BTreeMap<&str, &RouteEntry> {
    doc.map(|d| d.routes.iter().map(|e| (e.name.as_str(), e)).collect())
        .unwrap_or_default()
}

/// One compared leaf of an entry: a setting, keyed as the fold keys it
/// (its display is the name `explain` and `sources` use), or how traffic
/// reaches the entry.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Leaf {
    Setting(FieldKey),
    Hostnames,
    Matches,
}

impl Leaf {
    fn name(&self) -> String {
        match self {
            Leaf::Setting(key) => key.to_string(),
            Leaf::Hostnames => "hostnames".into(),
            Leaf::Matches => "matches".into(),
        }
    }
}

/// A leaf's value as compared here.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Shown {
    Setting(FieldValue),
    /// Hostnames or matches: as text, and as the document's JSON.
    Routing(String, serde_json::Value),
}

impl Shown {
    fn value(&self) -> DiffValue {
        match self {
            Shown::Setting(value) => DiffValue {
                text: value.to_string(),
                json: match value {
                    // Durations in the API's format, as a policy writes them.
                    FieldValue::Millis(ms) => crate::authored_form::duration(*ms).into(),
                    FieldValue::Count(n) => (*n).into(),
                    FieldValue::Codes(codes) => codes.clone().into(),
                    FieldValue::Words(words) => words.clone().into(),
                    FieldValue::Text(text) => text.clone().into(),
                },
            },
            Shown::Routing(text, json) => DiffValue {
                text: text.clone(),
                json: json.clone(),
            },
        }
    }
}

/// A changed value: text for people (`Display`, as the text output shows
/// it) and the API's JSON type for tools (`Serialize`: numbers as numbers,
/// durations as Gateway API durations such as `15s`, lists as lists).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffValue {
    pub text: String,
    pub json: serde_json::Value,
}

impl std::fmt::Display for DiffValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for DiffValue {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.json.serialize(s)
    }
}

fn field_changes(old: &RouteEntry, new: &RouteEntry) -> Vec<FieldChange> {
    let (before, after) = (flatten(old), flatten(new));
    let leaves: BTreeSet<&Leaf> = before.keys().chain(after.keys()).collect();
    let mut changes: Vec<FieldChange> = leaves
        .into_iter()
        .filter_map(|leaf| {
            let (o, n) = (before.get(leaf), after.get(leaf));
            let field = leaf.name();
            (o != n).then(|| FieldChange {
                source: n.and_then(|_| new.sources.get(&field).cloned()),
                field,
                old: o.map(Shown::value),
                new: n.map(Shown::value),
                kinds: vec![classify(leaf, o, n)],
            })
        })
        .collect();
    // By name, as `explain` lists fields.
    changes.sort_by(|a, b| a.field.cmp(&b.field));
    changes
}

/// The entry's leaves: the inverse of how the resolver writes an entry
/// (`crate::field::document`, the one table of where each setting sits).
fn flatten(entry: &RouteEntry) -> BTreeMap<Leaf, Shown> {
    let mut out: BTreeMap<Leaf, Shown> = BTreeMap::new();
    for (key, value) in read_back(entry) {
        out.insert(Leaf::Setting(key), Shown::Setting(value));
    }
    if !entry.hostnames.is_empty() {
        let text = format!("[{}]", entry.hostnames.join(", "));
        let json = entry.hostnames.clone().into();
        out.insert(Leaf::Hostnames, Shown::Routing(text, json));
    }
    if !entry.matches.is_empty() {
        let json = serde_json::to_value(&entry.matches).unwrap_or_default();
        out.insert(Leaf::Matches, Shown::Routing(json.to_string(), json));
    }
    out
}

/// What a change means for traffic. A timeout that is absent or 0 is no
/// timeout: infinitely long. Absent attempts are 0 retries.
fn classify(leaf: &Leaf, old: Option<&Shown>, new: Option<&Shown>) -> ChangeKind {
    let millis = |v: Option<&Shown>| match v {
        Some(Shown::Setting(FieldValue::Millis(ms))) if *ms > 0 => *ms,
        _ => u64::MAX,
    };
    let count = |v: Option<&Shown>| match v {
        Some(Shown::Setting(FieldValue::Count(n))) => *n,
        _ => 0,
    };
    let key = match leaf {
        Leaf::Setting(key) => key,
        Leaf::Hostnames | Leaf::Matches => return ChangeKind::MatchChanged,
    };
    match key.group() {
        Group::Timeouts if millis(new) < millis(old) => ChangeKind::TimeoutShorter,
        Group::Timeouts => ChangeKind::TimeoutLonger,
        Group::Retry if *key == FieldKey::RetryAttempts => {
            if count(new) > count(old) {
                ChangeKind::RetriesIncrease
            } else {
                ChangeKind::RetriesDecrease
            }
        }
        Group::Retry => ChangeKind::RetryChanged,
        Group::Headers(_) => ChangeKind::HeaderChanged,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Option<Shown> {
        Some(Shown::Setting(FieldValue::Millis(v)))
    }

    #[test]
    fn no_timeout_and_zero_are_infinitely_long() {
        let leaf = Leaf::Setting(FieldKey::RequestTimeout);
        let k = |o: Option<Shown>, n: Option<Shown>| classify(&leaf, o.as_ref(), n.as_ref());
        assert_eq!(k(None, ms(5000)), ChangeKind::TimeoutShorter);
        assert_eq!(k(ms(0), ms(5000)), ChangeKind::TimeoutShorter);
        assert_eq!(k(ms(5000), ms(0)), ChangeKind::TimeoutLonger);
        assert_eq!(k(ms(5000), None), ChangeKind::TimeoutLonger);
        assert_eq!(k(ms(5000), ms(4000)), ChangeKind::TimeoutShorter);
    }

    #[test]
    fn absent_attempts_are_zero_retries() {
        let count = |n| Some(Shown::Setting(FieldValue::Count(n)));
        let leaf = Leaf::Setting(FieldKey::RetryAttempts);
        let k = |o: Option<Shown>, n: Option<Shown>| classify(&leaf, o.as_ref(), n.as_ref());
        assert_eq!(k(None, count(1)), ChangeKind::RetriesIncrease);
        assert_eq!(k(count(3), None), ChangeKind::RetriesDecrease);
    }

    #[test]
    fn kind_names_round_trip() {
        for kind in ChangeKind::ALL {
            assert_eq!(ChangeKind::parse(kind.name()), Some(kind));
            let json = serde_json::to_value(kind).unwrap_or_default();
            assert_eq!(json, kind.name(), "the JSON name is the CLI name");
        }
    }
}
