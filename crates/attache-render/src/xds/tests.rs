use super::*;
use crate::resources::ListenerOptions;
use crate::test_gateway::{backend, book, entry, listener, resolution};
use attache_contract::{HttpRouteMatch, PathMatch, PathMatchType};

fn options() -> XdsOptions {
    XdsOptions {
        ecds_path: "/run/attache/ecds/attache.yaml".into(),
        filter_type_url: crate::wasm::WASM_TYPE_URL,
        listeners: ListenerOptions {
            listen_address: "127.0.0.1".into(),
            listener_ports: [("http".to_string(), 18080)].into(),
        },
        layout: XdsLayout::new("/run/attache/"),
    }
}

fn two_listeners() -> GatewayResolution {
    resolution(
        vec![
            listener("http", 80, "HTTP"),
            listener("admin", 8081, "HTTP"),
        ],
        vec![
            (entry("http", "a", "/"), vec![backend("v1", 1)]),
            (entry("admin", "ops", "/ops"), vec![backend("ops", 1)]),
        ],
    )
}

#[test]
fn every_listener_reads_its_own_rds_file_and_the_filter_has_no_default() {
    let (state, notes) =
        xds_state(&two_listeners(), &book(&["*=127.0.0.1:9000"]), &options()).unwrap();
    assert_eq!(notes, (vec![], vec![]));
    assert_eq!(
        state.listeners.keys().collect::<Vec<_>>(),
        ["admin", "http"]
    );
    let http = &state.listeners["http"];
    assert_eq!(http["address"]["socket_address"]["port_value"], 18080);
    let hcm = &http["filter_chains"][0]["filters"][0]["typed_config"];
    assert!(hcm.get("route_config").is_none(), "{hcm}");
    assert_eq!(
        hcm["rds"],
        json!({"route_config_name": "http", "config_source": {
            "path_config_source": {
                "path": "/run/attache/rds/http/routes.json",
                "watched_directory": {"path": "/run/attache/rds/http"}
            },
            "resource_api_version": "V3"
        }})
    );
    let discovery = &hcm["http_filters"][0]["config_discovery"];
    assert_eq!(
        discovery["config_source"]["path_config_source"]["path"],
        "/run/attache/ecds/attache.yaml"
    );
    assert!(
        discovery.get("default_config").is_none(),
        "the listener must not change with the document: {discovery}"
    );
    assert_eq!(state.route_configs["http"]["name"], "http");
    assert_eq!(
        state.route_configs["admin"]["virtual_hosts"][0]["routes"][0]["name"],
        "admin/shop/ops/0"
    );
    assert_eq!(
        state.clusters.keys().collect::<Vec<_>>(),
        ["shop/ops/80", "shop/v1/80"]
    );
}

#[test]
fn the_listener_does_not_change_when_routes_or_policies_do() {
    let book = book(&["*=127.0.0.1:9000"]);
    let (before, _) = xds_state(&two_listeners(), &book, &options()).unwrap();
    let mut changed = two_listeners();
    changed.document.routes[0].matches = vec![HttpRouteMatch {
        path: Some(PathMatch {
            kind: PathMatchType::Exact,
            value: "/new".into(),
        }),
        ..HttpRouteMatch::default()
    }];
    changed.document.routes[0].settings.retry = None;
    let (after, _) = xds_state(&changed, &book, &options()).unwrap();
    assert_eq!(
        lds_response(&before.listeners),
        lds_response(&after.listeners)
    );
    assert_ne!(before.route_configs["http"], after.route_configs["http"]);
    assert_eq!(
        cds_response(&before.clusters),
        cds_response(&after.clusters),
        "unchanged clusters are byte-identical"
    );
}

#[test]
fn files_are_discovery_responses_versioned_by_content() {
    let (state, _) = xds_state(&two_listeners(), &book(&["*=127.0.0.1:9000"]), &options()).unwrap();
    let rds = rds_response(&state.route_configs["http"]);
    assert_eq!(rds["type_url"], ROUTE_CONFIGURATION_TYPE_URL);
    assert_eq!(rds["resources"][0]["@type"], ROUTE_CONFIGURATION_TYPE_URL);
    assert_eq!(rds["resources"][0]["name"], "http");
    assert_eq!(rds["resources"].as_array().unwrap().len(), 1);
    let cds = cds_response(&state.clusters);
    assert_eq!(cds["resources"][1]["@type"], CLUSTER_TYPE_URL);
    assert_eq!(cds, cds_response(&state.clusters.clone()));
    let mut fewer = state.clusters.clone();
    fewer.remove("shop/ops/80");
    assert_ne!(cds_response(&fewer)["version_info"], cds["version_info"]);
}

