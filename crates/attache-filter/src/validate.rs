//! Value checks on a route entry's enforcement settings (retry, header
//! changes): what serde's types cannot express but Envoy would reject or
//! mis-read, and the safety rules a policy may not break (docs/semantics.md,
//! "What a policy may not do"), checked again here as defence in depth with
//! the resolver's own definition (`attache_contract::safety`). Match
//! conditions are checked where they compile (`fallback`).

use attache_contract::safety::{self, NameRefusal};
use attache_contract::{HeaderChanges, RouteEntry};

use crate::error::Problem;

/// A problem inside one entry: the field path relative to the entry.
pub type EntryError = (String, Problem);

pub fn validate_settings(entry: &RouteEntry) -> Result<(), EntryError> {
    if let Some(retry) = &entry.retry {
        if let Some(attempts) = retry.attempts.filter(|&n| n > safety::MAX_RETRY_ATTEMPTS) {
            return Err(("retry.attempts".into(), Problem::RetryAttempts(attempts)));
        }
        for (j, &code) in retry.codes.iter().flatten().enumerate() {
            if !safety::is_retriable_code(code) {
                return Err((format!("retry.codes[{j}]"), Problem::StatusCode(code)));
            }
        }
        for (j, trigger) in retry.retry_on.iter().flatten().enumerate() {
            if !safety::is_retry_trigger(trigger) {
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
    let count = changes.set.len() + changes.add.len() + changes.remove.len();
    if count > safety::MAX_HEADER_OPERATIONS {
        return Err((section.to_string(), Problem::TooManyHeaderOperations(count)));
    }
    for (kind, headers) in [("set", &changes.set), ("add", &changes.add)] {
        for (j, h) in headers.iter().enumerate() {
            header_name(&h.name).map_err(|p| (format!("{section}.{kind}[{j}].name"), p))?;
            safety::check_header_value(&h.value).map_err(|r| {
                (
                    format!("{section}.{kind}[{j}].value"),
                    Problem::HeaderValue(r),
                )
            })?;
        }
    }
    for (j, name) in changes.remove.iter().enumerate() {
        header_name(name).map_err(|p| (format!("{section}.remove[{j}]"), p))?;
    }
    Ok(())
}

/// A header name a document may operate on.
fn header_name(name: &str) -> Result<(), Problem> {
    safety::check_policy_header_name(name).map_err(|why| match why {
        NameRefusal::NotAToken => Problem::HeaderName(name.to_string()),
        why => Problem::RefusedHeaderName {
            name: name.to_string(),
            why,
        },
    })
}
