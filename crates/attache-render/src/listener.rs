//! The Envoy listener for one local port: an HTTP connection manager set up
//! like an edge proxy's, the Attaché filter configured through ECDS, and
//! the router. Its routes are either inline (the static bootstrap) or read
//! through RDS from a file (the file-based xDS layout).

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::chains::{Chain, PortListener};
use crate::sds::{self, config_source};
use crate::wasm::FILTER_NAME;

const HCM_TYPE_URL: &str =
    "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager";
const ROUTER_TYPE_URL: &str = "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router";
pub const LISTENER_TYPE_URL: &str = "type.googleapis.com/envoy.config.listener.v3.Listener";

/// Where a listener's routes (and certificates) come from.
#[derive(Debug, Clone, Copy)]
pub enum Routes<'a> {
    /// In the listener itself (`route_config`); no TLS chains.
    Inline,
    /// From files: each chain's RDS file (by chain name), which holds the
    /// route configuration named like the chain, and each certificate's
    /// SDS file (by SDS name).
    Files {
        rds: &'a BTreeMap<String, String>,
        sds: &'a BTreeMap<String, String>,
    },
}

/// How the listener loads the Attaché filter.
#[derive(Debug, Clone, Copy)]
pub struct FilterSource<'a> {
    /// The ECDS file, as Envoy sees it.
    pub ecds_path: &'a str,
    /// What the filter runs with until (or unless) the file brings a good
    /// configuration. `None`: nothing; requests get 500 until the ECDS file
    /// is good (Envoy's missing-config filter), so no route is ever served
    /// without its policies.
    pub default_config: Option<&'a Value>,
    /// The filter configuration's type (the Wasm filter's, or the dynamic
    /// modules filter's): Envoy refuses an ECDS resource of another type.
    pub type_url: &'static str,
}

pub fn listener(
    port_listener: &PortListener,
    address: &str,
    routes: Routes<'_>,
    filter: FilterSource<'_>,
) -> Value {
    let chains: Vec<Value> = port_listener
        .chains
        .iter()
        .map(|chain| filter_chain(chain, routes, filter))
        .collect();
    let mut out = json!({
        "name": port_listener.name,
        "address": {"socket_address": {"address": address, "port_value": port_listener.port}},
        "filter_chains": chains
    });
    if port_listener.chains.iter().any(|c| c.tls.is_some()) {
        out["listener_filters"] = json!([sds::tls_inspector()]);
    }
    out
}

fn filter_chain(chain: &Chain, routes: Routes<'_>, filter: FilterSource<'_>) -> Value {
    let name = &chain.name;
    let mut hcm = json!({
        "@type": HCM_TYPE_URL,
        "stat_prefix": name,
        "codec_type": "AUTO",
        // Edge proxy: the client is the peer, not an X-Forwarded-For entry,
        // and no client is internal, so Envoy strips x-envoy-* control
        // headers from every request (the filter strips them too).
        "use_remote_address": true,
        "xff_num_trusted_hops": 0,
        "internal_address_config": {"cidr_ranges": []},
        "normalize_path": true,
        "merge_slashes": true,
        "path_with_escaped_slashes_action": "UNESCAPE_AND_REDIRECT",
        // Hostnames match with or without `:port` in Host.
        "strip_any_host_port": true,
        "common_http_protocol_options": {"idle_timeout": "3600s"},
        "stream_idle_timeout": "300s",
        "request_headers_timeout": "10s",
        "local_reply_config": grpc_deadline_reply(),
        "http_filters": [
            ecds_filter(filter),
            {"name": "envoy.filters.http.router", "typed_config": {"@type": ROUTER_TYPE_URL}}
        ]
    });
    let mut out = json!({});
    match routes {
        Routes::Inline => hcm["route_config"] = chain.route_config.clone(),
        Routes::Files { rds, sds } => {
            let path = rds.get(name).map(String::as_str).unwrap_or_default();
            hcm["rds"] = json!({"route_config_name": name, "config_source": config_source(path)});
            if let Some(tls) = &chain.tls {
                let secrets: Vec<(String, String)> = tls
                    .secrets
                    .iter()
                    .map(|s| (s.clone(), sds.get(s).cloned().unwrap_or_default()))
                    .collect();
                out["transport_socket"] = sds::transport_socket(&secrets);
                if !tls.server_names.is_empty() {
                    out["filter_chain_match"] = json!({"server_names": tls.server_names});
                }
            }
        }
    }
    out["filters"] =
        json!([{"name": "envoy.filters.network.http_connection_manager", "typed_config": hcm}]);
    out
}

/// A gRPC call cut by the route's timeout (`timeouts.request`, or
/// `backendRequest` on the last try) ends with `DEADLINE_EXCEEDED`, as a
/// gRPC deadline does. Envoy answers a timed-out gRPC request with a
/// trailers-only 504 whose `grpc-status` it derives from the HTTP status
/// (504 -> UNAVAILABLE, gRPC's HTTP mapping), which a client would take for
/// a retriable outage; Envoy keeps a `grpc-status` a local-reply mapper
/// set. Only replies with Envoy's upstream-timeout flag (`UT`) to gRPC
/// requests are touched (docs/envoy.md).
fn grpc_deadline_reply() -> Value {
    json!({"mappers": [{
        "filter": {"and_filter": {"filters": [
            {"response_flag_filter": {"flags": ["UT"]}},
            {"header_filter": {"header": {
                "name": "content-type",
                "string_match": {"prefix": "application/grpc"}
            }}}
        ]}},
        "headers_to_add": [{
            "header": {"key": "grpc-status", "value": GRPC_DEADLINE_EXCEEDED},
            "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"
        }]
    }]})
}

/// gRPC's status code 4.
const GRPC_DEADLINE_EXCEEDED: &str = "4";

/// The Attaché filter, configured from the ECDS file. Envoy watches the
/// file's directory and applies a new file that is renamed into place.
fn ecds_filter(filter: FilterSource<'_>) -> Value {
    let mut discovery = serde_json::Map::new();
    discovery.insert("config_source".into(), config_source(filter.ecds_path));
    if let Some(default_config) = filter.default_config {
        discovery.insert("default_config".into(), default_config.clone());
    }
    discovery.insert("type_urls".into(), json!([filter.type_url]));
    json!({"name": FILTER_NAME, "config_discovery": discovery})
}
