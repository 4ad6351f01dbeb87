//! Request timeouts: fire after about the configured time and never before;
//! `0s` disables them.

use std::time::Duration;

use crate::harness::stack::{Fixture, Stack};

pub fn basics() -> Fixture {
    Fixture::named("basics", "infra/edge", &["shop/echo"])
}

/// Slack for a loaded 2-core machine; lower bounds get none.
pub const SLACK: Duration = Duration::from_millis(1500);

#[test]
fn request_timeout_gives_504_after_the_configured_time_and_not_before() {
    let stack = Stack::start(&basics());

    // The policy says 500ms; a 300ms answer is not cut short.
    let quick = stack.get("/timeout", &[("x-backend-delay-ms", "300")]);
    assert_eq!(quick.status, 200, "{}", quick.body);

    let slow = stack.get("/timeout", &[("x-backend-delay-ms", "2500")]);
    assert_eq!(slow.status, 504, "{}", slow.body);
    assert!(
        slow.elapsed >= Duration::from_millis(500),
        "timed out early: {:?}",
        slow.elapsed
    );
    assert!(
        slow.elapsed < Duration::from_millis(500) + SLACK,
        "timed out late: {:?}",
        slow.elapsed
    );
}

#[test]
fn zero_request_timeout_disables_the_inherited_one() {
    let stack = Stack::start(&basics());

    // Control: a route without its own timeout inherits the Gateway's 3s.
    let inherited = stack.get("/plain", &[("x-backend-delay-ms", "3500")]);
    assert_eq!(inherited.status, 504, "{}", inherited.body);
    assert!(
        inherited.elapsed >= Duration::from_secs(3),
        "{:?}",
        inherited.elapsed
    );

    // The same wait on the `0s` route completes.
    let disabled = stack.get("/no-timeout", &[("x-backend-delay-ms", "3500")]);
    assert_eq!(disabled.status, 200, "{}", disabled.body);
    assert!(
        disabled.elapsed >= Duration::from_millis(3500),
        "{:?}",
        disabled.elapsed
    );
}
