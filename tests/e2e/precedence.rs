//! Precedence end to end: what the resolver decides is what Envoy does.

use std::time::Duration;

use crate::harness::stack::{Fixture, Stack};
use crate::timeouts::assert_about;

fn precedence() -> Fixture {
    Fixture::named("precedence", "infra/edge", &["shop/echo"])
}

#[test]
fn gateway_override_beats_the_routes_own_timeout() {
    let stack = Stack::start(&precedence());
    // The rule says 3s; the Gateway's override says 400ms.
    let reply = stack.get("/own-timeout", &[("x-backend-delay-ms", "2500")]);
    assert_eq!(reply.status, 504, "{}", reply.body);
    assert_about(reply.elapsed, Duration::from_millis(400));
}

#[test]
fn deep_merge_joined_value_reaches_the_backend() {
    let stack = Stack::start(&precedence());
    let reply = stack.get("/seasons", &[("x-season", "client")]);
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        reply.echoed_header("x-season"),
        Some(vec!["summer,winter".to_owned()])
    );
}
