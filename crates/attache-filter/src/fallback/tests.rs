use super::*;

#[test]
fn the_filter_refuses_what_the_resolvers_route_check_refuses_at_the_same_field() {
    // attache-core refuses these routes (tests/route_syntax.rs) with the
    // contract's check_match; the filter would have refused them here.
    let regex = |p: &str| {
        FullMatch::new(p)
            .map(|_| ())
            .map_err(|e| route_syntax::RegexProblem::Syntax(e.to_string()))
    };
    let yaml = [
        r#"{"path": {"type": "PathPrefix", "value": "api"}}"#,
        r#"{"path": {"type": "RegularExpression", "value": "/a("}}"#,
        r#"{"path": {"type": "PathPrefix", "value": "/a"}, "method": "GET POST"}"#,
        r#"{"headers": [{"name": "x a", "value": "v"}]}"#,
        r#"{"headers": [{"name": "x-a", "type": "RegularExpression", "value": "\\p{Greek}"}]}"#,
        r#"{"queryParams": [{"name": "q", "type": "RegularExpression", "value": "["}]}"#,
        r#"{"path": {"type": "RegularExpression", "value": "/v[0-9]+"}}"#,
        r#"{"grpcMethod": {"type": "Exact"}}"#,
        r#"{"grpcMethod": {"type": "Exact", "service": "a/b"}}"#,
        r#"{"grpcMethod": {"type": "Exact", "method": "Get.It"}}"#,
        r#"{"grpcMethod": {"type": "RegularExpression", "service": "("}}"#,
        r#"{"grpcMethod": {"type": "Exact", "service": "a.B"}, "path": {"value": "/"}}"#,
        r#"{"grpcMethod": {"type": "Exact", "service": "a.B", "method": "C"}}"#,
    ];
    for text in yaml {
        let m: HttpRouteMatch = serde_json::from_str(text).unwrap();
        let ours = route_syntax::check_match(&m, regex).map_err(|r| r.field);
        let filters = Conditions::compile(&m).map(|_| ()).map_err(|e| e.field);
        assert_eq!(ours, filters, "{text}");
    }
    assert!(HostPattern::parse("shop.example.com:8080").is_err());
    assert!(!route_syntax::is_hostname("shop.example.com:8080"));
}

#[test]
fn a_grpc_method_match_matches_the_path_the_contract_gives() {
    let compile = |text: &str| {
        let m: HttpRouteMatch = serde_json::from_str(text).unwrap();
        Conditions::compile(&m).unwrap().path
    };
    let exact = compile(r#"{"grpcMethod": {"service": "shop.v1.Cart", "method": "Add"}}"#);
    assert!(exact.matches(Some("/shop.v1.Cart/Add")));
    assert!(!exact.matches(Some("/shop.v1.Cart/Remove")));
    let service = compile(r#"{"grpcMethod": {"service": "shop.v1.Cart"}}"#);
    assert!(service.matches(Some("/shop.v1.Cart/Remove")));
    assert!(!service.matches(Some("/shop.v1.CartX/Remove")));
    let method = compile(r#"{"grpcMethod": {"method": "Add"}}"#);
    assert!(method.matches(Some("/any.Service/Add")));
    assert!(!method.matches(Some("/a/b/Add")));
    let regex = compile(r#"{"grpcMethod": {"type": "RegularExpression", "service": "a|b"}}"#);
    assert!(regex.matches(Some("/b/Get")));
    assert!(!regex.matches(Some("/ab/Get")));
}

#[test]
fn wildcard_needs_at_least_one_label() {
    let p = HostPattern::parse("*.Example.com").unwrap();
    assert!(p.matches(Some("a.example.com")));
    assert!(p.matches(Some("a.b.example.com")));
    assert!(!p.matches(Some("example.com")));
    assert!(!p.matches(Some("aexample.com")));
    assert!(!p.matches(None));
    assert!(HostPattern::Any.matches(None));
}

#[test]
fn prefix_respects_path_elements_and_ignores_trailing_slash() {
    for value in ["/foo", "/foo/"] {
        let m: HttpRouteMatch = serde_json::from_value(serde_json::json!({
            "path": {"type": "PathPrefix", "value": value}
        }))
        .unwrap();
        let c = Conditions::compile(&m).unwrap();
        for (path, expected) in [
            ("/foo", true),
            ("/foo/", true),
            ("/foo/bar", true),
            ("/foobar", false),
            ("/", false),
        ] {
            assert_eq!(c.path.matches(Some(path)), expected, "{value} vs {path}");
        }
    }
    assert!(Conditions::match_all().path.matches(Some("/anything")));
}

#[test]
fn bad_conditions_name_their_field() {
    let m: HttpRouteMatch = serde_json::from_value(serde_json::json!({
        "headers": [{"name": "ok", "value": "x"}, {"name": "x", "type": "RegularExpression", "value": "("}]
    }))
    .unwrap();
    let e = Conditions::compile(&m).unwrap_err();
    assert_eq!(e.field, "headers[1].value");
    assert!(matches!(e.problem, Problem::Regex(_)));
}

#[test]
fn a_hostname_shared_by_groups_is_held_once() {
    let mut table = FallbackTable::default();
    let shop = table.add_host(HostPattern::parse("shop.example.com").unwrap());
    let any = table.add_host(HostPattern::Any);
    let again = table.add_host(HostPattern::parse("Shop.Example.com").unwrap());
    let wildcard = table.add_host(HostPattern::parse("*.example.com").unwrap());
    assert_eq!(shop, again);
    assert_eq!(table.hosts.len(), 3);
    assert_ne!(any, wildcard);
    assert_eq!(
        *table.host(wildcard),
        HostPattern::Suffix(".example.com".into())
    );
    table.finish();
    // The ids are for building only: the map is dropped, the hostnames kept.
    assert!(table.host_ids.is_empty());
    assert_eq!(
        *table.host(shop),
        HostPattern::Exact("shop.example.com".into())
    );
}
