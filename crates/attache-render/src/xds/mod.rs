//! The file-based xDS layout: Envoy reads its listeners (LDS), routes (RDS)
//! and clusters (CDS) from files it watches, next to the filter's ECDS
//! file, so `attache watch` can change routes, backends and back-offs
//! without a restart (docs/envoy.md, "File-based xDS").
//!
//! Each file is a `DiscoveryResponse` (state of the world: what a file does
//! not name, Envoy removes) in a directory of its own. Envoy reloads a file
//! when an entry is moved into the directory it watches, and a move there
//! reloads every subscription watching that directory, so sharing one would
//! re-read every file on every write. One RDS file per listener: Envoy's RDS
//! accepts exactly one route configuration per update, named as the
//! listener asks. Endpoints are inline in the clusters (no EDS): a port or
//! address change rebuilds only the one cluster it touches, and one CDS file
//! keeps the order of steps simple.

mod check;
mod plan;

use std::collections::BTreeMap;

use attache_contract::Document;
use attache_core::topology::GatewayResolution;
use serde_json::{json, Value};

use crate::backends::AddressBook;
use crate::error::RenderError;
use crate::listener::{listener, FilterSource, Routes, LISTENER_TYPE_URL};
use crate::resources::{gateway_resources, ListenerOptions};
use crate::sds;

pub use crate::error::XdsCheckError;
pub use crate::sds::config_source;
pub use check::check;
pub use plan::{transition, Step};

pub const ROUTE_CONFIGURATION_TYPE_URL: &str =
    "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";
pub const CLUSTER_TYPE_URL: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";

/// Where the files are, as Envoy sees them: `ROOT/lds/listeners.json`,
/// `ROOT/cds/clusters.json` and `ROOT/rds/<listener>/routes.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XdsLayout {
    root: String,
}

impl XdsLayout {
    pub fn new(root: &str) -> Self {
        XdsLayout {
            root: root.trim_end_matches('/').to_string(),
        }
    }

    pub fn lds_file(&self) -> String {
        format!("{}/lds/listeners.json", self.root)
    }

    pub fn cds_file(&self) -> String {
        format!("{}/cds/clusters.json", self.root)
    }

    /// The SDS file of the Secret `<namespace>/<name>`:
    /// `ROOT/sds/<namespace>_<name>/secret.json` (`_` is in no Kubernetes
    /// name, so no two Secrets share a file). Refused when it could leave
    /// `sds/`.
    pub fn sds_file(&self, secret: &str) -> Result<String, RenderError> {
        let flat = secret.replacen('/', "_", 1);
        let name = file_component(&flat)?;
        Ok(format!("{}/sds/{name}/secret.json", self.root))
    }

    /// The RDS file of the listener (and route configuration) `name`.
    /// Refused when `name` could leave `rds/` (see [`file_component`]).
    pub fn rds_file(&self, name: &str) -> Result<String, RenderError> {
        let name = file_component(name)?;
        Ok(format!("{}/rds/{name}/routes.json", self.root))
    }
}

/// `name` if it can be one component of a file path, else why not. Listener
/// names become directory names under the xDS root; the parser keeps them to
/// Gateway API's SectionName pattern, but this crate may be fed by other
/// callers (and `attache watch` reads names back from files on disk), so it
/// refuses, on its own, anything that could name another directory or be
/// cut short by the OS: empty, `.`, `..`, a separator, or NUL.
pub fn file_component(name: &str) -> Result<&str, XdsCheckError> {
    let reason = if name.is_empty() {
        "it is empty"
    } else if name == "." || name == ".." {
        "it names a directory itself"
    } else if name.contains(['/', '\\']) {
        "it contains a path separator"
    } else if name.contains('\0') {
        "it contains NUL"
    } else {
        return Ok(name);
    };
    Err(XdsCheckError::UnsafeFileName {
        name: name.to_string(),
        reason,
    })
}

/// Everything the xDS files carry besides the layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XdsOptions {
    /// The ECDS file the listeners load the filter's configuration from.
    pub ecds_path: String,
    /// The filter configuration's type the listeners accept from the ECDS
    /// file ([`crate::wasm::FilterBinary::type_url`]).
    pub filter_type_url: &'static str,
    pub listeners: ListenerOptions,
    pub layout: XdsLayout,
}

