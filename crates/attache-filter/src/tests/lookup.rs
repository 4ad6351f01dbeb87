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

/// The VM in which Envoy only checks a configuration never looks a route
/// up: istiod's names are keyed by the first lookup, not by the load, and
/// then kept.
#[test]
fn istiod_names_are_keyed_by_the_first_lookup() {
    let config = istio(vec![entry("http/shop/gifts/0", at("/gifts", "gifts"))]);
    assert!(!config.index().istio_names_keyed());
    let mut host = FakeHost::request("h", "/elsewhere", &[]).with_route_name("shop.gifts.0");
    assert_eq!(
        routed(&config, &mut host).as_deref(),
        Some("http/shop/gifts/0")
    );
    assert!(config.index().istio_names_keyed());
    let mut host = FakeHost::request("h", "/elsewhere", &[]).with_route_name("shop.gifts.0");
    assert_eq!(
        routed(&config, &mut host).as_deref(),
        Some("http/shop/gifts/0")
    );
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
fn an_istiod_name_shared_by_one_profile_is_still_found_by_name() {
    // One rule on two listeners with the same merged settings: in the
    // data-plane encoding both entries use one profile.
    let path = json!([{"path": {"type": "PathPrefix", "value": "/a"}}]);
    let config = compile(&json!({
        "schemaVersion": 2, "gateway": "g", "options": {"istioRouteNames": true},
        "strings": ["x-route", "same"],
        "profiles": [{"requestHeaders": {"set": [[0, 1]]}}],
        "groups": [{"profile": 0, "routes": [
            {"name": "http/shop/a/main", "matches": path},
            {"name": "admin/shop/a/main", "matches": path}
        ]}]
    }));
    let mut host = FakeHost::request("h", "/zzz", &[]).with_route_name("main");
    assert!(routed(&config, &mut host).is_some());
    assert_eq!(host.request_values("x-route"), vec!["same"]);
    assert_eq!(host.count(Counter::MatchedByName), 1);
    assert_eq!(*host.property_reads.borrow(), 1, "no port needed");
}

/// `destination.port` as Envoy hands it over: int64, 8 bytes little-endian.
fn at_port(host: FakeHost, port: u16) -> FakeHost {
    let mut host = host;
    host.properties.insert(
        vec!["destination".into(), "port".into()],
        i64::from(port).to_le_bytes().to_vec(),
    );
    host
}

#[test]
fn a_name_shared_by_listeners_with_different_settings_is_picked_by_destination_port() {
    let mut document = doc(json!([
        entry("http/shop/a/main", at("/a", "public")),
        entry("admin/shop/a/main", at("/a", "private")),
        entry("http/shop/b/other", at("/b", "b")),
        entry("ops/shop/b/other", at("/b", "b-ops")),
    ]));
    // `ops` has no known port: `other` cannot be told apart, so it falls back.
    document["options"] =
        json!({"istioRouteNames": true, "listenerPorts": {"http": 80, "admin": 8081}});
    let config = compile(&document);
    for (port, expect) in [(80, "public"), (8081, "private")] {
        let mut host = at_port(
            FakeHost::request("h", "/zzz", &[]).with_route_name("main"),
            port,
        );
        assert!(routed(&config, &mut host).is_some(), "port {port}");
        assert_eq!(host.request_values("x-route"), vec![expect]);
        assert_eq!(host.count(Counter::MatchedByName), 1);
    }
    // Another port, or none: the name cannot pick, fallback matching does.
    for host in [
        at_port(
            FakeHost::request("h", "/a", &[]).with_route_name("main"),
            9999,
        ),
        FakeHost::request("h", "/a", &[]).with_route_name("main"),
    ] {
        let mut host = host;
        assert_eq!(
            routed(&config, &mut host).as_deref(),
            Some("http/shop/a/main")
        );
        assert_eq!(host.count(Counter::MatchedByFallback), 1);
    }
    let mut host = at_port(
        FakeHost::request("h", "/b", &[]).with_route_name("other"),
        80,
    );
    routed(&config, &mut host);
    assert_eq!(host.count(Counter::MatchedByName), 0);
    assert_eq!(host.count(Counter::MatchedByFallback), 1);
}

#[test]
fn names_that_need_no_port_do_not_read_it() {
    let mut document = doc(json!([entry("http/shop/a/main", at("/a", "a"))]));
    document["options"] = json!({"istioRouteNames": true, "listenerPorts": {"http": 80}});
    let config = compile(&document);
    // A port property that would not parse: never read for a unique name.
    let mut host = FakeHost::request("h", "/zzz", &[]).with_route_name("main");
    host.properties
        .insert(vec!["destination".into(), "port".into()], vec![1, 2, 3]);
    assert!(routed(&config, &mut host).is_some());
    assert_eq!(host.count(Counter::MatchedByName), 1);
    // One property read: the route name.
    assert_eq!(*host.property_reads.borrow(), 1);
}

/// The index's hash spreads names of one shape (30,000 entry names of a
/// 10,000-route Gateway, or istiod's, differing in a digit or two) over the
/// slots: no whole-hash collisions and short probes, as FNV-1a did before
/// it (average probe 0.38-0.47 for both; a weaker word hash tried first
/// collided 756 times on the istiod names, its average probe 22.8).
#[test]
fn names_of_one_shape_spread_over_the_slots() {
    let entry_names = |r: usize, rule: usize| format!("http/shop/r{r}/{rule}");
    let istio_names = |r: usize, rule: usize| format!("shop.r{r}.{rule}");
    for shape in [
        &entry_names as &dyn Fn(usize, usize) -> String,
        &istio_names,
    ] {
        let names: Vec<String> = (0..10_000)
            .flat_map(|r| (0..3).map(move |rule| shape(r, rule)))
            .collect();
        let mut hashes: Vec<u32> = names
            .iter()
            .map(|n| crate::index::hash(n.as_bytes()))
            .collect();
        // As RouteIndex places them: 65,536 slots, linear probing.
        let mask = 65_535;
        let mut slots = vec![false; mask + 1];
        let (mut longest, mut total) = (0, 0);
        for &h in &hashes {
            let mut s = h as usize & mask;
            let mut probes = 0;
            while slots[s] {
                s = (s + 1) & mask;
                probes += 1;
            }
            slots[s] = true;
            longest = longest.max(probes);
            total += probes;
        }
        hashes.sort_unstable();
        hashes.dedup();
        assert_eq!(
            hashes.len(),
            names.len(),
            "{}: whole-hash collisions",
            names[0]
        );
        assert!(longest <= 40, "{}: longest probe {longest}", names[0]);
        assert!(total <= names.len(), "{}: {total} probes", names[0]);
    }
}
