//! Envoy bootstraps for one Gateway, in two layouts:
//!
//! - [`envoy_bootstrap`], static: listeners (one per local port), routes in
//!   Gateway API precedence named by schema-1 entry names, and clusters, all
//!   in the bootstrap; only the filter's configuration (ECDS) reloads.
//! - [`dynamic_bootstrap`], file-based xDS: listeners and clusters come
//!   from LDS and CDS files, routes from one RDS file per listener, all
//!   watched by Envoy and rewritten by `attache watch` ([`crate::xds`]), so
//!   routes, backends and back-offs change without a restart too.

use attache_core::topology::GatewayResolution;
use serde_json::{json, Value};

use crate::backends::AddressBook;
use crate::error::RenderError;
use crate::listener::{listener, FilterSource, Routes};
use crate::resources::{gateway_resources, ListenerOptions};
use crate::xds::{config_source, XdsLayout};

/// Envoy's admin interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminOptions {
    pub address: String,
    pub port: u16,
}

/// Everything about the static bootstrap that is not in the resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvoyOptions {
    /// The ECDS file the filter's configuration is read from, written
    /// verbatim (relative paths are relative to Envoy's working directory).
    pub ecds_path: String,
    /// The filter's build and file (the `.wasm`, or the dynamic module's
    /// `.so`), written verbatim into the default configuration.
    pub filter: crate::filter::FilterBinary,
    pub admin: AdminOptions,
    pub listeners: ListenerOptions,
}

/// A rendered configuration and what was left out of it, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub config: Value,
    pub notes: Vec<String>,
}

/// The static bootstrap: everything inline, the filter through ECDS with
/// the document as it is now as its default.
pub fn envoy_bootstrap(
    resolution: &GatewayResolution,
    book: &AddressBook,
    options: &EnvoyOptions,
) -> Result<Rendered, RenderError> {
    let resources = gateway_resources(resolution, book, &options.listeners)?;
    // Until the ECDS file is there (a generator still starting), the filter
    // runs with the document as it was at render time.
    let default_config =
        crate::filter::filter_config(&resolution.filter_document(), &options.filter)?;
    let filter = FilterSource {
        ecds_path: &options.ecds_path,
        default_config: Some(&default_config),
        type_url: options.filter.type_url(),
    };
    // A certificate in the static bootstrap could only rotate with a
    // restart, and would put the private key in a file printed to stdout:
    // HTTPS listeners are served in the file-based layout, through SDS.
    let mut notes = resources.notes;
    let mut kept = Vec::new();
    for mut port_listener in resources.listeners {
        port_listener.chains.retain(|chain| {
            let tls = chain.tls.is_some();
            if tls {
                notes.push(format!(
                    "listener '{}' (HTTPS) is not rendered in the static bootstrap: serve it with `render envoy --xds-dir` and `watch --xds-dir`, where its certificate comes through SDS and rotates without a restart",
                    chain.name
                ));
            }
            !tls
        });
        if !port_listener.chains.is_empty() {
            kept.push(port_listener);
        }
    }
    let listeners: Vec<Value> = kept
        .iter()
        .map(|l| listener(l, &options.listeners.listen_address, Routes::Inline, filter))
        .collect();
    let mut config = frame(&resolution.gateway.to_string(), &options.admin);
    config["static_resources"] = json!({
        "listeners": listeners,
        "clusters": resources.clusters.into_values().collect::<Vec<_>>()
    });
    notes.extend(resources.errors);
    Ok(Rendered { config, notes })
}

/// The file-based xDS bootstrap: no listener, route or cluster of its own,
/// only where to read them. It does not change when the Gateway's routes
/// do, so it never needs rewriting (or a restart).
pub fn dynamic_bootstrap(gateway: &str, admin: &AdminOptions, layout: &XdsLayout) -> Value {
    let mut config = frame(gateway, admin);
    config["dynamic_resources"] = json!({
        "lds_config": config_source(&layout.lds_file()),
        "cds_config": config_source(&layout.cds_file())
    });
    config
}

/// What both layouts share: node, admin, limits.
fn frame(gateway: &str, admin: &AdminOptions) -> Value {
    json!({
        "node": {"id": gateway, "cluster": gateway},
        "admin": {
            "address": {"socket_address": {"address": admin.address, "port_value": admin.port}}
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
    })
}

#[cfg(test)]
mod tests;
