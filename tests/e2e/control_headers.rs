//! A client's own Envoy control headers cannot lengthen or multiply what the
//! policy says (the filter strips them unless the document trusts clients).

use std::time::Duration;

use crate::harness::backend::unique_key;
use crate::harness::stack::Stack;
use crate::timeouts::{basics, SLACK};

#[test]
fn client_timeout_header_cannot_lengthen_the_policy_timeout() {
    let stack = Stack::start(&basics());
    let reply = stack.get(
        "/timeout",
        &[
            ("x-envoy-upstream-rq-timeout-ms", "10000"),
            ("x-backend-delay-ms", "2500"),
        ],
    );
    assert_eq!(reply.status, 504, "{}", reply.body);
    assert!(
        reply.elapsed < Duration::from_millis(500) + SLACK,
        "{:?}",
        reply.elapsed
    );
}

#[test]
fn client_retry_headers_cannot_multiply_attempts() {
    let stack = Stack::start(&basics());

    // The policy allows 2 retries; the client asks for 10.
    let key = unique_key("more-retries");
    let reply = stack.get(
        "/retry",
        &[
            ("x-envoy-max-retries", "10"),
            ("x-envoy-retry-on", "5xx"),
            ("x-backend-key", &key),
            ("x-backend-fail-times", "9"),
        ],
    );
    assert_eq!(reply.status, 503, "{}", reply.body);
    assert_eq!(stack.backend.attempts(&key), 3);

    // No retry policy at all: the client cannot switch retries on.
    let key = unique_key("no-retries");
    let reply = stack.get(
        "/plain",
        &[
            ("x-envoy-max-retries", "3"),
            ("x-envoy-retry-on", "5xx"),
            ("x-backend-key", &key),
            ("x-backend-fail-times", "1"),
        ],
    );
    assert_eq!(reply.status, 503, "{}", reply.body);
    assert_eq!(stack.backend.attempts(&key), 1);

    // And the stripped headers never reach the backend.
    let reply = stack.get("/plain", &[("x-envoy-max-retries", "3")]);
    assert_eq!(reply.echoed_header("x-envoy-max-retries"), None);
}
