//! What the client asked the backend to do, read from `x-backend-*` request
//! headers, and the answer that follows for a given attempt number.
//!
//! Pure: no I/O, so the fail-N-times logic is tested natively.

use std::time::Duration;

/// Status returned by default while `x-backend-fail-times` is not exhausted.
pub const DEFAULT_FAIL_STATUS: u16 = 503;

/// The request's control headers, parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// `x-backend-key`: groups attempts of one logical request.
    pub key: Option<String>,
    /// `x-backend-status`: the failure status (or the status of every
    /// answer when `fail_times` is absent).
    pub status: Option<u16>,
    /// `x-backend-fail-times`: fail this many attempts of the key, then 200.
    pub fail_times: Option<u64>,
    /// `x-backend-delay-ms`: sleep before answering.
    pub delay: Option<Duration>,
    /// `x-backend-delay-times`: only the first N attempts of the key sleep
    /// (absent: every attempt sleeps). Lets a test show a per-try timeout
    /// followed by a fast retry.
    pub delay_times: Option<u64>,
    /// `x-backend-respond-header: name: value` (repeatable): headers to put
    /// on the response, so tests can watch the filter change or remove them.
    pub respond_headers: Vec<(String, String)>,
    /// `x-backend-reset-times`: the first N attempts of the key read the
    /// request and close the connection without answering (what Gateway
    /// API's `HTTPRouteRetryConnectionError` conformance test provokes).
    pub reset_times: Option<u64>,
}

/// A control header whose value the backend cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("header {header}: {value:?} is not valid; expected {expected}")]
    Invalid {
        header: &'static str,
        value: String,
        expected: &'static str,
    },
}

/// What to answer for one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub status: u16,
    pub delay: Option<Duration>,
    /// Close the connection instead of answering.
    pub reset: bool,
}

impl Plan {
    /// Reads the control headers from `(lower-case name, value)` pairs.
    pub fn from_headers<'a, I>(headers: I) -> Result<Plan, PlanError>
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        let mut plan = Plan::default();
        for (name, value) in headers {
            let value = value.trim();
            match name {
                "x-backend-key" => plan.key = Some(value.to_owned()),
                "x-backend-status" => plan.status = Some(parse_status(value)?),
                "x-backend-fail-times" => {
                    plan.fail_times = Some(parse_count("x-backend-fail-times", value)?)
                }
                "x-backend-delay-ms" => {
                    let ms = parse_count("x-backend-delay-ms", value)?;
                    plan.delay = Some(Duration::from_millis(ms));
                }
                "x-backend-delay-times" => {
                    plan.delay_times = Some(parse_count("x-backend-delay-times", value)?)
                }
                "x-backend-respond-header" => plan.respond_headers.push(parse_header(value)?),
                "x-backend-reset-times" => {
                    plan.reset_times = Some(parse_count("x-backend-reset-times", value)?)
                }
                _ => {}
            }
        }
        Ok(plan)
    }

    /// The answer for the `attempt`-th (1-based) attempt of this plan's key.
    pub fn outcome(&self, attempt: u64) -> Outcome {
        let status = match (self.fail_times, self.status) {
            (Some(times), failure) if attempt <= times => failure.unwrap_or(DEFAULT_FAIL_STATUS),
            (Some(_), _) => 200,
            (None, Some(status)) => status,
            (None, None) => 200,
        };
        let delay = match self.delay_times {
            Some(times) if attempt > times => None,
            _ => self.delay,
        };
        let reset = self.reset_times.is_some_and(|times| attempt <= times);
        Outcome {
            status,
            delay,
            reset,
        }
    }
}

fn parse_status(value: &str) -> Result<u16, PlanError> {
    match value.parse::<u16>() {
        Ok(status) if (200..=599).contains(&status) => Ok(status),
        _ => Err(PlanError::Invalid {
            header: "x-backend-status",
            value: value.to_owned(),
            expected: "an HTTP status code from 200 to 599",
        }),
    }
}

fn parse_count(header: &'static str, value: &str) -> Result<u64, PlanError> {
    value.parse::<u64>().map_err(|_| PlanError::Invalid {
        header,
        value: value.to_owned(),
        expected: "a non-negative integer",
    })
}

