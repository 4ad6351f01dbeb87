//! Header changes: request headers reach the backend set, added and
//! removed; response headers reach the client changed.

use crate::harness::stack::Stack;
use crate::timeouts::basics;

#[test]
fn request_headers_arrive_set_added_and_removed() {
    let stack = Stack::start(&basics());
    assert_request_headers_policy(&stack);
}

/// `/headers` (a set, an add and a remove of the fixture's policy) reaches
/// the backend with each applied once and other headers untouched.
pub fn assert_request_headers_policy(stack: &Stack) {
    let reply = stack.get(
        "/headers",
        &[
            ("x-set", "client"),
            ("x-added", "client"),
            ("x-remove-me", "client"),
            ("x-untouched", "client"),
        ],
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        reply.echoed_header("x-set"),
        Some(vec!["policy".to_owned()])
    );
    assert_eq!(
        reply.echoed_header("x-added"),
        Some(vec!["client".to_owned(), "policy".to_owned()])
    );
    assert_eq!(reply.echoed_header("x-remove-me"), None);
    assert_eq!(
        reply.echoed_header("x-untouched"),
        Some(vec!["client".to_owned()])
    );
}

#[test]
fn response_headers_reach_the_client_changed() {
    let stack = Stack::start(&basics());
    let reply = stack.get(
        "/headers",
        &[
            ("x-backend-respond-header", "x-internal: secret"),
            ("x-backend-respond-header", "x-resp-set: backend"),
            ("x-backend-respond-header", "x-resp-added: backend"),
        ],
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(
        reply.header_values("x-internal").is_empty(),
        "{:?}",
        reply.headers
    );
    assert_eq!(reply.header_values("x-resp-set"), ["policy"]);
    assert_eq!(reply.header_values("x-resp-added"), ["backend", "policy"]);

    // A route without header policies passes the backend's headers through.
    let plain = stack.get(
        "/plain",
        &[("x-backend-respond-header", "x-internal: secret")],
    );
    assert_eq!(plain.header_values("x-internal"), ["secret"]);
}
