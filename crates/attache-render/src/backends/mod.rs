//! From a rule's `backendRef` to an Envoy cluster: its name and where it
//! dials.
//!
//! Where an address comes from, first hit wins:
//! 1. a `--backend NS/NAME=HOST:PORT` override, then a `--backend *=HOST:PORT`
//!    one (everything to one test backend, whatever the manifests say);
//! 2. the Service's EndpointSlices (ready endpoints, port matched by the
//!    Service port's name, as kube-proxy does);
//! 3. an `ExternalName` Service: its DNS name on the backendRef's port;
//! 4. the Service's `clusterIP` on the backendRef's port.

use std::collections::BTreeMap;
use std::net::IpAddr;

use attache_core::topology::{BackendTarget, ObjectKey};

pub use crate::error::BackendError;
use crate::error::ManifestError;
use crate::manifests::{Manifests, Service};

/// A host (IP or DNS name) and port Envoy can dial.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
}

impl Endpoint {
    pub fn is_ip(&self) -> bool {
        self.host.parse::<IpAddr>().is_ok()
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// Where a cluster's endpoints came from (shown in docs and notes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressSource {
    Override,
    EndpointSlice,
    ExternalName,
    ClusterIp,
}

/// One Envoy cluster: a backend Service and port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cluster {
    pub name: String,
    pub endpoints: Vec<Endpoint>,
    pub source: AddressSource,
    /// Speaks HTTP/2 to the backend (the backend of a GRPCRoute rule).
    pub http2: bool,
}

impl Cluster {
    /// The same backend spoken to over HTTP/2, as a cluster of its own (a
    /// Service may back an HTTPRoute over HTTP/1.1 and a GRPCRoute at once).
    pub fn into_http2(mut self) -> Self {
        if !self.http2 {
            self.http2 = true;
            self.name.push_str(HTTP2_SUFFIX);
        }
        self
    }
}

/// What an HTTP/2 cluster's name adds to the backend's (`shop/cart/50051/h2`).
pub const HTTP2_SUFFIX: &str = "/h2";

/// The `--backend` overrides, parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    pub by_service: BTreeMap<ObjectKey, Endpoint>,
    /// `*=HOST:PORT`: every backend without its own override, before any
    /// manifest is consulted (local runs of manifests written for a cluster).
    pub every: Option<Endpoint>,
}

impl Overrides {
    /// Parses `NS/NAME=HOST:PORT` or `*=HOST:PORT`; a later one for the same
    /// Service wins, as with repeated flags elsewhere.
    pub fn add(&mut self, given: &str) -> Result<(), Box<BackendError>> {
        let bad = |problem: &str| {
            Box::new(BackendError::BadOverride {
                given: given.to_string(),
                problem: problem.to_string(),
            })
        };
        let (service, address) = given.split_once('=').ok_or_else(|| bad("no '='"))?;
        let endpoint = parse_host_port(address)
            .ok_or_else(|| bad("the address is not HOST:PORT with a port 1-65535"))?;
        if service == "*" {
            self.every = Some(endpoint);
            return Ok(());
        }
        let (namespace, name) = service
            .split_once('/')
            .ok_or_else(|| bad("the backend is not NAMESPACE/NAME"))?;
        if namespace.is_empty() || name.is_empty() || name.contains('/') {
            return Err(bad("the backend is not NAMESPACE/NAME"));
        }
        self.by_service.insert(
            ObjectKey {
                namespace: namespace.into(),
                name: name.into(),
            },
            endpoint,
        );
        Ok(())
    }
}

/// `host:port`, `[v6]:port`.
fn parse_host_port(text: &str) -> Option<Endpoint> {
    let (host, port) = text.rsplit_once(':')?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let port = port.parse::<u16>().ok().filter(|p| *p > 0)?;
    (!host.is_empty()).then(|| Endpoint {
        host: host.to_string(),
        port,
    })
}

/// `<namespace>/<name>/<port>`: readable in `/clusters` and stats (Envoy
/// rewrites `:` in stat names, so the port is not joined with one).
pub fn cluster_name(target: &BackendTarget) -> String {
    match target.port {
        Some(port) => format!("{}/{}/{}", target.namespace, target.name, port),
        None => format!("{}/{}", target.namespace, target.name),
    }
}

/// Addresses for backends: overrides first, then the input's manifests.
#[derive(Debug, Clone, Default)]
pub struct AddressBook {
    pub overrides: Overrides,
    pub manifests: Manifests,
}

