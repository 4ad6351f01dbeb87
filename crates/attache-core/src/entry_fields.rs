//! Each setting's place in the schema-1 entry (docs/contract.md): the one
//! map from a [`FieldKey`] to the document field that carries it. The entry
//! (`crate::entry`) writes through it and a route's backendRef filters
//! (`crate::parse`) are read through it.

use crate::contract::{Header, HeaderChanges, Retry, Timeouts};
use crate::field::{Direction, FieldKey, FieldValue};

/// The header changes of a field map (a backendRef's own filters), request
/// then response; None where a direction has none.
pub(crate) fn header_changes(
    fields: &crate::field::FieldMap,
) -> (Option<HeaderChanges>, Option<HeaderChanges>) {
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
    /// Carries one folded field. Every key is named here (no `_` arm), and
    /// a value of another type than its key's is impossible after
    /// validation (`settings.rs` makes each key with its one type).
    pub fn carry(&mut self, key: &FieldKey, value: &FieldValue) {
        match key {
            FieldKey::RequestTimeout => self.timeouts.request_ms = millis(value),
            FieldKey::BackendRequestTimeout => self.timeouts.backend_request_ms = millis(value),
            FieldKey::RetryAttempts => {
                self.retry.attempts = match value {
                    FieldValue::Count(n) => Some(*n),
                    _ => None,
                }
            }
            FieldKey::RetryCodes => {
                self.retry.codes = match value {
                    FieldValue::Codes(c) => Some(c.clone()),
                    _ => None,
                }
            }
            FieldKey::RetryBackoff => self.retry.backoff_ms = millis(value),
            FieldKey::RetryOn => self.retry.retry_on = words(value),
            FieldKey::HeaderSet(dir, name) => {
                if let FieldValue::Text(v) = value {
                    self.headers(*dir).set.push(header(name, v));
                }
            }
            FieldKey::HeaderAdd(dir, name) => {
                if let FieldValue::Text(v) = value {
                    self.headers(*dir).add.push(header(name, v));
                }
            }
            FieldKey::HeaderRemove(dir) => {
                if let Some(names) = words(value) {
                    self.headers(*dir).remove = names;
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

fn millis(value: &FieldValue) -> Option<u64> {
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
