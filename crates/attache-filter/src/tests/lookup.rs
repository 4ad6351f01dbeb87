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

/// A document for Istio (`options.istioRouteNames`) with `entries`.
fn istio(entries: Vec<Value>) -> Rc<CompiledConfig> {
    let mut document = doc(json!(entries));
    document["options"] = json!({"istioRouteNames": true});
    compile(&document)
}

fn at(prefix: &str, header: &str) -> Value {
    json!({"matches": [{"path": {"type": "PathPrefix", "value": prefix}}],
        "requestHeaders": {"set": [{"name": "x-route", "value": header}]}})
}

#[test]
fn istiod_route_names_find_their_entry_by_name() {
    let config = istio(vec![
        entry("http/shop/gifts/0", at("/gifts", "gifts")),
        entry("http/shop/storefront/pages", at("/", "pages")),
    ]);
    // istiod's names: `<namespace>.<route>.<index>`, or the rule's name.
    for (route_name, expect) in [("shop.gifts.0", "gifts"), ("pages", "pages")] {
        // The path points elsewhere: only the name can pick the entry.
        let mut host = FakeHost::request("h", "/elsewhere", &[]).with_route_name(route_name);
        assert!(routed(&config, &mut host).is_some(), "{route_name}");
        assert_eq!(host.request_values("x-route"), vec![expect]);
        assert_eq!(host.count(Counter::MatchedByName), 1, "{route_name}");
        assert_eq!(host.count(Counter::MatchedByFallback), 0);
    }
    // Entry names are not route names under Istio.
    let mut host =
        FakeHost::request("h", "/gifts", &[]).with_route_name("http/shop/storefront/pages");
    assert_eq!(
        routed(&config, &mut host).as_deref(),
        Some("http/shop/gifts/0")
    );
    assert_eq!(host.count(Counter::MatchedByFallback), 1);
}

#[test]
fn an_istiod_name_shared_by_different_settings_goes_to_fallback() {
    // Two routes with a rule named `main`, on different paths and settings.
    let config = istio(vec![
        entry("http/shop/a/main", at("/a", "a")),
        entry("http/shop/b/main", at("/b", "b")),
        entry("http/shop/c/main", at("/c", "c")),
    ]);
    let mut host = FakeHost::request("h", "/b/x", &[]).with_route_name("main");
    assert_eq!(
        routed(&config, &mut host).as_deref(),
        Some("http/shop/b/main")
    );
    assert_eq!(host.request_values("x-route"), vec!["b"]);
    assert_eq!(host.count(Counter::MatchedByName), 0);
    assert_eq!(host.count(Counter::MatchedByFallback), 1);
}

#[test]
fn an_istiod_name_shared_by_equal_settings_is_still_found_by_name() {
    // One rule on two listeners with the same merged settings.
    let config = istio(vec![
        entry("http/shop/a/main", at("/a", "same")),
        entry("admin/shop/a/main", at("/a", "same")),
    ]);
    let mut host = FakeHost::request("h", "/zzz", &[]).with_route_name("main");
    assert!(routed(&config, &mut host).is_some());
    assert_eq!(host.request_values("x-route"), vec!["same"]);
    assert_eq!(host.count(Counter::MatchedByName), 1);
}
