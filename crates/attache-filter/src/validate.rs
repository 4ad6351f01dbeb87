//! Value checks on a route entry's enforcement settings (retry, header
//! changes): what serde's types cannot express but Envoy would reject or
//! mis-read, and the safety rules a policy may not break (docs/semantics.md,
//! "What a policy may not do"), checked again here as defence in depth with
//! the resolver's own definition (`attache_contract::safety`). Match
//! conditions are checked where they compile (`fallback`).

use attache_contract::safety::{self, NameRefusal};
use attache_contract::table::{Changes, ProfileVisitor};
use attache_contract::{HeaderChanges, Retry, Settings, Timeouts};

use crate::error::Problem;

/// A problem inside one entry: the field path relative to the entry.
pub type EntryError = (String, Problem);

pub fn validate_settings(settings: &Settings) -> Result<(), EntryError> {
    // Every settings field is named (no `..`): a new one does not compile
    // until it is checked here or declared free of checks.
    let Settings {
        timeouts,
        retry,
        request_headers,
        response_headers,
    } = settings;
    if let Some(Timeouts {
        // Any u64 of milliseconds is a timeout Envoy takes (0: none).
        request_ms: _,
        backend_request_ms: _,
    }) = timeouts
    {}
    if let Some(Retry {
        attempts: count,
        codes,
        // Any u64 is a back-off Envoy takes; zero is refused when rendered.
        backoff_ms: _,
        retry_on: triggers,
    }) = retry
    {
        attempts(*count)?;
        for (j, &c) in codes.iter().flatten().enumerate() {
            code(j, c)?;
        }
        for (j, trigger) in triggers.iter().flatten().enumerate() {
            retry_on(j, trigger)?;
        }
    }
    for (which, changes) in [
        (Changes::Request, request_headers),
        (Changes::Response, response_headers),
    ] {
        let Some(HeaderChanges {
            set,
            add: added,
            remove: removed,
        }) = changes
        else {
            continue;
        };
        operations(which, set.len() + added.len() + removed.len())?;
        for (add, headers) in [(false, set), (true, added)] {
            for (j, h) in headers.iter().enumerate() {
                header(which, add, j, &h.name, &h.value)?;
            }
        }
        for (j, name) in removed.iter().enumerate() {
            remove(which, j, name)?;
        }
    }
    Ok(())
}

/// The same checks on a table's profile record, as it is read: no entry is
/// built (attache_contract::table::walk_profile). The checks are the
/// functions `validate_settings` calls, in the same order, so both refuse
/// alike.
pub struct CheckRecord;

impl<'a> ProfileVisitor<'a> for CheckRecord {
    type Error = EntryError;

    fn timeouts(&mut self, _: Option<u64>, _: Option<u64>) -> Result<(), EntryError> {
        Ok(())
    }

    fn retry(&mut self, n: Option<u32>, _: Option<u64>) -> Result<(), EntryError> {
        attempts(n)
    }

    fn retry_lists(&mut self, _: bool, _: bool) -> Result<(), EntryError> {
        Ok(())
    }

    fn code(&mut self, j: usize, c: u16) -> Result<(), EntryError> {
        code(j, c)
    }

    fn retry_on(&mut self, j: usize, trigger: &'a str) -> Result<(), EntryError> {
        retry_on(j, trigger)
    }

    fn changes(
        &mut self,
        which: Changes,
        set: usize,
        add: usize,
        remove: usize,
    ) -> Result<(), EntryError> {
        operations(which, set + add + remove)
    }

    fn header(
        &mut self,
        which: Changes,
        add: bool,
        j: usize,
        name: &'a str,
        value: &'a str,
    ) -> Result<(), EntryError> {
        header(which, add, j, name, value)
    }

    fn remove(&mut self, which: Changes, j: usize, name: &'a str) -> Result<(), EntryError> {
        remove(which, j, name)
    }
}

fn attempts(attempts: Option<u32>) -> Result<(), EntryError> {
    match attempts.filter(|&n| n > safety::MAX_RETRY_ATTEMPTS) {
        Some(n) => Err(("retry.attempts".into(), Problem::RetryAttempts(n))),
        None => Ok(()),
    }
}

fn code(j: usize, code: u16) -> Result<(), EntryError> {
    if safety::is_retriable_code(code) {
        return Ok(());
    }
    Err((format!("retry.codes[{j}]"), Problem::StatusCode(code)))
}

fn retry_on(j: usize, trigger: &str) -> Result<(), EntryError> {
    if safety::is_retry_trigger(trigger) {
        return Ok(());
    }
    let problem = Problem::RetryTrigger(trigger.to_string());
    Err((format!("retry.retryOn[{j}]"), problem))
}

fn operations(which: Changes, count: usize) -> Result<(), EntryError> {
    if count > safety::MAX_HEADER_OPERATIONS {
        let problem = Problem::TooManyHeaderOperations(count);
        return Err((which.field().to_string(), problem));
    }
    Ok(())
}

fn header(which: Changes, add: bool, j: usize, name: &str, value: &str) -> Result<(), EntryError> {
    let (section, kind) = (which.field(), if add { "add" } else { "set" });
    header_name(name).map_err(|p| (format!("{section}.{kind}[{j}].name"), p))?;
    safety::check_header_value(value).map_err(|r| {
        (
            format!("{section}.{kind}[{j}].value"),
            Problem::HeaderValue(r),
        )
    })
}

fn remove(which: Changes, j: usize, name: &str) -> Result<(), EntryError> {
    header_name(name).map_err(|p| (format!("{}.remove[{j}]", which.field()), p))
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
