//! ListenerSets through real Envoy (docs/semantics.md, "ListenerSet"): two
//! tenant teams' listeners share the Gateway's port, each serving its own
//! host; the gifts team's policy on its set is enforced on its route only,
//! and the Gateway's policy reaches every set.

use std::time::Duration;

use crate::harness::client;
use crate::harness::stack::{Fixture, Stack};
use crate::timeouts::{assert_about, assert_not_before};

fn fixture() -> Fixture {
    Fixture {
        // The sets' listeners are on the Gateway's port 80, so on the same
        // local port as its own `http`.
        listeners: &[
            "http",
            "gifts/gifts-edge/http=http",
            "toys/toys-edge/http=http",
        ],
        ..Fixture::named("listener_sets", "infra/edge", &["shop/echo"])
    }
}

#[test]
fn a_sets_listener_serves_its_route_with_the_sets_policy_and_the_gateways() {
    let stack = Stack::start(&fixture());
    let get = |host: &str, delay: &str| {
        client::get(
            &format!("{}/cards", stack.envoy.listener),
            &[("host", host), ("x-backend-delay-ms", delay)],
        )
    };

    // gifts.example.com is the gifts set's listener: its policy's header
    // reaches the backend, and the Gateway's response header comes back.
    let gifts = get("gifts.example.com", "0");
    assert_eq!(gifts.status, 200, "{}", gifts.body);
    assert_eq!(
        gifts.echoed_header("x-team"),
        Some(vec!["gifts".to_string()])
    );
    assert_eq!(gifts.header_values("x-gateway"), ["edge"]);
    // Its 500ms timeout, not the Gateway's 3s.
    let slow = get("gifts.example.com", "1500");
    assert_eq!(slow.status, 504, "{}", slow.body);
    assert_about(slow.elapsed, Duration::from_millis(500));

    // The toys set's listener on the same port: the gifts set's policy does
    // not reach it; the Gateway's does (3s, its response header).
    let toys = get("toys.example.com", "1500");
    assert_eq!(toys.status, 200, "{}", toys.body);
    assert_not_before(toys.elapsed, Duration::from_millis(1500));
    assert_eq!(toys.echoed_header("x-team"), None);
    assert_eq!(toys.header_values("x-gateway"), ["edge"]);

    // Any other host is the Gateway's own listener: neither set's route.
    let home = get("www.example.com", "0");
    assert_eq!(home.status, 200, "{}", home.body);
    assert_eq!(home.echoed_header("x-team"), None);
    assert_eq!(home.header_values("x-gateway"), ["edge"]);
    let home_slow = get("www.example.com", "3500");
    assert_eq!(home_slow.status, 504, "{}", home_slow.body);
    assert_about(home_slow.elapsed, Duration::from_secs(3));
}
