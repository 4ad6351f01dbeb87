use super::*;
use std::collections::BTreeMap;

use crate::resources::ListenerOptions;
use crate::test_gateway::{backend, book, entry, listener, resolution};
use crate::wasm::FILTER_NAME;
use attache_contract::Retry;

fn options() -> EnvoyOptions {
    EnvoyOptions {
        ecds_path: "/run/attache/ecds.json".into(),
        filter: crate::filter::FilterBinary::Wasm("/opt/f.wasm".into()),
        admin: AdminOptions {
            address: "127.0.0.1".into(),
            port: 9901,
        },
        listeners: ListenerOptions {
            listen_address: "127.0.0.1".into(),
            listener_ports: BTreeMap::new(),
        },
    }
}

fn routes_of(config: &Value, listener: usize) -> Vec<Value> {
    let hcm = &config["static_resources"]["listeners"][listener]["filter_chains"][0]["filters"][0]
        ["typed_config"];
    hcm["route_config"]["virtual_hosts"][0]["routes"]
        .as_array()
        .cloned()
        .unwrap()
}

#[test]
fn routes_are_named_by_entry_carry_backoff_and_split_by_weight() {
    let mut canary = entry("http", "canary", "/shop");
    canary.settings.retry = Some(Retry {
        attempts: Some(2),
        codes: Some(vec![503]),
        backoff_ms: Some(250),
        ..Retry::default()
    });
    let res = resolution(
        vec![listener("http", 80, "HTTP")],
        vec![
            (
                canary,
                vec![backend("v1", 90), backend("v2", 10), backend("off", 0)],
            ),
            (entry("http", "plain", "/"), vec![backend("v1", 1)]),
        ],
    );
    let rendered = envoy_bootstrap(&res, &book(&["*=127.0.0.1:9000"]), &options()).unwrap();
    let routes = routes_of(&rendered.config, 0);
    assert_eq!(routes[0]["name"], "http/shop/canary/0");
    assert_eq!(
        routes[0]["match"],
        json!({"path_separated_prefix": "/shop"})
    );
    assert_eq!(
        routes[0]["route"]["weighted_clusters"],
        json!({"clusters": [{"name": "shop/v1/80", "weight": 90}, {"name": "shop/v2/80", "weight": 10}]}),
        "weight 0 sends nothing and is left out"
    );
    assert_eq!(
        routes[0]["route"]["retry_policy"],
        json!({"retry_back_off": {"base_interval": "0.250s"}})
    );
    assert_eq!(routes[0]["route"]["timeout"], "0s");
    assert_eq!(routes[1]["name"], "http/shop/plain/0");
    assert_eq!(routes[1]["route"]["cluster"], "shop/v1/80");
    assert!(
        routes[1]["route"].get("retry_policy").is_none(),
        "no backoff, no retry_policy"
    );
    let clusters: Vec<&str> = rendered.config["static_resources"]["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(clusters, ["shop/v1/80", "shop/v2/80"]);
}

#[test]
fn a_rule_without_backends_answers_500() {
    let res = resolution(
        vec![listener("http", 80, "HTTP")],
        vec![(entry("http", "none", "/"), vec![backend("zero", 0)])],
    );
    let rendered = envoy_bootstrap(&res, &book(&[]), &options()).unwrap();
    assert_eq!(
        routes_of(&rendered.config, 0)[0]["direct_response"],
        json!({"status": 500})
    );
}

#[test]
fn the_filter_comes_from_the_ecds_file_with_the_document_as_default() {
    let res = resolution(
        vec![listener("http", 80, "HTTP")],
        vec![(entry("http", "a", "/"), vec![backend("v1", 1)])],
    );
    let rendered = envoy_bootstrap(&res, &book(&["*=127.0.0.1:9000"]), &options()).unwrap();
    let hcm = &rendered.config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"]
        [0]["typed_config"];
    let filters = hcm["http_filters"].as_array().unwrap();
    assert_eq!(filters.len(), 2);
    assert_eq!(
        filters[1]["name"], "envoy.filters.http.router",
        "the router comes last"
    );
    let discovery = &filters[0]["config_discovery"];
    assert_eq!(filters[0]["name"], FILTER_NAME);
    assert_eq!(
        discovery["config_source"]["path_config_source"],
        json!({"path": "/run/attache/ecds.json", "watched_directory": {"path": "/run/attache"}})
    );
    let default = &discovery["default_config"]["config"];
    assert_eq!(
        default["vm_config"]["code"]["local"]["filename"],
        "/opt/f.wasm"
    );
    let carried: attache_contract::DataPlaneDocument =
        serde_json::from_str(default["configuration"]["value"].as_str().unwrap()).unwrap();
    assert_eq!(carried, crate::plugin_config::encode(&res.document));
    assert_eq!(hcm["use_remote_address"], true);
    assert_eq!(hcm["strip_any_host_port"], true);
}

#[test]
fn listener_ports_move_listeners_and_unknown_names_are_refused() {
    let res = resolution(
        vec![
            listener("http", 80, "HTTP"),
            listener("admin", 8081, "HTTP"),
            listener("tls", 443, "HTTPS"),
        ],
        vec![
            (entry("http", "a", "/"), vec![backend("v1", 1)]),
            (entry("admin", "ops", "/ops"), vec![backend("ops", 1)]),
        ],
    );
    let mut opts = options();
    opts.listeners.listener_ports.insert("http".into(), 18080);
    let rendered = envoy_bootstrap(&res, &book(&["*=backend:9000"]), &opts).unwrap();
    let listeners = rendered.config["static_resources"]["listeners"]
        .as_array()
        .unwrap();
    let bound: Vec<(String, u64)> = listeners
        .iter()
        .map(|l| {
            (
                l["name"].as_str().unwrap().to_string(),
                l["address"]["socket_address"]["port_value"]
                    .as_u64()
                    .unwrap(),
            )
        })
        .collect();
    assert_eq!(
        bound,
        [("admin".to_string(), 8081), ("http".to_string(), 18080)]
    );
    assert_eq!(
        rendered.notes,
        ["listener 'tls' (HTTPS) is not served: it names no certificate (tls.certificateRefs)"]
    );
    let cluster = &rendered.config["static_resources"]["clusters"][0];
    assert_eq!(
        cluster["type"], "STRICT_DNS",
        "a DNS name is resolved by Envoy"
    );

    opts.listeners.listener_ports.insert("htp".into(), 1);
    let err = envoy_bootstrap(&res, &book(&["*=backend:9000"]), &opts)
        .unwrap_err()
        .to_string();
    assert_eq!(err, "--listener-port names listener 'htp', but Gateway infra/edge has no such listener; valid: http, admin, tls");
}

#[test]
fn listeners_sharing_a_port_share_one_envoy_listener_unless_protocols_differ() {
    let mut shop = listener("shop", 80, "HTTP");
    shop.hostname = Some("shop.example.com".into());
    let mut entries = vec![
        (entry("shop", "a", "/"), vec![backend("v1", 1)]),
        (entry("any", "b", "/"), vec![backend("v1", 1)]),
    ];
    entries[0].0.hostnames = vec!["shop.example.com".into()];
    let res = resolution(
        vec![shop.clone(), listener("any", 80, "HTTP")],
        entries.clone(),
    );
    let rendered = envoy_bootstrap(&res, &book(&["*=10.0.0.1:80"]), &options()).unwrap();
    let listeners = rendered.config["static_resources"]["listeners"]
        .as_array()
        .unwrap();
    assert_eq!(listeners.len(), 1);
    assert_eq!(listeners[0]["name"], "shop+any");
    let vhosts = listeners[0]["filter_chains"][0]["filters"][0]["typed_config"]["route_config"]
        ["virtual_hosts"]
        .clone();
    assert_eq!(vhosts[0]["domains"], json!(["shop.example.com"]));
    assert_eq!(vhosts[1]["domains"], json!(["*"]));

    let res = resolution(vec![shop, listener("tls", 80, "HTTPS")], entries);
    let err = envoy_bootstrap(&res, &book(&["*=10.0.0.1:80"]), &options())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("both need local port 80 but speak different protocols (HTTP vs HTTPS)"),
        "{err}"
    );
}

#[test]
fn a_backend_without_address_fails_the_render_naming_it() {
    let res = resolution(
        vec![listener("http", 80, "HTTP")],
        vec![(entry("http", "a", "/"), vec![backend("lost", 1)])],
    );
    let err = envoy_bootstrap(&res, &book(&[]), &options())
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("backend shop/lost/80 (used by route http/shop/a/0) has no address"),
        "{err}"
    );
}
