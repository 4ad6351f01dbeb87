//! A policy never changes which rule serves a request (docs/semantics.md,
//! "A policy never changes which rule serves a request"), in real Envoy.
//! Envoy's Wasm host clears the route cache after every request-header
//! write, so a header a policy could write is a way to another rule: the
//! resolver refuses that change, and the request stays where it matched.
//! Every rule a re-match could reach points at a closed port (503).

use crate::harness::client::Reply;
use crate::harness::stack::{Fixture, Stack};

fn steering() -> Fixture {
    Fixture::named(
        "steering",
        "infra/edge",
        &[
            "team-a/echo",
            "team-b/echo",
            "team-a/closed=127.0.0.1:1",
            "team-b/closed=127.0.0.1:1",
            "team-c/closed=127.0.0.1:1",
        ],
    )
}

fn get(stack: &Stack, host: &str, path: &str, extra: &[(&str, &str)]) -> Reply {
    let mut headers = vec![("host", host)];
    headers.extend_from_slice(extra);
    stack.get(path, &headers)
}

#[test]
fn a_policy_header_change_never_moves_the_request_to_another_namespaces_rule() {
    let stack = Stack::start(&steering());

    // The controls: the rules a re-match would reach are really there.
    for (host, path, extra) in [
        ("shop.example.com", "/set", &[("x-tier", "gold")][..]),
        ("shop.example.com", "/add", &[("x-tier", "gold")][..]),
        ("vip.example.com", "/", &[][..]),
    ] {
        let reply = get(&stack, host, path, extra);
        assert_eq!(reply.status, 503, "{host}{path} {extra:?}: {}", reply.body);
    }

    // set: team-a's policy sets x-tier (refused: team-b's rule matches on
    // it) and x-other (tested only on other.example.com: applied).
    let set = get(&stack, "shop.example.com", "/set", &[]);
    assert_eq!(set.status, 200, "moved to another rule: {}", set.body);
    assert_eq!(set.echoed_header("x-tier"), None);
    assert_eq!(set.echoed_header("x-other"), Some(vec!["1".to_owned()]));

    // add: the same for an add; the policy's other header is added.
    let add = get(&stack, "shop.example.com", "/add", &[]);
    assert_eq!(add.status, 200, "moved to another rule: {}", add.body);
    assert_eq!(add.echoed_header("x-tier"), None);
    assert_eq!(
        add.echoed_header("x-added"),
        Some(vec!["policy".to_owned()])
    );

    // remove: team-b's policy removes x-vip, which its own rule matches
    // on (refused), and x-drop (removed).
    let remove = get(
        &stack,
        "vip.example.com",
        "/",
        &[("x-vip", "yes"), ("x-drop", "client")],
    );
    assert_eq!(remove.status, 200, "moved to another rule: {}", remove.body);
    assert_eq!(remove.echoed_header("x-vip"), Some(vec!["yes".to_owned()]));
    assert_eq!(remove.echoed_header("x-drop"), None);
}

#[test]
fn a_rules_own_header_filter_never_moves_the_request() {
    let stack = Stack::start(&steering());
    let control = get(&stack, "shop.example.com", "/own", &[("x-tier", "gold")]);
    assert_eq!(control.status, 503, "{}", control.body);
    // The rule's own filter sets x-tier: gold after the match, as Gateway
    // API applies it: the backend sees it and the request stays.
    let own = get(&stack, "shop.example.com", "/own", &[]);
    assert_eq!(own.status, 200, "moved to another rule: {}", own.body);
    assert_eq!(own.echoed_header("x-tier"), Some(vec!["gold".to_owned()]));
}
