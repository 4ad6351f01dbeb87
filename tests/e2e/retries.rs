//! Retries as the policy says: listed codes retried up to `attempts` more
//! times, unlisted codes not at all, the per-try timeout per attempt.

use std::time::Duration;

use crate::harness::backend::unique_key;
use crate::harness::stack::Stack;
use crate::timeouts::{assert_about, assert_not_before, basics};

#[test]
fn listed_code_is_retried_until_success_and_unlisted_code_is_not() {
    let stack = Stack::start(&basics());

    let key = unique_key("listed");
    let reply = stack.get(
        "/retry",
        &[
            ("x-backend-key", &key),
            ("x-backend-fail-times", "2"),
            ("x-backend-status", "503"),
        ],
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(stack.backend.attempts(&key), 3);
    assert_eq!(reply.header_values("x-backend-attempt"), ["3"]);

    let key = unique_key("unlisted");
    let reply = stack.get(
        "/retry",
        &[
            ("x-backend-key", &key),
            ("x-backend-fail-times", "2"),
            ("x-backend-status", "500"),
        ],
    );
    assert_eq!(reply.status, 500, "{}", reply.body);
    assert_eq!(stack.backend.attempts(&key), 1);

    // attempts: 2 means at most 3 tries in all.
    let key = unique_key("exhausted");
    let reply = stack.get(
        "/retry",
        &[
            ("x-backend-key", &key),
            ("x-backend-fail-times", "9"),
            ("x-backend-status", "503"),
        ],
    );
    assert_eq!(reply.status, 503, "{}", reply.body);
    assert_eq!(stack.backend.attempts(&key), 3);
}

#[test]
fn per_try_timeout_counts_for_each_attempt() {
    let stack = Stack::start(&basics());
    let per_try = Duration::from_millis(300);

    // Only the first attempt is slow: it is cut at 300ms and the retry
    // answers, long before the slow attempt would have.
    let key = unique_key("first-slow");
    let reply = stack.get(
        "/per-try",
        &[
            ("x-backend-key", &key),
            ("x-backend-delay-ms", "2000"),
            ("x-backend-delay-times", "1"),
        ],
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(stack.backend.attempts(&key), 2);
    assert_not_before(reply.elapsed, per_try);
    assert!(
        reply.elapsed < Duration::from_millis(2000),
        "{:?}",
        reply.elapsed
    );

    // Every attempt is slow: three tries of 300ms each, then 504, well
    // inside the 5s request timeout.
    let key = unique_key("all-slow");
    let reply = stack.get(
        "/per-try",
        &[("x-backend-key", &key), ("x-backend-delay-ms", "2000")],
    );
    assert_eq!(reply.status, 504, "{}", reply.body);
    assert_eq!(stack.backend.attempts(&key), 3);
    assert_about(reply.elapsed, per_try * 3);
}

/// GEP-1731: `attempts: 2` and no codes (tests/fixtures/e2e/gep1731).
fn gep1731() -> crate::harness::stack::Fixture {
    // Port 1 (tcpmux) has no listener here: connecting is refused.
    crate::harness::stack::Fixture::named(
        "gep1731",
        "infra/edge",
        &[
            "shop/echo",
            "shop/echo-a",
            "shop/echo-b",
            "shop/closed=127.0.0.1:1",
        ],
    )
}

#[test]
fn a_retry_stanza_without_codes_retries_connection_errors_and_not_a_500() {
    let stack = Stack::start(&gep1731());

    // A backend that reads the request and closes the connection twice.
    let key = unique_key("gep1731-reset");
    let reply = stack.get(
        "/retry",
        &[("x-backend-key", &key), ("x-backend-reset-times", "2")],
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(stack.backend.attempts(&key), 3, "two resets retried");

    // Per-try timeouts (300ms from the policy): two slow tries, then a fast one.
    let key = unique_key("gep1731-per-try");
    let reply = stack.get(
        "/slow",
        &[
            ("x-backend-key", &key),
            ("x-backend-delay-ms", "1500"),
            ("x-backend-delay-times", "2"),
        ],
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        stack.backend.attempts(&key),
        3,
        "two per-try timeouts retried"
    );

    // A refused connection: Envoy retries it twice, then gives up.
    let retries = "cluster.shop/closed/9000.upstream_rq_retry";
    let before = stack.envoy.stat(retries);
    let reply = stack.get("/closed", &[]);
    assert_eq!(reply.status, 503, "{}", reply.body);
    assert_eq!(
        stack.envoy.stat(retries) - before,
        2,
        "refused connection retried twice"
    );

    // A 500 is not a connection error, and no code was listed.
    let key = unique_key("gep1731-500");
    let reply = stack.get(
        "/retry",
        &[("x-backend-key", &key), ("x-backend-status", "500")],
    );
    assert_eq!(reply.status, 500, "{}", reply.body);
    assert_eq!(stack.backend.attempts(&key), 1, "a 500 is not retried");
}

/// backendRefs[].filters (tests/fixtures/e2e/gep1731/backend-filters.yaml):
/// each backendRef's header changes reach the requests sent through it, and
/// no other. Both refs are the one test backend, split 1:1; a filter applied
/// to the whole rule would put both values on one request.
#[test]
fn a_backend_refs_own_filters_reach_only_its_requests() {
    let stack = Stack::start(&gep1731());
    let mut seen = std::collections::BTreeMap::new();
    for _ in 0..40 {
        let reply = stack.get("/split", &[("x-served-via", "client")]);
        assert_eq!(reply.status, 200, "{}", reply.body);
        let via = reply.echoed_header("x-served-via").unwrap_or_default();
        assert_eq!(via.len(), 1, "exactly one backendRef's value: {via:?}");
        let response = reply.header_values("x-backend-ref");
        // Only echo-a adds the response header.
        let expected: &[&str] = if via[0] == "a" { &["a"] } else { &[] };
        assert_eq!(response, expected, "via {}", via[0]);
        *seen.entry(via[0].clone()).or_insert(0) += 1;
    }
    // Both refs carried traffic, and the client's own value never arrived.
    assert_eq!(
        seen.keys().cloned().collect::<Vec<_>>(),
        ["a", "b"],
        "{seen:?}"
    );
}
