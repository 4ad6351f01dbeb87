//! Each setting's place in the schema-1 entry (docs/contract.md): the one
//! table from a [`FieldKey`] to the policy field it is written as and the
//! entry field that carries it. Everything that goes between a key and the
//! document reads it:
//!
//! - the entry (`crate::entry`, through [`Settings::carry`]) and a route's
//!   backendRef filters (`crate::parse`, through [`header_changes`]) write
//!   through it;
//! - `attache diff` reads an entry back into keys through it ([`read_back`]);
//! - a key's document path (its `Display`, the keys of `sources`) and its
//!   policy field name (`crate::settings`'s messages) come from it.
//!
//! The table is one `settings_table!` invocation. The macro makes the match
//! over [`FieldKey`] exhaustive (no `_` arm), so a new key does not compile
//! until it has a row here, and the list every reader walks ([`SCALARS`])
//! is made from the same rows.

use crate::contract::{Header, HeaderChanges, Retry, RouteEntry, Timeouts};
use crate::field::{Direction, FieldKey, FieldMap, FieldValue};

/// Where one setting sits in the entry and how its value is typed there.
#[derive(Clone, Copy)]
enum Slot {
    Millis(fn(&mut Settings) -> &mut Option<u64>),
    Count(fn(&mut Settings) -> &mut Option<u32>),
    Codes(fn(&mut Settings) -> &mut Option<Vec<u16>>),
    Words(fn(&mut Settings) -> &mut Option<Vec<String>>),
    /// `set`, `add` or `remove` of one direction's header changes.
    Header(Direction, HeaderOp),
}

#[derive(Clone, Copy)]
enum HeaderOp {
    Set,
    Add,
    Remove,
}

/// One row per scalar key: `Key => group / policy name / entry path, slot`.
/// Header keys (one per header name) are the three arms after the rows.
macro_rules! settings_table {
    ($($key:ident => $policy:literal, $path:literal, $slot:expr;)*) => {
        /// Every scalar key, in table order (header keys are per name).
        pub(crate) const SCALARS: &[FieldKey] = &[$(FieldKey::$key),*];

        /// The row of `key`. Exhaustive: no `_` arm.
        fn row(key: &FieldKey) -> (&'static str, Slot) {
            match key {
                $(FieldKey::$key => ($policy, $slot),)*
                FieldKey::HeaderSet(d, _) => ("set", Slot::Header(*d, HeaderOp::Set)),
                FieldKey::HeaderAdd(d, _) => ("add", Slot::Header(*d, HeaderOp::Add)),
                FieldKey::HeaderRemove(d) => ("remove", Slot::Header(*d, HeaderOp::Remove)),
            }
        }

        /// The entry path of a scalar key (`timeouts.requestMs`); None for
        /// header keys, whose path has the header name in it.
        pub(crate) fn scalar_path(key: &FieldKey) -> Option<&'static str> {
            match key {
                $(FieldKey::$key => Some($path),)*
                FieldKey::HeaderSet(..) | FieldKey::HeaderAdd(..) | FieldKey::HeaderRemove(..) => None,
            }
        }
    };
}

settings_table! {
    RequestTimeout => "request", "timeouts.requestMs",
        Slot::Millis(|s| &mut s.timeouts.request_ms);
    BackendRequestTimeout => "backendRequest", "timeouts.backendRequestMs",
        Slot::Millis(|s| &mut s.timeouts.backend_request_ms);
    RetryAttempts => "attempts", "retry.attempts",
        Slot::Count(|s| &mut s.retry.attempts);
    RetryCodes => "codes", "retry.codes",
        Slot::Codes(|s| &mut s.retry.codes);
    RetryBackoff => "backoff", "retry.backoffMs",
        Slot::Millis(|s| &mut s.retry.backoff_ms);
    RetryOn => "retryOn", "retry.retryOn",
        Slot::Words(|s| &mut s.retry.retry_on);
}

/// The field's name in a policy's settings (`backendRequest`, `retryOn`,
/// `set`), for messages that name where a value was written.
pub(crate) fn policy_name(key: &FieldKey) -> &'static str {
    row(key).0
}

/// The header changes of a field map (a backendRef's own filters), request
/// then response; None where a direction has none.
pub(crate) fn header_changes(fields: &FieldMap) -> (Option<HeaderChanges>, Option<HeaderChanges>) {
    let mut settings = Settings::default();
    for (key, value) in fields {
        settings.carry(key, value);
    }
    let some = |c: HeaderChanges| (!c.is_empty()).then_some(c);
    (some(settings.request), some(settings.response))
}

/// The entry's settings, filled field by field.
#[derive(Default)]
pub(crate) struct Settings {
    pub timeouts: Timeouts,
    pub retry: Retry,
    pub request: HeaderChanges,
    pub response: HeaderChanges,
}

