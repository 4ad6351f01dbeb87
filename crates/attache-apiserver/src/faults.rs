//! Fault injection: throttling (429 with `Retry-After`), errors for a
//! period (500 by default), slow answers, and, through the handle, dropped
//! watches and a restart. Each fault applies to the requests its [`Scope`]
//! selects.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::ApiError;
use crate::log::{RequestRecord, Verb};

/// Which requests a fault applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    All,
    /// create, update, patch, apply, delete.
    Writes,
    /// get, list, watch.
    Reads,
    /// One resource (plural), e.g. `"wasmplugins"`, any verb.
    Resource(String),
    /// One resource and subresource, e.g. `("routepolicies", "status")`.
    Subresource(String, String),
}

impl Scope {
    fn selects(&self, r: &RequestRecord) -> bool {
        if r.verb == Verb::Discovery {
            return matches!(self, Scope::All);
        }
        match self {
            Scope::All => true,
            Scope::Writes => r.verb.is_write(),
            Scope::Reads => !r.verb.is_write(),
            Scope::Resource(plural) => r.resource == *plural,
            Scope::Subresource(plural, sub) => {
                r.resource == *plural && r.subresource.as_deref() == Some(sub.as_str())
            }
        }
    }
}

#[derive(Debug, Default)]
struct Active {
    /// 429 for the next `remaining` requests.
    throttle: Option<(Scope, usize, u64)>,
    /// `code` until the instant.
    failing: Option<(Scope, u16, Instant)>,
    delay: Option<(Scope, Duration)>,
}

/// The faults in force; shared by the server and the handle.
#[derive(Debug, Default)]
pub struct Faults {
    active: Mutex<Active>,
}

impl Faults {
    fn lock(&self) -> std::sync::MutexGuard<'_, Active> {
        self.active.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next `count` requests in `scope` are answered 429 Too Many
    /// Requests with `Retry-After: retry_after_seconds`.
    pub fn throttle(&self, scope: Scope, count: usize, retry_after_seconds: u64) {
        self.lock().throttle = Some((scope, count, retry_after_seconds));
    }

    /// Requests in `scope` are answered `code` (500, 503, ...) for `period`.
    pub fn fail_for(&self, scope: Scope, code: u16, period: Duration) {
        self.lock().failing = Some((scope, code, Instant::now() + period));
    }

    /// Requests in `scope` are answered `delay` late.
    pub fn delay(&self, scope: Scope, delay: Duration) {
        self.lock().delay = Some((scope, delay));
    }

    /// Ends every fault.
    pub fn clear(&self) {
        *self.lock() = Active::default();
    }

    /// How long to hold the request back.
    pub(crate) fn delay_for(&self, r: &RequestRecord) -> Option<Duration> {
        let active = self.lock();
        let (scope, delay) = active.delay.as_ref()?;
        scope.selects(r).then_some(*delay)
    }

    /// The injected error for this request, if any.
    pub(crate) fn error_for(&self, r: &RequestRecord) -> Option<ApiError> {
        let mut active = self.lock();
        if let Some((scope, remaining, seconds)) = &mut active.throttle {
            if *remaining > 0 && scope.selects(r) {
                *remaining -= 1;
                let mut e = ApiError::new(429, "TooManyRequests", "the server has received too many requests and has asked us to try again later (injected)");
                e.retry_after = Some(*seconds);
                return Some(e);
            }
        }
        if let Some((scope, code, until)) = &active.failing {
            if Instant::now() < *until && scope.selects(r) {
                let reason = match code {
                    503 => "ServiceUnavailable",
                    504 => "Timeout",
                    _ => "InternalError",
                };
                return Some(ApiError::new(
                    *code,
                    reason,
                    "an error on the server (injected) has prevented the request from succeeding",
                ));
            }
        }
        None
    }
}
