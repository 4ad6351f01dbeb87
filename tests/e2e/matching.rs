//! Every request gets the settings of the rule Envoy matched: the rendered
//! Envoy route names and the schema-1 entry names agree for rules told apart
//! by hostname, exact path, header and method, in Gateway API precedence.

use crate::harness::client;

/// Method, host, path, extra request headers, the rule whose `x-route` the
/// backend must see.
type Case<'a> = (&'a str, &'a str, &'a str, &'a [(&'a str, &'a str)], &'a str);
use crate::harness::stack::{Fixture, Stack};

#[test]
fn each_request_gets_the_settings_of_the_rule_envoy_matched() {
    let stack = Stack::start(&Fixture::named("matching", "infra/edge", &["shop/echo"]));
    let route_seen = |method: &str, host: &str, path: &str, extra: &[(&str, &str)]| {
        let mut headers = vec![("host", host), ("x-route", "client")];
        headers.extend_from_slice(extra);
        let url = format!("{}{path}", stack.envoy.listener);
        let reply = match method {
            "POST" => client::post(&url, &headers),
            _ => client::get(&url, &headers),
        };
        assert_eq!(reply.status, 200, "{method} {host}{path}: {}", reply.body);
        reply
            .echoed_header("x-route")
            .map(|values| values.join(","))
    };
    let blue = [("x-variant", "blue")];
    let cases: [Case; 7] = [
        ("GET", "alpha.example.com", "/exact", &[], "alpha-exact"),
        // An exact path outranks a header match (Gateway API precedence).
        ("GET", "alpha.example.com", "/exact", &blue, "alpha-exact"),
        ("GET", "alpha.example.com", "/other", &blue, "alpha-blue"),
        ("POST", "alpha.example.com", "/other", &[], "alpha-post"),
        // A method match outranks a header match.
        ("POST", "alpha.example.com", "/other", &blue, "alpha-post"),
        ("GET", "alpha.example.com", "/other", &[], "alpha-rest"),
        ("GET", "beta.example.com", "/exact", &[], "beta"),
    ];
    for (method, host, path, extra, expected) in cases {
        assert_eq!(
            route_seen(method, host, path, extra).as_deref(),
            Some(expected),
            "{method} {host}{path} {extra:?}"
        );
    }

    // No route for the host: Envoy answers 404 and the backend sees nothing.
    let reply = client::get(
        &format!("{}/", stack.envoy.listener),
        &[("host", "gamma.example.com")],
    );
    assert_eq!(reply.status, 404, "{}", reply.body);
}