impl AddressBook {
    pub fn cluster_for(
        &self,
        target: &BackendTarget,
        route: &str,
    ) -> Result<Cluster, Box<BackendError>> {
        let key = ObjectKey {
            namespace: target.namespace.clone(),
            name: target.name.clone(),
        };
        let name = cluster_name(target);
        let cluster = |endpoints, source| Cluster {
            name: name.clone(),
            endpoints,
            source,
            http2: false,
        };
        if let Some(endpoint) = self
            .overrides
            .by_service
            .get(&key)
            .or(self.overrides.every.as_ref())
        {
            return Ok(cluster(vec![endpoint.clone()], AddressSource::Override));
        }
        let manifest_error = |source: Box<ManifestError>| {
            Box::new(BackendError::Manifest {
                backend: name.clone(),
                route: route.to_string(),
                source,
            })
        };
        let service = self
            .manifests
            .services
            .get(&key)
            .cloned()
            .transpose()
            .map_err(manifest_error)?;
        let mut looked = Vec::new();
        if let Some(port) = target.port {
            if let Some(endpoints) = self
                .slice_endpoints(&key, service.as_ref(), port, &mut looked)
                .map_err(manifest_error)?
            {
                return Ok(cluster(endpoints, AddressSource::EndpointSlice));
            }
            if let Some((endpoint, source)) =
                service_address(&key, service.as_ref(), port, &mut looked)
            {
                return Ok(cluster(vec![endpoint], source));
            }
        }
        if target.port.is_none() {
            return Err(Box::new(BackendError::NoPort {
                backend: name,
                route: route.to_string(),
            }));
        }
        Err(Box::new(BackendError::NoAddress {
            backend: name,
            service: key.to_string(),
            name: key.name.clone(),
            route: route.to_string(),
            looked: looked.join("; "),
        }))
    }

    /// Ready addresses of the Service's EndpointSlices on the port that
    /// backs Service port `port`: matched by port name, as kube-proxy does.
    /// Without a Service manifest, the slice port must be `port` itself.
    fn slice_endpoints(
        &self,
        key: &ObjectKey,
        service: Option<&Service>,
        port: u16,
        looked: &mut Vec<String>,
    ) -> Result<Option<Vec<Endpoint>>, Box<ManifestError>> {
        let Some(slices) = self.manifests.slices.get(key) else {
            return Ok(None);
        };
        let port_name = match service {
            Some(service) => match service.ports.iter().find(|p| p.port == port) {
                Some(found) => Some(found.name.clone()),
                None if service.ports.is_empty() => None,
                None => {
                    let valid: Vec<String> =
                        service.ports.iter().map(|p| p.port.to_string()).collect();
                    looked.push(format!(
                        "Service {key} ({}) has no port {port} in spec.ports (valid: {})",
                        service.origin,
                        valid.join(", ")
                    ));
                    return Ok(None);
                }
            },
            None => None,
        };
        let mut endpoints = Vec::new();
        for slice in slices {
            let slice = slice.clone()?;
            let slice_port = match &port_name {
                Some(name) => slice.ports.iter().find(|p| &p.name == name),
                None => slice.ports.iter().find(|p| p.port == port),
            };
            match slice_port {
                Some(slice_port) => {
                    endpoints.extend(slice.ready_addresses.iter().map(|host| Endpoint {
                        host: host.clone(),
                        port: slice_port.port,
                    }))
                }
                None => looked.push(format!(
                    "EndpointSlice {} ({}) has no matching port",
                    slice.name, slice.origin
                )),
            }
        }
        if endpoints.is_empty() {
            looked.push(format!(
                "the EndpointSlices of {key} have no ready endpoint on port {port}"
            ));
            return Ok(None);
        }
        endpoints.sort();
        endpoints.dedup();
        Ok(Some(endpoints))
    }
}

/// The Service's own address when it has no usable EndpointSlice: its
/// ExternalName, else its clusterIP; otherwise None, with why in `looked`
/// (the places looked at, for the error that names them all).
fn service_address(
    key: &ObjectKey,
    service: Option<&Service>,
    port: u16,
    looked: &mut Vec<String>,
) -> Option<(Endpoint, AddressSource)> {
    let found = match service {
        Some(Service {
            external_name: Some(host),
            ..
        }) => (
            Endpoint {
                host: host.clone(),
                port,
            },
            AddressSource::ExternalName,
        ),
        Some(Service {
            cluster_ip: Some(ip),
            ..
        }) => (
            Endpoint {
                host: ip.to_string(),
                port,
            },
            AddressSource::ClusterIp,
        ),
        Some(service) => {
            looked.push(format!(
                "Service {key} ({}) is headless (no clusterIP) and not ExternalName",
                service.origin
            ));
            return None;
        }
        None => {
            looked.push(format!("no Service {key} in the input"));
            return None;
        }
    };
    Some(found)
}

#[cfg(test)]
mod tests;
