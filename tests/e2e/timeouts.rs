//! Request timeouts: fire after about the configured time and never before;
//! `0s` disables them.

use std::time::Duration;

use crate::harness::stack::{Fixture, Stack};

pub fn basics() -> Fixture {
    Fixture::named("basics", "infra/edge", &["shop/echo"])
}

/// Slack for a loaded 2-core machine, on upper bounds only.
pub const SLACK: Duration = Duration::from_millis(1500);

/// Envoy's timers tick in milliseconds and can fire a fraction of one early
/// (seen: 2999.4ms for 3s); far below any timeout the fixtures configure.
const TIMER_GRAIN: Duration = Duration::from_millis(20);

/// The answer came no sooner than `configured` allows.
pub fn assert_not_before(elapsed: Duration, configured: Duration) {
    assert!(
        elapsed + TIMER_GRAIN >= configured,
        "answered after {elapsed:?}, before the configured {configured:?}"
    );
}

/// The answer came after about `configured`: not before, not much later.
pub fn assert_about(elapsed: Duration, configured: Duration) {
    assert_not_before(elapsed, configured);
    assert!(
        elapsed < configured + SLACK,
        "answered after {elapsed:?}, long after the configured {configured:?}"
    );
}

#[test]
fn request_timeout_gives_504_after_the_configured_time_and_not_before() {
    let stack = Stack::start(&basics());

    // The policy says 500ms; a 300ms answer is not cut short.
    let quick = stack.get("/timeout", &[("x-backend-delay-ms", "300")]);
    assert_eq!(quick.status, 200, "{}", quick.body);

    let slow = stack.get("/timeout", &[("x-backend-delay-ms", "2500")]);
    assert_eq!(slow.status, 504, "{}", slow.body);
    assert_about(slow.elapsed, Duration::from_millis(500));
}

#[test]
fn zero_request_timeout_disables_the_inherited_one() {
    let stack = Stack::start(&basics());

    // Control: a route without its own timeout inherits the Gateway's 3s.
    let inherited = stack.get("/plain", &[("x-backend-delay-ms", "3500")]);
    assert_eq!(inherited.status, 504, "{}", inherited.body);
    assert_about(inherited.elapsed, Duration::from_secs(3));

    // The same wait on the `0s` route completes.
    let disabled = stack.get("/no-timeout", &[("x-backend-delay-ms", "3500")]);
    assert_eq!(disabled.status, 200, "{}", disabled.body);
    assert!(
        disabled.elapsed >= Duration::from_millis(3500),
        "{:?}",
        disabled.elapsed
    );
}
