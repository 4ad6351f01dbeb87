use serde_json::json;

use super::*;
use crate::host::Counter;

fn two_routes() -> Rc<CompiledConfig> {
    compile(&doc(json!([
        entry(
            "http/shop/a/0",
            json!({"matches": [{"path": {"type": "PathPrefix", "value": "/a"}}],
            "requestHeaders": {"set": [{"name": "x-route", "value": "a"}]}})
        ),
        entry(
            "http/shop/b/0",
            json!({"matches": [{"path": {"type": "PathPrefix", "value": "/b"}}],
            "requestHeaders": {"set": [{"name": "x-route", "value": "b"}]}})
        ),
    ])))
}

#[test]
fn route_name_property_selects_the_entry_even_if_the_path_says_otherwise() {
    let config = two_routes();
    // The path would fall back to /a, but Envoy's route name is b's.
    let mut host =
        FakeHost::request("shop.example.com", "/a", &[]).with_route_name("http/shop/b/0");
    assert_eq!(routed(&config, &mut host).as_deref(), Some("http/shop/b/0"));
    assert_eq!(host.request_values("x-route"), vec!["b"]);
    assert_eq!(host.count(Counter::MatchedByName), 1);
    assert_eq!(host.count(Counter::MatchedByFallback), 0);
}

#[test]
fn unknown_route_name_falls_back_to_matching() {
    let config = two_routes();
    let mut host =
        FakeHost::request("shop.example.com", "/a/x", &[]).with_route_name("istio-route-17");
    assert_eq!(routed(&config, &mut host).as_deref(), Some("http/shop/a/0"));
    assert_eq!(host.count(Counter::MatchedByName), 0);
    assert_eq!(host.count(Counter::MatchedByFallback), 1);
}

#[test]
fn non_utf8_route_name_falls_back_instead_of_failing() {
    let config = two_routes();
    let mut host = FakeHost::request("h", "/b", &[]);
    host.properties
        .insert(vec!["xds".into(), "route_name".into()], vec![0xff, 0xfe]);
    assert_eq!(routed(&config, &mut host).as_deref(), Some("http/shop/b/0"));
}

#[test]
fn unmatched_request_passes_untouched_and_is_counted() {
    let config = two_routes();
    let mut host = FakeHost::request("h", "/c", &[("x-keep", "1")]);
    let before = host.request.clone();
    let stream = request(&config, &mut host);
    assert!(stream.route().is_none());
    assert_eq!(host.request, before);
    assert_eq!(host.count(Counter::Unmatched), 1);
    let mut stream = stream;
    host.response.push(("x-up".into(), b"1".to_vec()));
    stream.on_response_headers(&mut host);
    assert_eq!(host.response, vec![("x-up".to_string(), b"1".to_vec())]);
}
