//! Value checks on a route entry's enforcement settings (retry, header
//! changes): what serde's types cannot express but Envoy would reject or
//! mis-read. Match conditions are checked where they compile (`fallback`).

use attache_contract::{HeaderChanges, RouteEntry};

use crate::error::Problem;
use crate::syntax;

/// A problem inside one entry: the field path relative to the entry.
pub type EntryError = (String, Problem);

pub fn validate_settings(entry: &RouteEntry) -> Result<(), EntryError> {
    if let Some(retry) = &entry.retry {
        for (j, &code) in retry.codes.iter().flatten().enumerate() {
            if !(400..=599).contains(&code) {
                return Err((format!("retry.codes[{j}]"), Problem::StatusCode(code)));
            }
        }
        for (j, trigger) in retry.retry_on.iter().flatten().enumerate() {
            if !syntax::is_retry_trigger(trigger) {
                return Err((
                    format!("retry.retryOn[{j}]"),
                    Problem::RetryTrigger(trigger.clone()),
                ));
            }
        }
    }
    if let Some(changes) = &entry.request_headers {
        validate_header_changes("requestHeaders", changes)?;
    }
    if let Some(changes) = &entry.response_headers {
        validate_header_changes("responseHeaders", changes)?;
    }
    Ok(())
}

fn validate_header_changes(section: &str, changes: &HeaderChanges) -> Result<(), EntryError> {
    for (kind, headers) in [("set", &changes.set), ("add", &changes.add)] {
        for (j, h) in headers.iter().enumerate() {
            if !syntax::is_token(&h.name) {
                return Err((
                    format!("{section}.{kind}[{j}].name"),
                    Problem::HeaderName(h.name.clone()),
                ));
            }
            if !syntax::is_header_value(&h.value) {
                return Err((format!("{section}.{kind}[{j}].value"), Problem::HeaderValue));
            }
        }
    }
    for (j, name) in changes.remove.iter().enumerate() {
        if !syntax::is_token(name) {
            return Err((
                format!("{section}.remove[{j}]"),
                Problem::HeaderName(name.clone()),
            ));
        }
    }
    Ok(())
}