#[test]
fn the_dynamic_bootstrap_names_only_where_the_files_are() {
    let admin = crate::bootstrap::AdminOptions {
        address: "127.0.0.1".into(),
        port: 9901,
    };
    let config =
        crate::bootstrap::dynamic_bootstrap("infra/edge", &admin, &XdsLayout::new("/run/x"));
    assert!(config.get("static_resources").is_none());
    assert_eq!(
        config["dynamic_resources"]["lds_config"]["path_config_source"],
        json!({"path": "/run/x/lds/listeners.json", "watched_directory": {"path": "/run/x/lds"}})
    );
    assert_eq!(
        config["dynamic_resources"]["cds_config"]["path_config_source"]["path"],
        "/run/x/cds/clusters.json"
    );
    assert_eq!(config["node"]["id"], "infra/edge");
}

#[test]
fn shapes_envoy_would_refuse_are_refused_before_writing() {
    let (state, _) = xds_state(&two_listeners(), &book(&["*=127.0.0.1:9000"]), &options()).unwrap();
    let mut dangling = state.clone();
    dangling.clusters.remove("shop/v1/80");
    assert_eq!(
        check(&dangling).unwrap_err().to_string(),
        "route http/shop/a/0 (listener http) sends to cluster shop/v1/80, which the CDS file would not hold"
    );

    let mut duplicate = state.clone();
    let vhosts = duplicate.route_configs.get_mut("http").unwrap()["virtual_hosts"]
        .as_array_mut()
        .unwrap();
    vhosts.push(vhosts[0].clone());
    assert!(check(&duplicate)
        .unwrap_err()
        .to_string()
        .contains("two virtual hosts claim domain *"));

    let mut regex = two_listeners();
    regex.document.routes[0].matches = vec![HttpRouteMatch {
        path: Some(PathMatch {
            kind: PathMatchType::RegularExpression,
            value: "/v(1|2".into(),
        }),
        ..HttpRouteMatch::default()
    }];
    let err = xds_state(&regex, &book(&["*=127.0.0.1:9000"]), &options())
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("route http/shop/a/0 (listener http): regex \"/v(1|2\" does not parse"),
        "{err}"
    );

    // A zero back-off the resolver should have refused: named with the
    // policy that set it, and nothing is written.
    let mut zero = state.clone();
    zero.document.routes[0].sources.insert(
        "retry.backoffMs".into(),
        "RoutePolicy shop/fast (defaults @ HTTPRoute shop/a)".into(),
    );
    let route = zero.route_configs.get_mut("http").unwrap()["virtual_hosts"][0]["routes"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|r| r["name"] == "http/shop/a/0")
        .unwrap();
    route["route"]["retry_policy"] = serde_json::json!({"retry_back_off": {"base_interval": "0s"}});
    assert_eq!(
        check(&zero).unwrap_err().to_string(),
        "route http/shop/a/0 (listener http): retry back-off 0s set by RoutePolicy shop/fast (defaults @ HTTPRoute shop/a); Envoy refuses a back-off that is not above 0s\n  hint: fix that policy's retry.backoff (at least 1ms, or leave it out)"
    );

    // The resolver drops such a route; this is the line behind it.
    let mut large = two_listeners();
    large.document.routes[0].matches = vec![HttpRouteMatch {
        path: Some(PathMatch {
            kind: PathMatchType::RegularExpression,
            value: "/rx/[a-z]{300}".into(),
        }),
        ..HttpRouteMatch::default()
    }];
    let err = xds_state(&large, &book(&["*=127.0.0.1:9000"]), &options())
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("route http/shop/a/0 (listener http): regex \"/rx/[a-z]{300}\" compiles to an RE2 program of about 308 instructions; Envoy refuses more than 100"),
        "{err}"
    );
}

#[test]
fn no_file_name_is_built_from_a_component_that_could_leave_its_directory() {
    let layout = XdsLayout::new("/run/x");
    for bad in [
        "",
        ".",
        "..",
        "../../escaped",
        "a/b",
        "a\\b",
        "a\0b",
        "/abs",
    ] {
        assert!(
            matches!(
                file_component(bad),
                Err(XdsCheckError::UnsafeFileName { ref name, .. }) if name == bad
            ),
            "{bad:?}"
        );
        let err = layout.rds_file(bad).unwrap_err();
        assert!(
            matches!(
                err,
                RenderError::XdsCheck(XdsCheckError::UnsafeFileName { .. })
            ),
            "{bad:?}: {err}"
        );
    }
    assert_eq!(file_component("api.v1"), Ok("api.v1"));
    assert_eq!(
        layout.rds_file("http").unwrap(),
        "/run/x/rds/http/routes.json"
    );
}

