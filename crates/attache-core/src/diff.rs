//! What a change to policies or routes does to every route (`attache diff`):
//! two resolved documents and two status reports in, the entries added and
//! removed, every changed field with its old and new value and the new
//! winning source, and every policy whose status changed.
//!
//! Values are worded as `explain` words them (the same `FieldValue`
//! display), and sources are the document's `sources`, which `explain`
//! wrote. Only effective changes count: a field whose value is the same but
//! whose supplier changed is not a change to traffic.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::contract::{Document, HeaderChanges, RouteEntry};
use crate::field::FieldValue;
use crate::status::{PolicyStatus, StatusReport};

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
    pub old: Option<String>,
    /// Absent when the field is no longer set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new: Option<String>,
    /// Who supplies the new value, as `explain` words it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub kinds: Vec<ChangeKind>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyChange {
    /// `Kind namespace/name` (`Kind name` for cluster-scoped kinds).
    pub policy: String,
    /// The `Accepted` condition's reason; absent when the policy did not exist.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new: Option<String>,
    /// The new condition's message.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
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

/// Compares two resolutions of one Gateway. `old` may be absent (the Gateway
/// is new): every entry is then added.
pub fn diff(
    gateway: &str,
    old: Option<&Document>,
    new: &Document,
    old_status: &StatusReport,
    new_status: &StatusReport,
) -> Diff {
    let old_entries: BTreeMap<&str, &RouteEntry> = old
        .map(|d| d.routes.iter().map(|e| (e.name.as_str(), e)).collect())
        .unwrap_or_default();
    let new_entries: BTreeMap<&str, &RouteEntry> =
        new.routes.iter().map(|e| (e.name.as_str(), e)).collect();
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
    out.policies = policy_changes(old_status, new_status);
    out
}

/// A field's value as `explain` shows it, and as compared here.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Shown {
    Setting(FieldValue),
    /// Hostnames and matches: how traffic reaches the entry.
    Routing(String),
}

impl Shown {
    fn text(&self) -> String {
        match self {
            Shown::Setting(value) => value.to_string(),
            Shown::Routing(text) => text.clone(),
        }
    }
}

fn field_changes(old: &RouteEntry, new: &RouteEntry) -> Vec<FieldChange> {
    let (before, after) = (flatten(old), flatten(new));
    let names: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    names
        .into_iter()
        .filter_map(|field| {
            let (o, n) = (before.get(field), after.get(field));
            (o != n).then(|| FieldChange {
                field: field.clone(),
                old: o.map(Shown::text),
                new: n.map(Shown::text),
                source: n.and_then(|_| new.sources.get(field).cloned()),
                kinds: classify(field, o, n),
            })
        })
        .collect()
}

/// The entry's leaves, keyed by the names `explain` and `sources` use.
fn flatten(entry: &RouteEntry) -> BTreeMap<String, Shown> {
    let t = entry.timeouts.clone().unwrap_or_default();
    let r = entry.retry.clone().unwrap_or_default();
    let settings = [
        ("timeouts.requestMs", t.request_ms.map(FieldValue::Millis)),
        (
            "timeouts.backendRequestMs",
            t.backend_request_ms.map(FieldValue::Millis),
        ),
        ("retry.attempts", r.attempts.map(FieldValue::Count)),
        ("retry.codes", r.codes.map(FieldValue::Codes)),
        ("retry.backoffMs", r.backoff_ms.map(FieldValue::Millis)),
        ("retry.retryOn", r.retry_on.map(FieldValue::Words)),
    ];
    let mut out: BTreeMap<String, Shown> = settings
        .into_iter()
        .filter_map(|(key, value)| Some((key.to_string(), Shown::Setting(value?))))
        .collect();
    let mut put = |key: &str, value: FieldValue| {
        out.insert(key.to_string(), Shown::Setting(value));
    };
    for (section, changes) in [
        ("requestHeaders", &entry.request_headers),
        ("responseHeaders", &entry.response_headers),
    ] {
        if let Some(changes) = changes {
            headers(section, changes, &mut put);
        }
    }
    if !entry.hostnames.is_empty() {
        let text = format!("[{}]", entry.hostnames.join(", "));
        out.insert("hostnames".into(), Shown::Routing(text));
    }
    if !entry.matches.is_empty() {
        let text = serde_json::to_string(&entry.matches).unwrap_or_default();
        out.insert("matches".into(), Shown::Routing(text));
    }
    out
}

fn headers(section: &str, changes: &HeaderChanges, put: &mut impl FnMut(&str, FieldValue)) {
    for h in &changes.set {
        put(
            &format!("{section}.set.{}", h.name),
            FieldValue::Text(h.value.clone()),
        );
    }
    for h in &changes.add {
        put(
            &format!("{section}.add.{}", h.name),
            FieldValue::Text(h.value.clone()),
        );
    }
    if !changes.remove.is_empty() {
        put(
            &format!("{section}.remove"),
            FieldValue::Words(changes.remove.clone()),
        );
    }
}

