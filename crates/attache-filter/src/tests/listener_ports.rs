//! Listeners told apart by `destination.port` under Istio, where one route
//! name stands for a rule on every listener: the names that need the port,
//! whatever order their entries come in, and fallback matching that keeps to
//! the listeners of the request's port.

use serde_json::{json, Value};

use super::*;
use crate::host::Counter;

/// A document for Istio: listeners `http` and `alt` on 80, `https` on 443.
fn istio(entries: Vec<Value>) -> Rc<CompiledConfig> {
    let mut document = doc(json!(entries));
    document["options"] = json!({"istioRouteNames": true,
        "listenerPorts": {"http": 80, "alt": 80, "https": 443}});
    compile(&document)
}

fn at(prefix: &str, header: &str) -> Value {
    json!({"matches": [{"path": {"type": "PathPrefix", "value": prefix}}],
        "requestHeaders": {"set": [{"name": "x-route", "value": header}]}})
}

fn request(path: &str, route_name: &str, port: i64) -> FakeHost {
    FakeHost::request("shop.example.com", path, &[])
        .with_route_name(route_name)
        .with_destination_port(port)
}

fn by_name_and_fallback(host: &FakeHost) -> (u64, u64) {
    (
        host.count(Counter::MatchedByName),
        host.count(Counter::MatchedByFallback),
    )
}

/// A data-plane document for Istio (entries of one profile share its
/// compiled operations), `groups` as (profile, [(entry name, path prefix)]);
/// profile `n` sets `x-route: p<n>`.
fn istio_data_plane(groups: &[(u32, &[(&str, &str)])]) -> Rc<CompiledConfig> {
    let groups: Vec<Value> = groups
        .iter()
        .map(|(profile, routes)| {
            let routes: Vec<Value> = routes
                .iter()
                .map(|(name, prefix)| {
                    json!({"name": name, "matches": [{"path": {"type": "PathPrefix", "value": prefix}}]})
                })
                .collect();
            json!({"profile": profile, "hostnames": ["shop.example.com"], "routes": routes})
        })
        .collect();
    compile(&json!({
        "schemaVersion": 2, "gateway": "infra/edge",
        "options": {"istioRouteNames": true,
                    "listenerPorts": {"http": 80, "alt": 80, "https": 443}},
        "strings": ["x-route", "p0", "p1", "p2"],
        "profiles": [{"requestHeaders": {"set": [[0, 1]]}},
                     {"requestHeaders": {"set": [[0, 2]]}},
                     {"requestHeaders": {"set": [[0, 3]]}}],
        "groups": groups
    }))
}

#[test]
fn a_port_whose_entries_differ_is_left_to_fallback_in_any_order() {
    // Rule `main` of route x on http and https (one profile), and of route
    // y on https (another): on 443 the name cannot tell x from y, on 80
    // only x has it. Every order of the entries gives the same answers.
    const X: (u32, &[(&str, &str)]) = (
        0,
        &[("http/shop/x/main", "/x"), ("https/shop/x/main", "/x")],
    );
    const Y: (u32, &[(&str, &str)]) = (1, &[("https/shop/y/main", "/y")]);
    for groups in [[X, Y], [Y, X]] {
        let config = istio_data_plane(&groups);
        let mut host = request("/x", "main", 443);
        assert_eq!(
            routed(&config, &mut host).as_deref(),
            Some("https/shop/x/main"),
            "x's request on 443 never gets y's settings"
        );
        assert_eq!(host.request_values("x-route"), vec!["p0"]);
        assert_eq!(by_name_and_fallback(&host), (0, 1));
        let mut host = request("/elsewhere", "main", 80);
        assert_eq!(host.request_values("x-route"), Vec::<String>::new());
        routed(&config, &mut host);
        assert_eq!(host.request_values("x-route"), vec!["p0"]);
        assert_eq!(by_name_and_fallback(&host), (1, 0));
    }
}

