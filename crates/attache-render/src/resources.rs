//! What one Gateway becomes in Envoy, before it is put anywhere: an Envoy
//! listener per local port with its route configuration (virtual hosts in
//! Gateway API precedence, routes named by schema-1 entry names), and one
//! cluster per backend Service and port. The static bootstrap embeds these;
//! the file-based xDS layout ([`crate::xds`]) writes them to LDS, RDS and
//! CDS files. One home, so the two cannot route differently.

use std::collections::BTreeMap;

use attache_contract::{HeaderChanges, Retry, RouteEntry, Settings, Timeouts};
use attache_core::topology::{BackendTarget, GatewayResolution, ListenerInfo};
use serde_json::{json, Value};

pub use crate::chains::{Chain, ChainTls, PortListener};

use crate::backends::{AddressBook, Cluster};
use crate::duration;
use crate::error::{PortClash, RenderError};
use crate::matching;
use crate::secrets::TlsSecret;
use crate::tls;
use crate::virtual_hosts::{self, RouteRef};

/// Where the Gateway's listeners bind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerOptions {
    pub listen_address: String,
    /// Listener key (`http`, `team-a/ls-a/http`) to local port; others keep their own port.
    pub listener_ports: BTreeMap<String, u16>,
}

/// Everything Envoy needs for one Gateway, and what was left out, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayResources {
    /// By local port.
    pub listeners: Vec<PortListener>,
    /// `envoy.config.cluster.v3.Cluster` values, by name.
    pub clusters: BTreeMap<String, Value>,
    /// The Secrets HTTPS chains name, by SDS name.
    pub secrets: BTreeMap<String, TlsSecret>,
    pub notes: Vec<String>,
    /// Listeners left out for a reason the user must fix (a missing or
    /// malformed Secret); the other listeners are still rendered.
    pub errors: Vec<String>,
}

pub fn gateway_resources(
    resolution: &GatewayResolution,
    book: &AddressBook,
    options: &ListenerOptions,
) -> Result<GatewayResources, RenderError> {
    let gateway = resolution.gateway.to_string();
    check_listener_ports(resolution, options)?;
    let mut notes = Vec::new();
    let by_port = group_by_port(resolution, options, &mut notes)?;
    if by_port.is_empty() {
        return Err(RenderError::NoHttpListener { gateway });
    }
    let routes = &resolution.document.routes;
    let mut clusters: BTreeMap<String, Cluster> = BTreeMap::new();
    let mut listeners = Vec::new();
    let mut secrets = BTreeMap::new();
    let mut errors = Vec::new();
    let mut rendered: Vec<&str> = Vec::new();
    let keys: Vec<String> = routes.iter().map(RouteEntry::listener_key).collect();
    for (port, port_listeners) in &by_port {
        let name = port_listener_name(port_listeners);
        let mut chains = Vec::new();
        let https = port_listeners
            .iter()
            .all(|l| l.protocol.eq_ignore_ascii_case("HTTPS"));
        // HTTP: one chain for the port; HTTPS: one per listener.
        let groups: Vec<Vec<&ListenerInfo>> = if https {
            port_listeners.iter().map(|l| vec![*l]).collect()
        } else {
            vec![port_listeners.clone()]
        };
        for group in groups {
            let tls = match https {
                true => match tls::chain_tls(group[0], book, &mut secrets) {
                    Ok(tls) => Some(tls),
                    Err(error) => {
                        errors.push(error.to_string());
                        continue;
                    }
                },
                false => None,
            };
            // Entries name their listener by key (`http`, `team-a/ls-a/http`).
            let served: Vec<&RouteEntry> = routes
                .iter()
                .zip(&keys)
                .filter(|(_, key)| group.iter().any(|l| l.name == **key))
                .map(|(e, _)| e)
                .collect();
            let virtual_hosts =
                port_virtual_hosts(resolution, &served, &group, book, &mut clusters)?;
            let chain_name = if https {
                port_listener_name(&group)
            } else {
                name.clone()
            };
            rendered.extend(group.iter().map(|l| l.name.as_str()));
            chains.push(Chain {
                route_config: json!({"name": chain_name, "virtual_hosts": virtual_hosts}),
                name: chain_name,
                tls,
            });
        }
        if !chains.is_empty() {
            listeners.push(PortListener {
                name,
                port: *port,
                chains,
            });
        }
    }
    if listeners.is_empty() {
        return Err(RenderError::NoHttpListener { gateway });
    }
    for (entry, key) in routes.iter().zip(&keys) {
        if !rendered.contains(&key.as_str()) {
            notes.push(format!(
                "route {} is on listener '{key}', which is not rendered",
                entry.name
            ));
        }
    }
    Ok(GatewayResources {
        listeners,
        clusters: clusters
            .values()
            .map(|c| (c.name.clone(), envoy_cluster(c)))
            .collect(),
        secrets,
        notes,
        errors,
    })
}