#[test]
fn a_hostile_listener_name_refuses_the_whole_state_before_any_file() {
    // As if a caller other than the parser handed us the name. (A `/`
    // cannot get through: the port listener's name writes a ListenerSet
    // key's `/` as `~`, see below.)
    let hostile = resolution(
        vec![listener("..", 80, "HTTP")],
        vec![(entry("..", "a", "/"), vec![backend("v1", 1)])],
    );
    let mut no_ports = options();
    no_ports.listeners.listener_ports.clear();
    let err = xds_state(&hostile, &book(&["*=127.0.0.1:9000"]), &no_ports).unwrap_err();
    assert!(
        matches!(
            err,
            RenderError::XdsCheck(XdsCheckError::UnsafeFileName { ref name, .. }) if name == ".."
        ),
        "{err}"
    );

    // And the check alone, for states built by hand.
    let (mut state, _) =
        xds_state(&two_listeners(), &book(&["*=127.0.0.1:9000"]), &options()).unwrap();
    let config = state.route_configs["http"].clone();
    state.route_configs.insert("..".into(), config);
    assert!(matches!(
        check(&state),
        Err(XdsCheckError::UnsafeFileName { .. })
    ));
}

/// Two HTTPS listeners on one port and an HTTP one: each HTTPS listener is
/// a filter chain of its own, chosen by SNI, with its own routes and its
/// certificate through SDS; a listener whose Secret is missing is left out
/// with an error naming it, and the others are still rendered.
#[test]
fn https_listeners_are_chains_chosen_by_sni_with_certificates_through_sds() {
    use attache_core::source::{Origin, SourceDoc};
    use attache_core::topology::{ListenerInfo, ListenerTls, ObjectKey};
    let https = |name: &str, host: &str, secret: &str| ListenerInfo {
        hostname: Some(host.into()),
        tls: Some(ListenerTls {
            certificate_refs: vec![ObjectKey {
                namespace: "infra".into(),
                name: secret.into(),
            }],
        }),
        ..listener(name, 443, "HTTPS")
    };
    let res = resolution(
        vec![
            listener("http", 80, "HTTP"),
            https("shop", "shop.example.com", "shop-cert"),
            https("api", "api.example.com", "api-cert"),
        ],
        vec![
            (entry("http", "a", "/"), vec![backend("v1", 1)]),
            (entry("shop", "s", "/"), vec![backend("v1", 1)]),
            (entry("api", "x", "/"), vec![backend("v1", 1)]),
        ],
    );
    let mut book = book(&["*=127.0.0.1:9000"]);
    let pem = |label: &str| format!("-----BEGIN {label}-----\nAAAA\n-----END {label}-----\n");
    book.manifests = crate::manifests::Manifests::index(&[SourceDoc {
        origin: Origin {
            file: "certs.yaml".into(),
            document: 1,
            item: None,
        },
        value: serde_json::json!({
            "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": "shop-cert", "namespace": "infra"},
            "stringData": {"tls.crt": pem("CERTIFICATE"), "tls.key": pem("PRIVATE KEY")}
        }),
    }]);
    let (state, (notes, errors)) = xds_state(&res, &book, &options()).unwrap();
    assert_eq!(
        notes,
        ["route api/shop/x/0 is on listener 'api', which is not rendered"]
    );
    assert_eq!(
        errors,
        ["listener 'api' (HTTPS) is not served: its tls.certificateRefs[0], Secret infra/api-cert, is not in the input; add the kubernetes.io/tls Secret's manifest"]
    );
    // Named after every Gateway listener on the port, so it keeps its name
    // when a Secret comes or goes (a renamed listener would rebind).
    let tls_listener = &state.listeners["shop+api"];
    let chains = tls_listener["filter_chains"].as_array().unwrap();
    assert_eq!(chains.len(), 1);
    assert_eq!(
        chains[0]["filter_chain_match"]["server_names"],
        serde_json::json!(["shop.example.com"])
    );
    let sds = &chains[0]["transport_socket"]["typed_config"]["common_tls_context"]
        ["tls_certificate_sds_secret_configs"][0];
    assert_eq!(sds["name"], "infra/shop-cert");
    assert_eq!(
        sds["sds_config"]["path_config_source"]["path"],
        "/run/attache/sds/infra_shop-cert/secret.json"
    );
    assert_eq!(
        tls_listener["listener_filters"][0]["name"],
        "envoy.filters.listener.tls_inspector"
    );
    // Its own route configuration: only its own routes.
    let hcm = &chains[0]["filters"][0]["typed_config"];
    assert_eq!(hcm["rds"]["route_config_name"], "shop");
    let routes = &state.route_configs["shop"]["virtual_hosts"][0]["routes"];
    assert_eq!(routes.as_array().unwrap().len(), 1);
    assert_eq!(routes[0]["name"], "shop/shop/s/0");
    assert!(!state.route_configs.contains_key("api"));
    assert_eq!(
        state.secrets.keys().collect::<Vec<_>>(),
        ["infra/shop-cert"]
    );
    // The plain HTTP listener is untouched by all this.
    assert!(state.listeners["http"]["filter_chains"][0]
        .get("transport_socket")
        .is_none());
    // A rotated certificate is one SDS step; the listener is not rewritten.
    let mut rotated = state.clone();
    rotated.secrets.get_mut("infra/shop-cert").unwrap()["tls_certificate"]["certificate_chain"]
        ["inline_string"] = serde_json::json!(pem("CERTIFICATE").replace("AAAA", "BBBB"));
    let steps = transition(Some(&state), &rotated);
    assert!(steps
        .iter()
        .any(|s| matches!(s, Step::Secret { name, .. } if name == "infra/shop-cert")));
    assert_eq!(
        steps
            .iter()
            .filter(|s| matches!(s, Step::Secret { .. }))
            .count(),
        1
    );
    let Some(Step::Listeners(listeners)) = steps.iter().find(|s| matches!(s, Step::Listeners(_)))
    else {
        panic!("no LDS step");
    };
    assert_eq!(listeners, &state.listeners);
}

