//! lib.rs's tests: istiod's route names and the schema-1 types' serde
//! behaviour (unknown and absent fields, defaults, the wire format).

use super::*;

#[test]
fn a_listener_sets_entry_has_istiods_name_from_its_last_three_segments() {
    assert_eq!(
        istio_route_name("team-a/ls-a/http/shop/gifts/0").as_deref(),
        Some("shop.gifts.0")
    );
    assert_eq!(
        istio_route_name("team-a/ls-a/http/shop/storefront/pages").as_deref(),
        Some("pages")
    );
}

#[test]
fn istio_route_names_are_the_rule_name_or_namespace_route_index() {
    assert_eq!(
        istio_route_name("http/shop/gifts/0").as_deref(),
        Some("shop.gifts.0")
    );
    assert_eq!(
        istio_route_name("http/shop/storefront/pages").as_deref(),
        Some("pages")
    );
    assert_eq!(
        istio_route_name("admin/infra/ops/12").as_deref(),
        Some("infra.ops.12")
    );
    assert_eq!(istio_route_name("http/shop/x/"), None);
    assert_eq!(istio_route_name("not-an-entry-name"), None);
}

#[test]
fn unknown_fields_are_ignored_and_absent_fields_default() {
    let doc: Document = serde_json::from_str(
        r#"{"schemaVersion":1,"gateway":"infra/edge","future":{"x":1},
            "routes":[{"name":"http/shop/a/0","listener":"http","routeNamespace":"shop",
            "routeName":"a","rule":"0","newThing":true,"retry":{"codes":[503],"jitter":"2ms"}}]}"#,
    )
    .unwrap_or_else(|e| unreachable!("{e}"));
    assert_eq!(doc.routes.len(), 1);
    assert_eq!(
        doc.routes[0]
            .settings
            .retry
            .as_ref()
            .and_then(|r| r.codes.clone()),
        Some(vec![503])
    );
    assert!(doc.routes[0].settings.timeouts.is_none());
    assert!(!doc.options.trust_client_control_headers);
}

#[test]
fn unset_fields_are_absent_on_write() {
    let entry = RouteEntry {
        name: route_entry_name("http", "shop", "a", "0"),
        listener: "http".into(),
        listener_set: None,
        listener_set_kind: None,
        route_namespace: "shop".into(),
        route_name: "a".into(),
        rule: "0".into(),
        settings: Settings {
            timeouts: Some(Timeouts {
                request_ms: Some(0),
                ..Timeouts::default()
            }),
            ..Settings::default()
        },
        ..RouteEntry::default()
    };
    let json = serde_json::to_string(&entry).unwrap_or_default();
    assert_eq!(
        json,
        r#"{"name":"http/shop/a/0","listener":"http","routeNamespace":"shop","routeName":"a","rule":"0","timeouts":{"requestMs":0}}"#
    );
}

#[test]
fn flattened_settings_keep_the_entrys_wire_format() {
    // Every field set, in the order schema 1 has always written them:
    // the settings sit between `matches` and `sources`, not nested.
    let text = concat!(
        r#"{"name":"ls/a/http/shop/a/0","listener":"http","listenerSet":"ls/a","#,
        r#""listenerSetKind":"XListenerSet","routeNamespace":"shop","routeName":"a","#,
        r#""rule":"0","routeKind":"GRPCRoute","hostnames":["a.example"],"#,
        r#""matches":[{"path":{"type":"Exact","value":"/a"}}],"#,
        r#""timeouts":{"requestMs":1,"backendRequestMs":2},"#,
        r#""retry":{"attempts":3,"codes":[503],"backoffMs":4,"retryOn":["reset"]},"#,
        r#""requestHeaders":{"set":[{"name":"x-a","value":"1"}],"add":[],"remove":["x-b"]},"#,
        r#""responseHeaders":{"set":[],"add":[{"name":"x-c","value":"2"}],"remove":[]},"#,
        r#""sources":{"timeouts.requestMs":"p"}}"#
    );
    let entry: RouteEntry = serde_json::from_str(text).unwrap_or_else(|e| unreachable!("{e}"));
    assert_eq!(
        entry.settings.retry.as_ref().and_then(|r| r.attempts),
        Some(3)
    );
    assert_eq!(entry.matches.len(), 1);
    assert_eq!(serde_json::to_string(&entry).ok().as_deref(), Some(text));
}

#[test]
fn path_match_defaults_follow_gateway_api() {
    let m: HttpRouteMatch = serde_json::from_str(r#"{"path":{}}"#).unwrap_or_default();
    assert_eq!(
        m.path,
        Some(PathMatch {
            kind: PathMatchType::PathPrefix,
            value: "/".into()
        })
    );
}