#[test]
fn fallback_matching_keeps_to_the_listeners_of_the_requests_port() {
    // Were ports ignored, the https entry would win everywhere: an exact
    // host outranks any host.
    let mut any_host = at("/", "http");
    any_host["hostnames"] = json!([]);
    let mut exact_host = at("/", "https");
    exact_host["hostnames"] = json!(["shop.example.com"]);
    let config = istio(vec![
        entry("http/shop/a/0", any_host),
        entry("https/shop/b/0", exact_host),
    ]);
    let on = |port: i64| {
        let mut host = request("/x", "not-a-route-name", port);
        let found = routed(&config, &mut host);
        assert_eq!(by_name_and_fallback(&host), (0, 1));
        assert_eq!(*host.property_reads.borrow(), 2, "route name, then port");
        found
    };
    assert_eq!(on(80).as_deref(), Some("http/shop/a/0"));
    assert_eq!(on(443).as_deref(), Some("https/shop/b/0"));
    // A port the document does not list (a gateway listening elsewhere than
    // its Gateway says): every listener, by precedence.
    assert_eq!(on(8080).as_deref(), Some("https/shop/b/0"));
}

#[test]
fn two_listeners_on_one_port_are_told_apart_by_hostname() {
    let on_host = |host: &str, header: &str| {
        let mut e = at("/", header);
        e["hostnames"] = json!([host]);
        e
    };
    let config = istio(vec![
        entry("http/shop/cart/0", on_host("a.example.com", "a")),
        entry("alt/shop/cart/0", on_host("b.example.com", "b")),
        entry("https/shop/cart/0", at("/", "tls")),
    ]);
    let mut host = FakeHost::request("b.example.com", "/x", &[])
        .with_route_name("shop.cart.0")
        .with_destination_port(80);
    assert_eq!(
        routed(&config, &mut host).as_deref(),
        Some("alt/shop/cart/0")
    );
    assert_eq!(host.request_values("x-route"), vec!["b"]);
    assert_eq!(by_name_and_fallback(&host), (0, 1));
    // The route name, then the port, once for the name and fallback both
    // (`request::ReadOnce`; it was read twice before issue 24's H24).
    assert_eq!(*host.property_reads.borrow(), 2);
    // On 443 the name alone decides.
    let mut host = FakeHost::request("b.example.com", "/x", &[])
        .with_route_name("shop.cart.0")
        .with_destination_port(443);
    routed(&config, &mut host);
    assert_eq!(host.request_values("x-route"), vec!["tls"]);
    assert_eq!(by_name_and_fallback(&host), (1, 0));
}

#[test]
fn a_document_on_one_port_never_reads_it_for_fallback() {
    let mut document = doc(json!([entry("http/shop/a/0", at("/a", "a"))]));
    document["options"] = json!({"istioRouteNames": true, "listenerPorts": {"http": 80}});
    let config = compile(&document);
    let mut host = request("/a", "unknown", 80);
    assert_eq!(routed(&config, &mut host).as_deref(), Some("http/shop/a/0"));
    assert_eq!(*host.property_reads.borrow(), 1, "the route name only");
}

#[test]
fn a_listener_sets_entry_is_found_by_istiods_name_and_its_listener_keys_port() {
    // Rule 0 of route shop/gifts on the Gateway's `http` (80) and on the
    // ListenerSet team-a/ls-a's `http` (8080, its key in listenerPorts),
    // with different settings: istiod names both `shop.gifts.0`, the
    // request's port picks the entry (docs/istio.md, "ListenerSets").
    let config = compile(&json!({
        "schemaVersion": 2, "gateway": "infra/edge",
        "options": {"istioRouteNames": true,
                    "listenerPorts": {"http": 80, "team-a/ls-a/http": 8080}},
        "strings": ["x-route", "p0", "p1"],
        "profiles": [{"requestHeaders": {"set": [[0, 1]]}},
                     {"requestHeaders": {"set": [[0, 2]]}}],
        "groups": [
            {"profile": 0, "hostnames": ["shop.example.com"],
             "routes": [{"name": "http/shop/gifts/0",
                         "matches": [{"path": {"type": "PathPrefix", "value": "/gifts"}}]}]},
            {"profile": 1, "hostnames": ["shop.example.com"],
             "routes": [{"name": "team-a/ls-a/http/shop/gifts/0",
                         "matches": [{"path": {"type": "PathPrefix", "value": "/gifts"}}]}]}
        ]
    }));
    let mut on_set = request("/gifts", "shop.gifts.0", 8080);
    assert_eq!(
        routed(&config, &mut on_set).as_deref(),
        Some("team-a/ls-a/http/shop/gifts/0")
    );
    assert_eq!(by_name_and_fallback(&on_set), (1, 0));
    let mut on_gateway = request("/gifts", "shop.gifts.0", 80);
    assert_eq!(
        routed(&config, &mut on_gateway).as_deref(),
        Some("http/shop/gifts/0")
    );
    assert_eq!(by_name_and_fallback(&on_gateway), (1, 0));
}