fn parse_header(value: &str) -> Result<(String, String), PlanError> {
    match value.split_once(':') {
        Some((name, header_value))
            if crate::http::valid_header(name.trim(), header_value.trim()) =>
        {
            Ok((
                name.trim().to_ascii_lowercase(),
                header_value.trim().to_owned(),
            ))
        }
        _ => Err(PlanError::Invalid {
            header: "x-backend-respond-header",
            value: value.to_owned(),
            expected: "`name: value`",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(headers: &[(&str, &str)]) -> Plan {
        Plan::from_headers(headers.iter().copied()).unwrap()
    }

    #[test]
    fn no_control_headers_answers_200_at_once() {
        let plan = plan(&[("accept", "*/*")]);
        assert_eq!(
            plan.outcome(1),
            Outcome {
                status: 200,
                delay: None,
                reset: false
            }
        );
    }

    #[test]
    fn reset_times_closes_the_first_attempts_then_answers() {
        let plan = plan(&[("x-backend-key", "k"), ("x-backend-reset-times", "2")]);
        assert!(plan.outcome(1).reset);
        assert!(plan.outcome(2).reset);
        assert!(!plan.outcome(3).reset);
        assert_eq!(plan.outcome(3).status, 200);
    }

    #[test]
    fn fail_times_fails_the_first_attempts_with_503_then_succeeds() {
        let plan = plan(&[("x-backend-key", "k"), ("x-backend-fail-times", "2")]);
        assert_eq!(plan.outcome(1).status, 503);
        assert_eq!(plan.outcome(2).status, 503);
        assert_eq!(plan.outcome(3).status, 200);
        assert_eq!(plan.outcome(4).status, 200);
    }

    #[test]
    fn fail_times_uses_the_requested_failure_status() {
        let plan = plan(&[("x-backend-fail-times", "1"), ("x-backend-status", "502")]);
        assert_eq!(plan.outcome(1).status, 502);
        assert_eq!(plan.outcome(2).status, 200);
    }

    #[test]
    fn status_without_fail_times_applies_to_every_attempt() {
        let plan = plan(&[("x-backend-status", "418")]);
        assert_eq!(plan.outcome(1).status, 418);
        assert_eq!(plan.outcome(9).status, 418);
    }

    #[test]
    fn zero_fail_times_never_fails() {
        let plan = plan(&[("x-backend-fail-times", "0"), ("x-backend-status", "500")]);
        assert_eq!(plan.outcome(1).status, 200);
    }

    #[test]
    fn delay_applies_to_every_attempt_unless_limited() {
        let every = plan(&[("x-backend-delay-ms", "300")]);
        assert_eq!(every.outcome(5).delay, Some(Duration::from_millis(300)));

        let first = plan(&[
            ("x-backend-delay-ms", "300"),
            ("x-backend-delay-times", "1"),
        ]);
        assert_eq!(first.outcome(1).delay, Some(Duration::from_millis(300)));
        assert_eq!(first.outcome(2).delay, None);
    }

    #[test]
    fn respond_headers_are_lower_cased_and_repeatable() {
        let plan = plan(&[
            ("x-backend-respond-header", "X-Internal: secret"),
            ("x-backend-respond-header", "server: test"),
        ]);
        assert_eq!(
            plan.respond_headers,
            vec![
                ("x-internal".to_owned(), "secret".to_owned()),
                ("server".to_owned(), "test".to_owned())
            ]
        );
    }

    #[test]
    fn bad_values_name_the_header_and_what_is_valid() {
        let err = Plan::from_headers([("x-backend-fail-times", "two")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "header x-backend-fail-times: \"two\" is not valid; expected a non-negative integer"
        );
        let err = Plan::from_headers([("x-backend-status", "99")]).unwrap_err();
        assert!(err.to_string().contains("200 to 599"), "{err}");
        let err = Plan::from_headers([("x-backend-respond-header", "novalue")]).unwrap_err();
        assert!(err.to_string().contains("`name: value`"), "{err}");
    }
}
