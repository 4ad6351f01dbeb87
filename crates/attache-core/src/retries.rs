//! Gateway API's retry semantics (GEP-1731) after the fold: a retry stanza
//! in effect also retries connection errors. "Implementations SHOULD retry
//! on connection errors (disconnect, reset, timeout, TCP failure) if a retry
//! stanza is configured" (HTTPRoute API), and the conformance tests
//! `HTTPRouteRetryConnectionError` and `HTTPRouteRetryWithTimeouts` check
//! it. In Envoy's terms: `connect-failure`, `refused-stream` and `reset`
//! (which also covers a per-try timeout) join the effective `retryOn`.
//! docs/semantics.md says what this means for non-idempotent requests.

use crate::field::{FieldKey, FieldValue};
use crate::fold::{Effective, Folded};

/// What a retry stanza in effect always retries, in Envoy's `retry_on` words.
pub const CONNECTION_ERRORS: [&str; 3] = ["connect-failure", "refused-stream", "reset"];

/// The note `explain` shows when [`add_connection_errors`] changed a rule.
pub const NOTE: &str = "retry.retryOn: connect-failure, refused-stream and reset added: a retry stanza in effect retries connection errors (Gateway API, GEP-1731)";

/// Adds [`CONNECTION_ERRORS`] to the effective `retryOn` when retries are in
/// effect: `attempts` above 0, or `attempts` unset with `codes` or `retryOn`
/// set (Envoy then retries once). `attempts: 0` disables retries, and a
/// stanza with only a back-off asks for none. Returns whether it changed
/// anything. A `retryOn` that did not exist is credited to whoever enabled
/// retries (`attempts`, else `codes`).
pub(crate) fn add_connection_errors(folded: &mut Folded) -> bool {
    let attempts = match folded
        .fields
        .get(&FieldKey::RetryAttempts)
        .map(|e| &e.value)
    {
        Some(FieldValue::Count(n)) => Some(*n),
        _ => None,
    };
    let asked = folded.fields.contains_key(&FieldKey::RetryCodes)
        || folded.fields.contains_key(&FieldKey::RetryOn);
    let in_effect = match attempts {
        Some(n) => n > 0,
        None => asked,
    };
    if !in_effect {
        return false;
    }
    let enabler = [
        FieldKey::RetryAttempts,
        FieldKey::RetryCodes,
        FieldKey::RetryOn,
    ]
    .iter()
    .find_map(|key| folded.fields.get(key))
    .map(|e| e.suppliers.clone())
    .unwrap_or_default();
    let entry = folded
        .fields
        .entry(FieldKey::RetryOn)
        .or_insert_with(|| Effective {
            value: FieldValue::Words(Vec::new()),
            suppliers: enabler,
        });
    let FieldValue::Words(words) = &mut entry.value else {
        return false;
    };
    let mut changed = false;
    for trigger in CONNECTION_ERRORS {
        if !words.iter().any(|w| w == trigger) {
            words.push(trigger.to_string());
            changed = true;
        }
    }
    changed
}
