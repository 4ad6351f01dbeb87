//! The static Envoy bootstrap for one Gateway: a listener per port, routes
//! in Gateway API precedence named by schema-1 entry names, one cluster per
//! backend Service and port, and the Attaché filter loaded through ECDS from
//! a watched file.

use std::collections::BTreeMap;

use attache_contract::RouteEntry;
use attache_core::topology::{GatewayResolution, ListenerInfo};
use serde_json::{json, Value};

use crate::backends::{AddressBook, Cluster};
use crate::duration;
use crate::error::{PortClash, RenderError};
use crate::matching;
use crate::virtual_hosts::{self, RouteRef};
use crate::wasm::{self, FILTER_NAME, WASM_TYPE_URL};

/// Everything about the bootstrap that is not in the resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvoyOptions {
    /// The ECDS file the filter's configuration is read from, written
    /// verbatim (relative paths are relative to Envoy's working directory).
    pub ecds_path: String,
    /// The filter's `.wasm`, written verbatim as the default configuration's
    /// `vm_config.code.local.filename`.
    pub wasm_path: String,
    pub listen_address: String,
    pub admin_address: String,
    pub admin_port: u16,
    /// Gateway listener name to local port; others keep their own port.
    pub listener_ports: BTreeMap<String, u16>,
}

/// A rendered configuration and what was left out of it, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub config: Value,
    pub notes: Vec<String>,
}

const HCM_TYPE_URL: &str =
    "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager";
const ROUTER_TYPE_URL: &str = "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router";

pub fn envoy_bootstrap(
    resolution: &GatewayResolution,
    book: &AddressBook,
    options: &EnvoyOptions,
) -> Result<Rendered, RenderError> {
    let gateway = resolution.gateway.to_string();
    check_listener_ports(resolution, options)?;
    let mut notes = Vec::new();
    let by_port = group_by_port(resolution, options, &mut notes)?;
    if by_port.is_empty() {
        return Err(RenderError::NoHttpListener { gateway });
    }

    let default_config = wasm::filter_config(&resolution.document, &options.wasm_path)?;
    let routes = &resolution.document.routes;
    let mut clusters: BTreeMap<String, Cluster> = BTreeMap::new();
    let mut listeners = Vec::new();
    for (port, port_listeners) in &by_port {
        let served: Vec<&RouteEntry> = routes
            .iter()
            .filter(|e| port_listeners.iter().any(|l| l.name == e.listener))
            .collect();
        let virtual_hosts =
            port_virtual_hosts(resolution, &served, port_listeners, book, &mut clusters)?;
        let names: Vec<&str> = port_listeners.iter().map(|l| l.name.as_str()).collect();
        listeners.push(listener(
            &names.join("+"),
            &options.listen_address,
            *port,
            virtual_hosts,
            ecds_filter(options, &default_config),
        ));
    }
    for entry in routes {
        if !by_port.values().flatten().any(|l| l.name == entry.listener) {
            notes.push(format!(
                "route {} is on listener '{}', which is not rendered",
                entry.name, entry.listener
            ));
        }
    }

    let config = json!({
        "node": {"id": gateway, "cluster": gateway},
        "admin": {
            "address": {"socket_address": {"address": options.admin_address, "port_value": options.admin_port}}
        },
        "static_resources": {
            "listeners": listeners,
            "clusters": clusters.values().map(envoy_cluster).collect::<Vec<_>>()
        },
        // Envoy warns at start without a limit on downstream connections;
        // an edge proxy wants one anyway.
        "overload_manager": {
            "resource_monitors": [{
                "name": "envoy.resource_monitors.global_downstream_max_connections",
                "typed_config": {
                    "@type": "type.googleapis.com/envoy.extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig",
                    "max_active_downstream_connections": 50000
                }
            }]
        }
    });
    Ok(Rendered { config, notes })
}