/// One generation of the data plane: the document the ECDS file carries
/// and the resources of the LDS, RDS and CDS files, each by name.
#[derive(Debug, Clone, PartialEq)]
pub struct XdsState {
    pub document: Document,
    pub listeners: BTreeMap<String, Value>,
    pub route_configs: BTreeMap<String, Value>,
    pub clusters: BTreeMap<String, Value>,
    /// SDS `Secret` resources (certificate and private key) by SDS name.
    pub secrets: BTreeMap<String, Value>,
}

impl Default for XdsState {
    /// Nothing at all: what Envoy has before the first generation.
    fn default() -> Self {
        XdsState {
            document: Document {
                schema_version: attache_contract::SCHEMA_VERSION,
                gateway: String::new(),
                options: Default::default(),
                routes: Vec::new(),
            },
            listeners: BTreeMap::new(),
            route_configs: BTreeMap::new(),
            clusters: BTreeMap::new(),
            secrets: BTreeMap::new(),
        }
    }
}

/// What [`xds_state`] left out: notes, and errors the user must fix (an
/// HTTPS listener whose Secret is missing), the rest being rendered.
pub type LeftOut = (Vec<String>, Vec<String>);

/// The resources for `resolution`, checked ([`check`]) before anyone
/// writes them; notes and errors say what was left out.
pub fn xds_state(
    resolution: &GatewayResolution,
    book: &AddressBook,
    options: &XdsOptions,
) -> Result<(XdsState, LeftOut), RenderError> {
    let resources = gateway_resources(resolution, book, &options.listeners)?;
    // No default configuration: the listener is only written once its
    // ECDS file is, and a listener must not change when the document does
    // (a changed listener drains its connections).
    let filter = FilterSource {
        ecds_path: &options.ecds_path,
        default_config: None,
        type_url: options.filter_type_url,
    };
    let mut state = XdsState {
        document: resolution.filter_document(),
        clusters: resources.clusters,
        ..XdsState::default()
    };
    let mut sds = BTreeMap::new();
    for (name, secret) in &resources.secrets {
        sds.insert(name.clone(), options.layout.sds_file(name)?);
        state
            .secrets
            .insert(name.clone(), sds::secret_resource(secret));
    }
    for port_listener in &resources.listeners {
        let mut rds = BTreeMap::new();
        for chain in &port_listener.chains {
            rds.insert(chain.name.clone(), options.layout.rds_file(&chain.name)?);
            state
                .route_configs
                .insert(chain.name.clone(), chain.route_config.clone());
        }
        let address = &options.listeners.listen_address;
        let routes = Routes::Files {
            rds: &rds,
            sds: &sds,
        };
        state.listeners.insert(
            port_listener.name.clone(),
            listener(port_listener, address, routes, filter),
        );
    }
    check(&state)?;
    Ok((state, (resources.notes, resources.errors)))
}

/// A state-of-the-world `DiscoveryResponse` holding `resources` of
/// `type_url`; its `version_info` is a digest of the content, so the same
/// resources give the same bytes (and Envoy's `version_text` names them).
pub fn discovery_response<'a>(
    type_url: &str,
    resources: impl IntoIterator<Item = &'a Value>,
) -> Value {
    let resources: Vec<Value> = resources
        .into_iter()
        .map(|resource| {
            let mut typed = json!({"@type": type_url});
            if let (Some(typed), Some(fields)) = (typed.as_object_mut(), resource.as_object()) {
                typed.extend(fields.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            typed
        })
        .collect();
    json!({
        "version_info": crate::version::content_version(&Value::Array(resources.clone())),
        "type_url": type_url,
        "resources": resources
    })
}

/// The LDS file's content.
pub fn lds_response(listeners: &BTreeMap<String, Value>) -> Value {
    discovery_response(LISTENER_TYPE_URL, listeners.values())
}

/// One RDS file's content.
pub fn rds_response(route_config: &Value) -> Value {
    discovery_response(ROUTE_CONFIGURATION_TYPE_URL, [route_config])
}

/// One SDS file's content.
pub fn sds_response(secret: &Value) -> Value {
    discovery_response(sds::SECRET_TYPE_URL, [secret])
}

/// The CDS file's content.
pub fn cds_response(clusters: &BTreeMap<String, Value>) -> Value {
    discovery_response(CLUSTER_TYPE_URL, clusters.values())
}

#[cfg(test)]
mod tests;
