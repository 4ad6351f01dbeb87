//! Fallback matching follows Gateway API precedence; each test puts the
//! expected winner *later* in the document than a weaker candidate, so
//! document order alone cannot make it pass.

use serde_json::{json, Value};

use super::*;

fn config(entries: Vec<Value>) -> Rc<CompiledConfig> {
    compile(&doc(Value::Array(entries)))
}

fn path(kind: &str, value: &str) -> Value {
    json!({"path": {"type": kind, "value": value}})
}

fn route_for(config: &Rc<CompiledConfig>, mut host: FakeHost) -> Option<String> {
    routed(config, &mut host)
}

fn get(path: &str) -> FakeHost {
    FakeHost::request("shop.example.com", path, &[])
}

#[test]
fn exact_beats_longest_prefix_beats_regex() {
    let c = config(vec![
        entry(
            "regex",
            json!({"matches": [path("RegularExpression", "/api/.*")]}),
        ),
        entry("prefix", json!({"matches": [path("PathPrefix", "/api")]})),
        entry("exact", json!({"matches": [path("Exact", "/api/v1")]})),
    ]);
    assert_eq!(route_for(&c, get("/api/v1")).as_deref(), Some("exact"));
    assert_eq!(route_for(&c, get("/api/v2")).as_deref(), Some("prefix"));
    // Exact is exact: a longer path falls to the prefix.
    assert_eq!(route_for(&c, get("/api/v1/x")).as_deref(), Some("prefix"));
}

#[test]
fn regex_applies_when_no_prefix_or_exact_matches_and_is_a_full_match() {
    let c = config(vec![
        entry("prefix", json!({"matches": [path("PathPrefix", "/api")]})),
        entry(
            "regex",
            json!({"matches": [path("RegularExpression", "/v[0-9]+/items")]}),
        ),
    ]);
    assert_eq!(route_for(&c, get("/v2/items")).as_deref(), Some("regex"));
    assert_eq!(route_for(&c, get("/v2/items/9")), None);
    assert_eq!(route_for(&c, get("/x/v2/items")), None);
}

#[test]
fn longer_prefix_wins_and_prefixes_respect_path_elements() {
    let c = config(vec![
        entry("short", json!({"matches": [path("PathPrefix", "/")]})),
        entry(
            "long",
            json!({"matches": [path("PathPrefix", "/shop/cart")]}),
        ),
        entry("mid", json!({"matches": [path("PathPrefix", "/shop")]})),
    ]);
    assert_eq!(route_for(&c, get("/shop/cart/1")).as_deref(), Some("long"));
    assert_eq!(route_for(&c, get("/shop/cartoon")).as_deref(), Some("mid"));
    assert_eq!(route_for(&c, get("/shopping")).as_deref(), Some("short"));
    assert_eq!(route_for(&c, get("/shop?x=1")).as_deref(), Some("mid"));
}

#[test]
fn method_breaks_a_path_tie() {
    let c = config(vec![
        entry("any", json!({"matches": [path("PathPrefix", "/orders")]})),
        entry(
            "post",
            json!({"matches": [{"path": {"type": "PathPrefix", "value": "/orders"}, "method": "POST"}]}),
        ),
    ]);
    assert_eq!(
        route_for(&c, get("/orders").with_method("POST")).as_deref(),
        Some("post")
    );
    assert_eq!(route_for(&c, get("/orders")).as_deref(), Some("any"));
}

#[test]
fn more_header_matches_win_a_tie() {
    let c = config(vec![
        entry(
            "one",
            json!({"matches": [{"headers": [{"name": "x-env", "value": "canary"}]}]}),
        ),
        entry(
            "two",
            json!({"matches": [{"headers": [
            {"name": "X-Env", "value": "canary"},
            {"name": "x-user", "type": "RegularExpression", "value": "vip-[0-9]+"}]}]}),
        ),
    ]);
    let both = FakeHost::request("h", "/", &[("x-env", "canary"), ("x-user", "vip-7")]);
    assert_eq!(route_for(&c, both).as_deref(), Some("two"));
    let regex_fails = FakeHost::request("h", "/", &[("x-env", "canary"), ("x-user", "vip-7x")]);
    assert_eq!(route_for(&c, regex_fails).as_deref(), Some("one"));
    let value_differs = FakeHost::request("h", "/", &[("x-env", "Canary")]);
    assert_eq!(route_for(&c, value_differs), None);
}