/// `--listener-port` may only name listeners the Gateway has.
fn check_listener_ports(
    resolution: &GatewayResolution,
    options: &EnvoyOptions,
) -> Result<(), RenderError> {
    for name in options.listener_ports.keys() {
        if !resolution.listeners.iter().any(|l| &l.name == name) {
            let valid: Vec<&str> = resolution
                .listeners
                .iter()
                .map(|l| l.name.as_str())
                .collect();
            return Err(RenderError::UnknownListener {
                listener: name.clone(),
                gateway: resolution.gateway.to_string(),
                valid: valid.join(", "),
            });
        }
    }
    Ok(())
}

/// The virtual hosts of one port, each with its routes in precedence order.
fn port_virtual_hosts(
    resolution: &GatewayResolution,
    served: &[&RouteEntry],
    port_listeners: &[&ListenerInfo],
    book: &AddressBook,
    clusters: &mut BTreeMap<String, Cluster>,
) -> Result<Vec<Value>, RenderError> {
    let mut virtual_hosts = Vec::new();
    for plan in virtual_hosts::plan(served, port_listeners) {
        let mut envoy_routes = Vec::new();
        for route in &plan.routes {
            envoy_routes.push(envoy_route(resolution, route, book, clusters)?);
        }
        virtual_hosts
            .push(json!({"name": plan.domain, "domains": [plan.domain], "routes": envoy_routes}));
    }
    Ok(virtual_hosts)
}

/// HTTP listeners by local port. Listeners of other protocols are left out
/// with a note: the filter and these routes are for plain HTTP.
fn group_by_port<'a>(
    resolution: &'a GatewayResolution,
    options: &EnvoyOptions,
    notes: &mut Vec<String>,
) -> Result<BTreeMap<u16, Vec<&'a ListenerInfo>>, RenderError> {
    let mut by_port: BTreeMap<u16, Vec<&ListenerInfo>> = BTreeMap::new();
    let mut first_on_port: BTreeMap<u16, &ListenerInfo> = BTreeMap::new();
    for listener in &resolution.listeners {
        let port = options
            .listener_ports
            .get(&listener.name)
            .copied()
            .unwrap_or(listener.port);
        if let Some(first) = first_on_port.get(&port) {
            if !first.protocol.eq_ignore_ascii_case(&listener.protocol) {
                return Err(RenderError::from(Box::new(PortClash {
                    gateway: resolution.gateway.to_string(),
                    port,
                    first: first.name.clone(),
                    first_protocol: first.protocol.clone(),
                    second: listener.name.clone(),
                    second_protocol: listener.protocol.clone(),
                })));
            }
        }
        first_on_port.entry(port).or_insert(listener);
        if listener.protocol.eq_ignore_ascii_case("HTTP") {
            by_port.entry(port).or_default().push(listener);
        } else {
            notes.push(format!(
                "listener '{}' ({}) is not rendered: only HTTP listeners are",
                listener.name, listener.protocol
            ));
        }
    }
    Ok(by_port)
}