/// What a change means for traffic. A timeout that is absent or 0 is no
/// timeout: infinitely long. Absent attempts are 0 retries.
fn classify(field: &str, old: Option<&Shown>, new: Option<&Shown>) -> Vec<ChangeKind> {
    let millis = |v: Option<&Shown>| match v {
        Some(Shown::Setting(FieldValue::Millis(ms))) if *ms > 0 => *ms,
        _ => u64::MAX,
    };
    let count = |v: Option<&Shown>| match v {
        Some(Shown::Setting(FieldValue::Count(n))) => *n,
        _ => 0,
    };
    let kind = if field.starts_with("timeouts.") {
        match millis(new).cmp(&millis(old)) {
            std::cmp::Ordering::Less => ChangeKind::TimeoutShorter,
            _ => ChangeKind::TimeoutLonger,
        }
    } else if field == "retry.attempts" {
        match count(new).cmp(&count(old)) {
            std::cmp::Ordering::Greater => ChangeKind::RetriesIncrease,
            _ => ChangeKind::RetriesDecrease,
        }
    } else if field.starts_with("retry.") {
        ChangeKind::RetryChanged
    } else if field.starts_with("requestHeaders.") || field.starts_with("responseHeaders.") {
        ChangeKind::HeaderChanged
    } else {
        ChangeKind::MatchChanged
    };
    vec![kind]
}

fn policy_changes(old: &StatusReport, new: &StatusReport) -> Vec<PolicyChange> {
    let index = |report: &StatusReport| -> BTreeMap<String, (String, String)> {
        report
            .policies
            .iter()
            .map(|p| (policy_name(p), accepted(p)))
            .collect()
    };
    let (before, after) = (index(old), index(new));
    let names: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    names
        .into_iter()
        .filter_map(|name| {
            let o = before.get(name).map(|(reason, _)| reason.clone());
            let n = after.get(name);
            let new_reason = n.map(|(reason, _)| reason.clone());
            if o == new_reason {
                return None;
            }
            let kinds = match new_reason.as_deref() {
                Some("Invalid") => vec![ChangeKind::PolicyInvalid],
                Some("Conflicted") => vec![ChangeKind::PolicyConflicted],
                Some("TargetNotFound") => vec![ChangeKind::PolicyTargetNotFound],
                Some("Accepted") if o.is_some() => vec![ChangeKind::PolicyRecovered],
                _ => Vec::new(),
            };
            Some(PolicyChange {
                policy: name.clone(),
                old: o,
                new: new_reason,
                message: n.map(|(_, m)| m.clone()).unwrap_or_default(),
                kinds,
            })
        })
        .collect()
}

fn policy_name(p: &PolicyStatus) -> String {
    match &p.metadata.namespace {
        Some(ns) => format!("{} {ns}/{}", p.kind, p.metadata.name),
        None => format!("{} {}", p.kind, p.metadata.name),
    }
}

/// The `Accepted` condition's reason and message.
fn accepted(p: &PolicyStatus) -> (String, String) {
    p.status
        .conditions
        .iter()
        .find(|c| c.kind == "Accepted")
        .map(|c| (c.reason.clone(), c.message.clone()))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Option<Shown> {
        Some(Shown::Setting(FieldValue::Millis(v)))
    }

    #[test]
    fn no_timeout_and_zero_are_infinitely_long() {
        let k = |o: Option<Shown>, n: Option<Shown>| {
            classify("timeouts.requestMs", o.as_ref(), n.as_ref())
        };
        assert_eq!(k(None, ms(5000)), [ChangeKind::TimeoutShorter]);
        assert_eq!(k(ms(0), ms(5000)), [ChangeKind::TimeoutShorter]);
        assert_eq!(k(ms(5000), ms(0)), [ChangeKind::TimeoutLonger]);
        assert_eq!(k(ms(5000), None), [ChangeKind::TimeoutLonger]);
        assert_eq!(k(ms(5000), ms(4000)), [ChangeKind::TimeoutShorter]);
    }

    #[test]
    fn absent_attempts_are_zero_retries() {
        let count = |n| Some(Shown::Setting(FieldValue::Count(n)));
        let k =
            |o: Option<Shown>, n: Option<Shown>| classify("retry.attempts", o.as_ref(), n.as_ref());
        assert_eq!(k(None, count(1)), [ChangeKind::RetriesIncrease]);
        assert_eq!(k(count(3), None), [ChangeKind::RetriesDecrease]);
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
