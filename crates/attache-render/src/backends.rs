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

use crate::manifests::{ManifestError, Manifests, Service};

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
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    #[error(
        "backend {backend} (used by route {route}) has no address: {looked}\n  hint: pass --backend {service}=HOST:PORT, or include its Service (type ExternalName with spec.externalName, or spec.clusterIP) or an EndpointSlice labelled kubernetes.io/service-name={name} in the input"
    )]
    NoAddress {
        backend: String,
        service: String,
        name: String,
        route: String,
        looked: String,
    },
    #[error(
        "backend {backend} (used by route {route}) has no port: a backendRef to a Service needs `port` (Gateway API); add it to the rule's backendRef, or pass --backend {backend}=HOST:PORT"
    )]
    NoPort { backend: String, route: String },
    #[error("backend {backend} (used by route {route}): {source}")]
    Manifest {
        backend: String,
        route: String,
        source: Box<ManifestError>,
    },
    #[error("--backend {given}: {problem}; expected NAMESPACE/NAME=HOST:PORT (or *=HOST:PORT for every backend without its own override)")]
    BadOverride { given: String, problem: String },
}

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
            match &service {
                Some(Service {
                    external_name: Some(host),
                    ..
                }) => {
                    return Ok(cluster(
                        vec![Endpoint {
                            host: host.clone(),
                            port,
                        }],
                        AddressSource::ExternalName,
                    ));
                }
                Some(Service {
                    cluster_ip: Some(ip),
                    ..
                }) => {
                    return Ok(cluster(
                        vec![Endpoint {
                            host: ip.to_string(),
                            port,
                        }],
                        AddressSource::ClusterIp,
                    ));
                }
                Some(service) => looked.push(format!(
                    "Service {key} ({}) is headless (no clusterIP) and not ExternalName",
                    service.origin
                )),
                None => looked.push(format!("no Service {key} in the input")),
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

#[cfg(test)]
mod tests {
    use super::*;
    use attache_core::source::{Origin, SourceDoc};
    use serde_json::json;

    fn target(namespace: &str, name: &str, port: Option<u16>) -> BackendTarget {
        BackendTarget {
            namespace: namespace.into(),
            name: name.into(),
            port,
            weight: 1,
        }
    }

    fn book(values: Vec<serde_json::Value>) -> AddressBook {
        let docs: Vec<SourceDoc> = values
            .into_iter()
            .enumerate()
            .map(|(i, value)| SourceDoc {
                origin: Origin {
                    file: "in.yaml".into(),
                    document: i + 1,
                    item: None,
                },
                value,
            })
            .collect();
        AddressBook {
            overrides: Overrides::default(),
            manifests: Manifests::index(&docs),
        }
    }

    #[test]
    fn overrides_parse_and_bad_ones_say_what_is_valid() {
        let mut overrides = Overrides::default();
        overrides.add("shop/web=127.0.0.1:9000").unwrap();
        overrides.add("*=[::1]:9001").unwrap();
        assert_eq!(
            overrides.by_service[&ObjectKey {
                namespace: "shop".into(),
                name: "web".into()
            }],
            Endpoint {
                host: "127.0.0.1".into(),
                port: 9000
            }
        );
        assert_eq!(
            overrides.every,
            Some(Endpoint {
                host: "::1".into(),
                port: 9001
            })
        );
        for bad in [
            "shop/web",
            "web=1.2.3.4:80",
            "shop/web=1.2.3.4",
            "shop/web=1.2.3.4:0",
            "a/b/c=h:1",
        ] {
            let err = overrides.add(bad).unwrap_err().to_string();
            assert!(err.starts_with(&format!("--backend {bad}: ")), "{err}");
            assert!(err.contains("expected NAMESPACE/NAME=HOST:PORT"), "{err}");
        }
    }

    #[test]
    fn an_override_beats_the_manifests() {
        let mut book = book(vec![json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "shop"}, "spec": {"clusterIP": "10.0.0.1"}})]);
        book.overrides.add("shop/web=localhost:9000").unwrap();
        let cluster = book
            .cluster_for(&target("shop", "web", Some(80)), "r")
            .unwrap();
        assert_eq!(cluster.name, "shop/web/80");
        assert_eq!(
            cluster.endpoints,
            [Endpoint {
                host: "localhost".into(),
                port: 9000
            }]
        );
        assert_eq!(cluster.source, AddressSource::Override);
    }

    #[test]
    fn slices_are_matched_through_the_service_port_name() {
        let book = book(vec![
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
                "spec": {"clusterIP": "10.0.0.1", "ports": [{"name": "http", "port": 80}, {"name": "admin", "port": 81}]}}),
            json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": "web-1", "namespace": "shop", "labels": {"kubernetes.io/service-name": "web"}},
                "ports": [{"name": "admin", "port": 9081}, {"name": "http", "port": 9080}],
                "endpoints": [{"addresses": ["10.1.0.2"]}, {"addresses": ["10.1.0.1"]}]}),
        ]);
        let cluster = book
            .cluster_for(&target("shop", "web", Some(80)), "r")
            .unwrap();
        assert_eq!(cluster.source, AddressSource::EndpointSlice);
        assert_eq!(
            cluster.endpoints,
            [
                Endpoint {
                    host: "10.1.0.1".into(),
                    port: 9080
                },
                Endpoint {
                    host: "10.1.0.2".into(),
                    port: 9080
                }
            ]
        );
    }

    #[test]
    fn external_name_and_cluster_ip_use_the_backend_ref_port() {
        let book = book(vec![
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ext", "namespace": "shop"},
                "spec": {"type": "ExternalName", "externalName": "backend"}}),
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ip", "namespace": "shop"},
                "spec": {"clusterIP": "10.0.0.9", "ports": [{"port": 8080}]}}),
        ]);
        let ext = book
            .cluster_for(&target("shop", "ext", Some(9000)), "r")
            .unwrap();
        assert_eq!(
            (ext.endpoints[0].to_string(), ext.source),
            ("backend:9000".into(), AddressSource::ExternalName)
        );
        let ip = book
            .cluster_for(&target("shop", "ip", Some(8080)), "r")
            .unwrap();
        assert_eq!(
            (ip.endpoints[0].to_string(), ip.source),
            ("10.0.0.9:8080".into(), AddressSource::ClusterIp)
        );
    }

    #[test]
    fn a_backend_without_address_is_named_with_its_route() {
        let book = book(vec![json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "headless", "namespace": "shop"}, "spec": {"clusterIP": "None"}})]);
        let err = book
            .cluster_for(&target("shop", "missing", Some(80)), "http/shop/web/0")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("backend shop/missing/80 (used by route http/shop/web/0) has no address: no Service shop/missing in the input"), "{err}");
        assert!(err.contains("--backend shop/missing=HOST:PORT"), "{err}");
        let err = book
            .cluster_for(&target("shop", "headless", Some(80)), "r")
            .unwrap_err()
            .to_string();
        assert!(err.contains("is headless"), "{err}");
        let err = book
            .cluster_for(&target("shop", "headless", None), "r")
            .unwrap_err()
            .to_string();
        assert!(err.contains("has no port"), "{err}");
    }

    #[test]
    fn star_sends_every_backend_without_its_own_override_to_one_address() {
        let mut book = book(vec![json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "ext", "namespace": "a"}, "spec": {"type": "ExternalName", "externalName": "backend"}})]);
        book.overrides.add("*=127.0.0.1:9000").unwrap();
        book.overrides.add("a/own=127.0.0.1:9001").unwrap();
        let endpoint = |name: &str| {
            book.cluster_for(&target("a", name, Some(1)), "r")
                .unwrap()
                .endpoints[0]
                .to_string()
        };
        assert_eq!(endpoint("ext"), "127.0.0.1:9000", "beats the manifest");
        assert_eq!(endpoint("unknown"), "127.0.0.1:9000");
        assert_eq!(
            endpoint("own"),
            "127.0.0.1:9001",
            "a named override beats *"
        );
    }

    #[test]
    fn a_broken_service_manifest_is_reported_for_the_route_that_uses_it() {
        let book = book(vec![json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "shop"}, "spec": {"clusterIP": "ten"}})]);
        let err = book
            .cluster_for(&target("shop", "web", Some(80)), "http/shop/web/0")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "backend shop/web/80 (used by route http/shop/web/0): in.yaml (document 1): Service shop/web: field spec.clusterIP: is 'ten'; expected an IP address or 'None'"
        );
    }
}