#[test]
fn a_listener_sets_listener_shares_its_port_and_gets_a_file_safe_name() {
    // The Gateway's own `http` and a ListenerSet's `http` on one port: one
    // Envoy listener, each entry in the virtual host of its own listener.
    let mut own = listener("http", 80, "HTTP");
    own.hostname = Some("*.example.com".into());
    let mut set = listener("team-a/ls-a/http", 80, "HTTP");
    set.hostname = Some("gifts.example.com".into());
    let mut gifts = entry("team-a/ls-a/http", "gifts", "/");
    gifts.listener = "http".into();
    gifts.listener_set = Some("team-a/ls-a".into());
    let r = resolution(
        vec![own, set],
        vec![
            (entry("http", "home", "/"), vec![backend("v1", 1)]),
            (gifts, vec![backend("v1", 1)]),
        ],
    );
    let mut no_ports = options();
    no_ports.listeners.listener_ports.clear();
    let (state, _) = xds_state(&r, &book(&["*=127.0.0.1:9000"]), &no_ports).unwrap();
    let names: Vec<&String> = state.listeners.keys().collect();
    assert_eq!(names, ["http+team-a~ls-a~http"]);
    let config = &state.route_configs["http+team-a~ls-a~http"];
    let hosts: Vec<(String, Vec<String>)> = config["virtual_hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|vh| {
            (
                vh["name"].as_str().unwrap().to_string(),
                vh["routes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r["name"].as_str().unwrap().to_string())
                    .collect(),
            )
        })
        .collect();
    assert_eq!(
        hosts,
        [
            (
                "gifts.example.com".to_string(),
                vec!["team-a/ls-a/http/shop/gifts/0".to_string()]
            ),
            (
                "*.example.com".to_string(),
                vec!["http/shop/home/0".to_string()]
            ),
        ]
    );
}

#[test]
fn a_sets_listener_follows_the_listener_moved_from_its_port() {
    let mut own = listener("http", 80, "HTTP");
    own.hostname = Some("*.example.com".into());
    let mut set = listener("team-a/ls-a/http", 80, "HTTP");
    set.hostname = Some("gifts.example.com".into());
    let r = resolution(
        vec![own, set, listener("admin", 8081, "HTTP")],
        vec![(entry("http", "home", "/"), vec![backend("v1", 1)])],
    );
    let mut opts = options();
    opts.listeners.listener_ports = [("http".to_string(), 18080)].into();
    let (state, _) = xds_state(&r, &book(&["*=127.0.0.1:9000"]), &opts).unwrap();
    let ports: Vec<(String, u64)> = state
        .listeners
        .iter()
        .map(|(name, l)| {
            (
                name.clone(),
                l["address"]["socket_address"]["port_value"]
                    .as_u64()
                    .unwrap(),
            )
        })
        .collect();
    assert_eq!(
        ports,
        [
            ("admin".to_string(), 8081),
            ("http+team-a~ls-a~http".to_string(), 18080)
        ]
    );
}

#[test]
fn a_listener_without_a_port_is_not_rendered_and_says_so() {
    let r = resolution(
        vec![
            listener("http", 80, "HTTP"),
            listener("team-a/ls-a/dyn", 0, "HTTP"),
        ],
        vec![(entry("http", "home", "/"), vec![backend("v1", 1)])],
    );
    let mut opts = options();
    opts.listeners.listener_ports.clear();
    let (state, (notes, _)) = xds_state(&r, &book(&["*=127.0.0.1:9000"]), &opts).unwrap();
    assert_eq!(state.listeners.keys().collect::<Vec<_>>(), ["http"]);
    assert!(
        notes.contains(
            &"listener 'team-a/ls-a/dyn' has no port and is not rendered; give it one, or move it with --listener-port"
                .to_string()
        ),
        "{notes:?}"
    );
}