/// The Envoy listener (and route configuration, stat prefix, xDS
/// directory) of the Gateway listeners sharing one port: their keys joined
/// with `+`, each `/` of a ListenerSet listener's key
/// (`team-a/ls-a/http`) written `~`, which no Kubernetes name or
/// SectionName holds: the name stays one file-name component and two
/// listeners never share it. A Gateway's own listeners keep their names.
pub fn port_listener_name(listeners: &[&ListenerInfo]) -> String {
    listeners
        .iter()
        .map(|l| l.name.replace('/', "~"))
        .collect::<Vec<_>>()
        .join("+")
}

/// `--listener-port` may only name listeners the Gateway has (by key).
fn check_listener_ports(
    resolution: &GatewayResolution,
    options: &ListenerOptions,
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
    options: &ListenerOptions,
    notes: &mut Vec<String>,
) -> Result<BTreeMap<u16, Vec<&'a ListenerInfo>>, RenderError> {
    let mut by_port: BTreeMap<u16, Vec<&ListenerInfo>> = BTreeMap::new();
    let mut first_on_port: BTreeMap<u16, &ListenerInfo> = BTreeMap::new();
    for listener in &resolution.listeners {
        // A listener not moved itself follows one moved from its Gateway
        // port: the listeners a ListenerSet adds beside the Gateway's own
        // on one port stay on one local port (`--listener-port http=8080`
        // moves them all).
        let port = options
            .listener_ports
            .get(&listener.name)
            .or_else(|| {
                resolution
                    .listeners
                    .iter()
                    .filter(|other| other.port == listener.port && listener.port != 0)
                    .find_map(|other| options.listener_ports.get(&other.name))
            })
            .copied()
            .unwrap_or(listener.port);
        // An XListenerSet listener without a port (Gateway API v1.4's
        // dynamic port): Envoy would bind an ephemeral one nobody knows.
        if port == 0 {
            notes.push(format!(
                "listener '{}' has no port and is not rendered; give it one, or move it with --listener-port",
                listener.name
            ));
            continue;
        }
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
        if listener.protocol.eq_ignore_ascii_case("HTTP")
            || listener.protocol.eq_ignore_ascii_case("HTTPS")
        {
            by_port.entry(port).or_default().push(listener);
        } else {
            notes.push(format!(
                "listener '{}' ({}) is not rendered: only HTTP and HTTPS listeners are",
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
        let mut cluster = book.cluster_for(target, &entry.name)?;
        if entry.is_grpc() {
            // gRPC is HTTP/2 end to end: the backend of a GRPCRoute rule is
            // spoken to over HTTP/2 (prior knowledge, h2c on a plain port).
            cluster = cluster.into_http2();
        }
        let mut one = json!({"name": cluster.name, "weight": target.weight});
        backend_headers(&mut one, target);
        weighted.push(one);
        clusters.insert(cluster.name.clone(), cluster);
    }
    if weighted.is_empty() {
        // Gateway API: a rule with no usable backend answers 500.
        return Ok(
            json!({"name": entry.name, "match": route_match, "direct_response": {"status": 500}}),
        );
    }
    let mut action = serde_json::Map::new();
    let own_headers = targets
        .iter()
        .any(|t| t.request_headers.is_some() || t.response_headers.is_some());
    if let ([single], false) = (weighted.as_slice(), own_headers) {
        action.insert("cluster".into(), single["name"].clone());
    } else {
        // Header changes of one backendRef belong on its weighted cluster
        // (even alone), so they reach that backend's requests only.
        action.insert("weighted_clusters".into(), json!({"clusters": weighted}));
    }
    // Timeouts and retries travel as x-envoy-* request headers that the
    // filter sets from the document, so a hot-reloaded document changes
    // them. No route timeout: Envoy's 15 s default would otherwise apply to
    // routes the policies leave without one.
    action.insert("timeout".into(), json!("0s"));
    if let Some(policy) = retry_policy(&entry.settings) {
        action.insert("retry_policy".into(), policy);
    }
    let mut envoy_route =
        json!({"name": entry.name, "match": route_match, "route": Value::Object(action)});
    // The rule's own request header filter, on the route: Envoy's router
    // applies it after the match, as Gateway API does, so it never moves
    // the request to another rule (the filter's writes would).
    if let Some(own) = resolution.route_request_headers.get(&entry.name) {
        header_options(&mut envoy_route, Some(own), "request");
    }
    Ok(envoy_route)
}

/// The route's share of an entry's [`Settings`]: the retry back-off alone.
/// Envoy has no request header for it, so the route carries it and the
/// filter's x-envoy-retry-on/x-envoy-max-retries headers switch retries on.
/// Every other setting the filter applies per request (x-envoy-* headers,
/// header operations), so a hot-reloaded document changes it.
///
/// Every settings field is named (no `..`): a new one does not compile
/// until it is rendered here or declared the filter's.
fn retry_policy(settings: &Settings) -> Option<Value> {
    let Settings {
        timeouts,
        retry,
        request_headers: _applied_by_the_filter,
        response_headers: _also_applied_by_the_filter,
    } = settings;
    if let Some(Timeouts {
        request_ms: _,
        backend_request_ms: _,
    }) = timeouts
    {
        // Both travel as the filter's x-envoy-*-timeout-ms headers.
    }
    let Retry {
        attempts: _,
        codes: _,
        retry_on: _,
        backoff_ms,
    } = retry.as_ref()?;
    let backoff = (*backoff_ms)?;
    Some(json!({"retry_back_off": {"base_interval": duration::from_ms(backoff)}}))
}

/// `backendRefs[].filters` on the backend's weighted cluster.
fn backend_headers(weighted: &mut Value, target: &BackendTarget) {
    header_options(weighted, target.request_headers.as_ref(), "request");
    header_options(weighted, target.response_headers.as_ref(), "response");
}

/// Header changes as Envoy's header options of a route or weighted
/// cluster (`<prefix>_headers_to_add`, `<prefix>_headers_to_remove`): `set`
/// overwrites, `add` appends (Gateway API's HTTPHeaderFilter); Envoy
/// removes before it adds.
fn header_options(on: &mut Value, changes: Option<&HeaderChanges>, prefix: &str) {
    // Every field is named (no `..`): a new kind of header change does
    // not compile until it is rendered here.
    let Some(HeaderChanges { set, add, remove }) = changes else {
        return;
    };
    let set = set.iter().map(|h| (h, "OVERWRITE_IF_EXISTS_OR_ADD"));
    let add = add.iter().map(|h| (h, "APPEND_IF_EXISTS_OR_ADD"));
    let to_add: Vec<Value> = set
        .chain(add)
        .map(|(h, action)| {
            json!({"header": {"key": h.name, "value": h.value}, "append_action": action})
        })
        .collect();
    if !to_add.is_empty() {
        on[format!("{prefix}_headers_to_add")] = json!(to_add);
    }
    if !remove.is_empty() {
        on[format!("{prefix}_headers_to_remove")] = json!(remove);
    }
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
    if cluster.http2 {
        // No values, so nothing here can break Envoy's validation: HTTP/2
        // with Envoy's defaults.
        out["typed_extension_protocol_options"] = json!({
            "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
                "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
                "explicit_http_config": {"http2_protocol_options": {}}
            }
        });
    }
    out
}