impl Settings {
    /// Carries one folded field into its slot. A value of another type
    /// than its key's is impossible after validation (`settings/mod.rs` makes
    /// each key with its one type); it would leave the slot unset.
    pub fn carry(&mut self, key: &FieldKey, value: &FieldValue) {
        match (row(key).1, value) {
            (Slot::Millis(at), v) => *at(self) = matches_millis(v),
            (Slot::Count(at), FieldValue::Count(n)) => *at(self) = Some(*n),
            (Slot::Count(at), _) => *at(self) = None,
            (Slot::Codes(at), FieldValue::Codes(c)) => *at(self) = Some(c.clone()),
            (Slot::Codes(at), _) => *at(self) = None,
            (Slot::Words(at), v) => *at(self) = words(v),
            (Slot::Header(dir, op), v) => {
                let name = match key {
                    FieldKey::HeaderSet(_, n) | FieldKey::HeaderAdd(_, n) => n.as_str(),
                    _ => "",
                };
                let changes = self.headers(dir);
                match (op, v) {
                    (HeaderOp::Set, FieldValue::Text(t)) => changes.set.push(header(name, t)),
                    (HeaderOp::Add, FieldValue::Text(t)) => changes.add.push(header(name, t)),
                    (HeaderOp::Remove, v) => {
                        if let Some(names) = words(v) {
                            changes.remove = names;
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    fn headers(&mut self, dir: Direction) -> &mut HeaderChanges {
        match dir {
            Direction::Request => &mut self.request,
            Direction::Response => &mut self.response,
        }
    }
}

/// The settings an entry carries, as keys and values: the inverse of
/// [`Settings::carry`], through the same slots. Scalars in table order, then
/// per direction the header `set`, `add` and `remove` entries in document
/// order.
///
/// Every setting is named (no `..`): a new one does not compile until
/// `attache diff` and `explain` can read it back.
pub(crate) fn read_back(entry: &RouteEntry) -> Vec<(FieldKey, FieldValue)> {
    let crate::contract::Settings {
        timeouts,
        retry,
        request_headers,
        response_headers,
    } = &entry.settings;
    let mut s = Settings {
        timeouts: timeouts.clone().unwrap_or_default(),
        retry: retry.clone().unwrap_or_default(),
        request: HeaderChanges::default(),
        response: HeaderChanges::default(),
    };
    let mut out: Vec<(FieldKey, FieldValue)> = SCALARS
        .iter()
        .filter_map(|key| {
            let value = match row(key).1 {
                Slot::Millis(at) => at(&mut s).map(FieldValue::Millis),
                Slot::Count(at) => at(&mut s).map(FieldValue::Count),
                Slot::Codes(at) => at(&mut s).clone().map(FieldValue::Codes),
                Slot::Words(at) => at(&mut s).clone().map(FieldValue::Words),
                Slot::Header(..) => None,
            };
            Some((key.clone(), value?))
        })
        .collect();
    for (dir, changes) in [
        (Direction::Request, request_headers),
        (Direction::Response, response_headers),
    ] {
        let Some(changes) = changes else { continue };
        for h in &changes.set {
            let key = FieldKey::HeaderSet(dir, h.name.clone());
            out.push((key, FieldValue::Text(h.value.clone())));
        }
        for h in &changes.add {
            let key = FieldKey::HeaderAdd(dir, h.name.clone());
            out.push((key, FieldValue::Text(h.value.clone())));
        }
        if !changes.remove.is_empty() {
            let key = FieldKey::HeaderRemove(dir);
            out.push((key, FieldValue::Words(changes.remove.clone())));
        }
    }
    out
}

fn matches_millis(value: &FieldValue) -> Option<u64> {
    match value {
        FieldValue::Millis(ms) => Some(*ms),
        _ => None,
    }
}

fn words(value: &FieldValue) -> Option<Vec<String>> {
    match value {
        FieldValue::Words(w) => Some(w.clone()),
        _ => None,
    }
}

fn header(name: &str, value: &str) -> Header {
    Header {
        name: name.to_string(),
        value: value.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_setting() -> FieldMap {
        let mut map = FieldMap::new();
        map.insert(FieldKey::RequestTimeout, FieldValue::Millis(1500));
        map.insert(FieldKey::BackendRequestTimeout, FieldValue::Millis(700));
        map.insert(FieldKey::RetryAttempts, FieldValue::Count(2));
        map.insert(FieldKey::RetryCodes, FieldValue::Codes(vec![502, 503]));
        map.insert(FieldKey::RetryBackoff, FieldValue::Millis(25));
        map.insert(
            FieldKey::RetryOn,
            FieldValue::Words(vec!["reset".into(), "5xx".into()]),
        );
        for dir in [Direction::Request, Direction::Response] {
            map.insert(
                FieldKey::HeaderSet(dir, "x-a".into()),
                FieldValue::Text("1".into()),
            );
            map.insert(
                FieldKey::HeaderAdd(dir, "x-b".into()),
                FieldValue::Text("2".into()),
            );
            map.insert(
                FieldKey::HeaderRemove(dir),
                FieldValue::Words(vec!["x-c".into()]),
            );
        }
        map
    }

    #[test]
    fn reading_an_entry_back_gives_every_carried_setting() {
        let fields = every_setting();
        let mut s = Settings::default();
        for (key, value) in &fields {
            s.carry(key, value);
        }
        let entry = RouteEntry {
            settings: crate::contract::Settings {
                timeouts: Some(s.timeouts),
                retry: Some(s.retry),
                request_headers: Some(s.request),
                response_headers: Some(s.response),
            },
            ..RouteEntry::default()
        };
        let back: FieldMap = read_back(&entry).into_iter().collect();
        assert_eq!(back, fields);
        // Every scalar of the table was exercised (a new row needs a value above).
        for key in SCALARS {
            assert!(back.contains_key(key), "{key}");
        }
    }

    #[test]
    fn each_scalar_has_its_own_path_and_the_display_is_it() {
        let paths: std::collections::BTreeSet<_> = SCALARS.iter().filter_map(scalar_path).collect();
        assert_eq!(paths.len(), SCALARS.len());
        assert_eq!(
            FieldKey::BackendRequestTimeout.to_string(),
            "timeouts.backendRequestMs"
        );
        assert_eq!(policy_name(&FieldKey::RetryOn), "retryOn");
    }
}