#[test]
fn method_outranks_header_count() {
    let c = config(vec![
        entry(
            "headers",
            json!({"matches": [{"headers": [{"name": "a", "value": "1"}, {"name": "b", "value": "2"}]}]}),
        ),
        entry("method", json!({"matches": [{"method": "GET"}]})),
    ]);
    let host = FakeHost::request("h", "/", &[("a", "1"), ("b", "2")]);
    assert_eq!(route_for(&c, host).as_deref(), Some("method"));
}

#[test]
fn more_query_param_matches_win_a_tie_and_names_are_case_sensitive() {
    let c = config(vec![
        entry(
            "one",
            json!({"matches": [{"queryParams": [{"name": "v", "value": "2"}]}]}),
        ),
        entry(
            "two",
            json!({"matches": [{"queryParams": [
            {"name": "v", "value": "2"}, {"name": "beta", "type": "RegularExpression", "value": "on|yes"}]}]}),
        ),
    ]);
    assert_eq!(
        route_for(&c, get("/p?v=2&beta=yes")).as_deref(),
        Some("two")
    );
    assert_eq!(
        route_for(&c, get("/p?beta=maybe&v=2")).as_deref(),
        Some("one")
    );
    assert_eq!(route_for(&c, get("/p?V=2")), None);
    // Only the first occurrence of a repeated parameter counts.
    assert_eq!(route_for(&c, get("/p?v=1&v=2")), None);
}

#[test]
fn hostname_specificity_comes_before_path_precedence() {
    let c = config(vec![
        entry(
            "any-exact-path",
            json!({"matches": [path("Exact", "/login")]}),
        ),
        entry("short-wildcard", json!({"hostnames": ["*.example.com"]})),
        entry(
            "long-wildcard",
            json!({"hostnames": ["*.shop.example.com"]}),
        ),
        entry("exact-host", json!({"hostnames": ["eu.shop.example.com"]})),
    ]);
    let at = |authority: &str| FakeHost::request(authority, "/login", &[]);
    assert_eq!(
        route_for(&c, at("EU.shop.example.com:8443")).as_deref(),
        Some("exact-host")
    );
    assert_eq!(
        route_for(&c, at("us.shop.example.com")).as_deref(),
        Some("long-wildcard")
    );
    assert_eq!(
        route_for(&c, at("blog.example.com")).as_deref(),
        Some("short-wildcard")
    );
    // A wildcard needs at least one label: example.com itself is not covered.
    assert_eq!(
        route_for(&c, at("example.com")).as_deref(),
        Some("any-exact-path")
    );
}

#[test]
fn document_order_breaks_full_ties() {
    let c = config(vec![
        entry("older", json!({"matches": [path("PathPrefix", "/x")]})),
        entry("newer", json!({"matches": [path("PathPrefix", "/x")]})),
    ]);
    assert_eq!(route_for(&c, get("/x")).as_deref(), Some("older"));
}

#[test]
fn any_of_an_entrys_matches_suffices_and_each_ranks_on_its_own() {
    let c = config(vec![
        entry("prefix", json!({"matches": [path("PathPrefix", "/a")]})),
        entry(
            "multi",
            json!({"matches": [path("PathPrefix", "/zzz"), path("Exact", "/a/b")]}),
        ),
    ]);
    assert_eq!(route_for(&c, get("/a/b")).as_deref(), Some("multi"));
    assert_eq!(route_for(&c, get("/zzz/1")).as_deref(), Some("multi"));
    assert_eq!(route_for(&c, get("/a/c")).as_deref(), Some("prefix"));
}

#[test]
fn all_conditions_of_one_match_must_hold() {
    let c = config(vec![entry(
        "strict",
        json!({"matches": [{
        "path": {"type": "PathPrefix", "value": "/a"}, "method": "PUT",
        "headers": [{"name": "x-a", "value": "1"}], "queryParams": [{"name": "q", "value": "1"}]}]}),
    )]);
    let ok = FakeHost::request("h", "/a?q=1", &[("x-a", "1")]).with_method("PUT");
    assert_eq!(route_for(&c, ok).as_deref(), Some("strict"));
    let no_query = FakeHost::request("h", "/a", &[("x-a", "1")]).with_method("PUT");
    assert_eq!(route_for(&c, no_query), None);
    let no_header = FakeHost::request("h", "/a?q=1", &[]).with_method("PUT");
    assert_eq!(route_for(&c, no_header), None);
    let wrong_method = FakeHost::request("h", "/a?q=1", &[("x-a", "1")]);
    assert_eq!(route_for(&c, wrong_method), None);
}
