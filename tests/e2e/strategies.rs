//! GEP-713 (2025) merge strategies end to end (examples/strategies): what
//! `explain` says each strategy did is what Envoy does with the request.

use std::time::Duration;

use crate::harness::paths;
use crate::harness::stack::{Fixture, Stack};
use crate::timeouts::assert_about;

fn strategies() -> Fixture {
    Fixture {
        input: paths::example("strategies"),
        gateway: "infra/edge",
        listeners: &["http"],
        backends: &["shop/app"],
    }
}

/// Atomic overrides: the route's policy (`backendRequest: 1s`) replaces
/// everything the rule's policy set, whole; the backend's 2.5 s answer is
/// cut at 1 s. Under the seeds' field merge the rule's 4 retries would
/// have stayed beside it.
#[test]
fn atomic_overrides_replace_all_below_whole() {
    let stack = Stack::start(&strategies());
    let reply = stack.get(
        "/",
        &[
            ("host", "atomic-overrides.example.com"),
            ("x-backend-delay-ms", "2500"),
        ],
    );
    assert_eq!(reply.status, 504, "{}", reply.body);
    assert_about(reply.elapsed, Duration::from_secs(1));
}

/// Patch defaults (RFC 7386): the rule's policy wins per field, and its
/// header `set` list replaces the route policy's whole: the backend sees
/// `x-a: rule` and no `x-b` (a field merge would have kept `x-b: route`).
#[test]
fn patch_defaults_replace_a_list_whole() {
    let stack = Stack::start(&strategies());
    let reply = stack.get("/", &[("host", "patch-defaults.example.com")]);
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.echoed_header("x-a"), Some(vec!["rule".to_owned()]));
    assert_eq!(reply.echoed_header("x-b"), None, "{}", reply.body);
}