fn envoy_route(
    resolution: &GatewayResolution,
    route: &RouteRef<'_>,
    book: &AddressBook,
    clusters: &mut BTreeMap<String, Cluster>,
) -> Result<Value, RenderError> {
    let entry = route.entry;
    let route_match = match route.matched {
        Some(m) => matching::route_match(m),
        None => matching::match_all(),
    };
    let targets: Vec<_> = resolution
        .backends
        .get(&entry.name)
        .map(|targets| targets.iter().filter(|t| t.weight > 0).collect())
        .unwrap_or_default();
    let mut weighted = Vec::new();
    for target in &targets {
        let cluster = book.cluster_for(target, &entry.name)?;
        weighted.push(json!({"name": cluster.name, "weight": target.weight}));
        clusters.insert(cluster.name.clone(), cluster);
    }
    if weighted.is_empty() {
        // Gateway API: a rule with no usable backend answers 500.
        return Ok(
            json!({"name": entry.name, "match": route_match, "direct_response": {"status": 500}}),
        );
    }
    let mut action = serde_json::Map::new();
    if let [single] = weighted.as_slice() {
        action.insert("cluster".into(), single["name"].clone());
    } else {
        action.insert("weighted_clusters".into(), json!({"clusters": weighted}));
    }
    // Timeouts and retries travel as x-envoy-* request headers that the
    // filter sets from the document, so a hot-reloaded document changes
    // them. No route timeout: Envoy's 15 s default would otherwise apply to
    // routes the policies leave without one.
    action.insert("timeout".into(), json!("0s"));
    if let Some(backoff) = entry.retry.as_ref().and_then(|r| r.backoff_ms) {
        // Envoy has no request header for the back-off; the route carries
        // it and the filter's x-envoy-retry-on/x-envoy-max-retries headers
        // switch retries on.
        action.insert(
            "retry_policy".into(),
            json!({"retry_back_off": {"base_interval": duration::from_ms(backoff)}}),
        );
    }
    Ok(json!({"name": entry.name, "match": route_match, "route": Value::Object(action)}))
}

fn listener(
    name: &str,
    address: &str,
    port: u16,
    virtual_hosts: Vec<Value>,
    ecds_filter: Value,
) -> Value {
    json!({
        "name": name,
        "address": {"socket_address": {"address": address, "port_value": port}},
        "filter_chains": [{
            "filters": [{
                "name": "envoy.filters.network.http_connection_manager",
                "typed_config": {
                    "@type": HCM_TYPE_URL,
                    "stat_prefix": name,
                    "codec_type": "AUTO",
                    // Edge proxy: the client is the peer, not an
                    // X-Forwarded-For entry, and no client is internal, so
                    // Envoy strips x-envoy-* control headers from every
                    // request (the filter strips them too).
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
                    "route_config": {"name": name, "virtual_hosts": virtual_hosts},
                    "http_filters": [
                        ecds_filter,
                        {"name": "envoy.filters.http.router", "typed_config": {"@type": ROUTER_TYPE_URL}}
                    ]
                }
            }]
        }]
    })
}

/// The Attaché filter, configured from the ECDS file. Envoy watches the
/// file's directory and applies a new file that is renamed into place.
fn ecds_filter(options: &EnvoyOptions, default_config: &Value) -> Value {
    let directory = match options.ecds_path.rsplit_once('/') {
        Some(("", _)) => "/".to_string(),
        Some((directory, _)) => directory.to_string(),
        None => ".".to_string(),
    };
    json!({
        "name": FILTER_NAME,
        "config_discovery": {
            "config_source": {
                "path_config_source": {"path": options.ecds_path, "watched_directory": {"path": directory}},
                "resource_api_version": "V3"
            },
            // Until the file is there (a generator still starting), the
            // filter runs with the document as it was at render time.
            "default_config": default_config,
            "type_urls": [WASM_TYPE_URL]
        }
    })
}

fn envoy_cluster(cluster: &Cluster) -> Value {
    let all_ip = cluster.endpoints.iter().all(|e| e.is_ip());
    let lb_endpoints: Vec<Value> = cluster
        .endpoints
        .iter()
        .map(|e| json!({"endpoint": {"address": {"socket_address": {"address": e.host, "port_value": e.port}}}}))
        .collect();
    let mut out = json!({
        "name": cluster.name,
        "type": if all_ip { "STATIC" } else { "STRICT_DNS" },
        "connect_timeout": "5s",
        // Envoy allows 3 concurrent retries per cluster by default; policies
        // say how many attempts a request gets, so do not cap them by load.
        "circuit_breakers": {"thresholds": [{"priority": "DEFAULT", "max_retries": 1024}]},
        "load_assignment": {"cluster_name": cluster.name, "endpoints": [{"lb_endpoints": lb_endpoints}]}
    });
    if !all_ip {
        out["dns_lookup_family"] = json!("V4_PREFERRED");
    }
    out
}

#[cfg(test)]
mod tests;
