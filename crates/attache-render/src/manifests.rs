//! The parts of core `Service` and `discovery.k8s.io/v1` `EndpointSlice`
//! manifests that give a backend an address.
//!
//! Every object is parsed up front but kept as a `Result`: a malformed
//! Service that no route uses must not stop the render, and one that a route
//! does use reports its file, document and field path.

use std::collections::BTreeMap;
use std::net::IpAddr;

use attache_core::source::{Origin, SourceDoc};
use attache_core::topology::ObjectKey;
use serde_json::Value;

pub use crate::error::ManifestError;
use crate::secrets::{self, TlsSecret};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServicePort {
    pub name: Option<String>,
    pub port: u16,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Service {
    pub origin: Origin,
    pub key: ObjectKey,
    /// `spec.externalName` of a `type: ExternalName` Service.
    pub external_name: Option<String>,
    /// `spec.clusterIP` when it is an address (not `None`, not absent).
    pub cluster_ip: Option<IpAddr>,
    pub ports: Vec<ServicePort>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlicePort {
    pub name: Option<String>,
    pub port: u16,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointSlice {
    pub origin: Origin,
    pub name: String,
    /// Addresses of endpoints that are not marked `ready: false`.
    pub ready_addresses: Vec<String>,
    pub ports: Vec<SlicePort>,
}

/// Services by `<namespace>/<name>`; EndpointSlices by the Service they
/// belong to (label `kubernetes.io/service-name`).
#[derive(Debug, Clone, Default)]
pub struct Manifests {
    pub services: BTreeMap<ObjectKey, Result<Service, Box<ManifestError>>>,
    pub slices: BTreeMap<ObjectKey, Vec<Result<EndpointSlice, Box<ManifestError>>>>,
    /// `kubernetes.io/tls` Secrets, for HTTPS listeners.
    pub secrets: BTreeMap<ObjectKey, Result<TlsSecret, Box<ManifestError>>>,
}

const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

impl Manifests {
    /// Picks the Services and EndpointSlices out of all input objects;
    /// everything else is ignored (the resolver reports on those).
    pub fn index(docs: &[SourceDoc]) -> Self {
        let mut manifests = Manifests::default();
        for doc in docs {
            let kind = doc.value.get("kind").and_then(Value::as_str);
            let api_version = doc
                .value
                .get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or("");
            let key = object_key(&doc.value);
            match (kind, api_version) {
                (Some("Service"), "v1") => {
                    manifests
                        .services
                        .insert(key.clone(), parse_service(doc, key));
                }
                (Some("Secret"), "v1") => {
                    if let Some(secret) = secrets::parse(doc, &key) {
                        manifests.secrets.insert(key.clone(), secret);
                    }
                }
                (Some("EndpointSlice"), "discovery.k8s.io/v1") => {
                    let service = doc
                        .value
                        .pointer("/metadata/labels")
                        .and_then(|labels| labels.get(SERVICE_NAME_LABEL))
                        .and_then(Value::as_str);
                    let parsed = match service {
                        Some(service) => {
                            let owner = ObjectKey { namespace: key.namespace.clone(), name: service.to_string() };
                            (owner, parse_slice(doc, &key))
                        }
                        None => (
                            key.clone(),
                            Err(error(
                                doc,
                                "EndpointSlice",
                                &key,
                                "metadata.labels",
                                format!("has no '{SERVICE_NAME_LABEL}' label, so it belongs to no Service; add the label naming its Service"),
                            )),
                        ),
                    };
                    manifests.slices.entry(parsed.0).or_default().push(parsed.1);
                }
                _ => {}
            }
        }
        manifests
    }
}

/// Kubernetes puts an object without `metadata.namespace` in `default`.
fn object_key(value: &Value) -> ObjectKey {
    let field = |name: &str| {
        value
            .pointer(&format!("/metadata/{name}"))
            .and_then(Value::as_str)
    };
    ObjectKey {
        namespace: field("namespace").unwrap_or("default").to_string(),
        name: field("name").unwrap_or("").to_string(),
    }
}

fn error(
    doc: &SourceDoc,
    kind: &'static str,
    key: &ObjectKey,
    path: &str,
    problem: String,
) -> Box<ManifestError> {
    Box::new(ManifestError {
        origin: doc.origin.clone(),
        kind,
        key: key.to_string(),
        path: path.to_string(),
        problem,
    })
}

fn parse_port(
    doc: &SourceDoc,
    kind: &'static str,
    key: &ObjectKey,
    path: &str,
    value: Option<&Value>,
) -> Result<u16, Box<ManifestError>> {
    value
        .and_then(Value::as_u64)
        .and_then(|port| u16::try_from(port).ok())
        .filter(|port| *port > 0)
        .ok_or_else(|| {
            error(
                doc,
                kind,
                key,
                path,
                format!("is {}; expected a port number 1-65535", shown(value)),
            )
        })
}

fn shown(value: Option<&Value>) -> String {
    value.map_or_else(|| "missing".to_string(), |v| format!("{v}"))
}

fn parse_service(doc: &SourceDoc, key: ObjectKey) -> Result<Service, Box<ManifestError>> {
    const KIND: &str = "Service";
    let spec = doc.value.get("spec");
    let get = |name: &str| spec.and_then(|s| s.get(name));
    let is_external = get("type").and_then(Value::as_str) == Some("ExternalName");
    let external_name = if is_external {
        match get("externalName").and_then(Value::as_str) {
            Some(name) if !name.is_empty() => Some(name.to_string()),
            _ => {
                return Err(error(
                    doc,
                    KIND,
                    &key,
                    "spec.externalName",
                    format!(
                        "is {}; a Service of type ExternalName needs a DNS name here",
                        shown(get("externalName"))
                    ),
                ))
            }
        }
    } else {
        None
    };
    let cluster_ip = match get("clusterIP").and_then(Value::as_str) {
        None | Some("") | Some("None") => None,
        Some(text) => Some(text.parse::<IpAddr>().map_err(|_| {
            error(
                doc,
                KIND,
                &key,
                "spec.clusterIP",
                format!("is '{text}'; expected an IP address or 'None'"),
            )
        })?),
    };
    let mut ports = Vec::new();
    if let Some(list) = get("ports") {
        let list = list.as_array().ok_or_else(|| {
            error(
                doc,
                KIND,
                &key,
                "spec.ports",
                "is not a list; expected a list of {name, port}".to_string(),
            )
        })?;
        for (index, item) in list.iter().enumerate() {
            let port = parse_port(
                doc,
                KIND,
                &key,
                &format!("spec.ports[{index}].port"),
                item.get("port"),
            )?;
            let name = item.get("name").and_then(Value::as_str).map(str::to_string);
            ports.push(ServicePort { name, port });
        }
    }
    Ok(Service {
        origin: doc.origin.clone(),
        key,
        external_name,
        cluster_ip,
        ports,
    })
}

fn parse_slice(doc: &SourceDoc, key: &ObjectKey) -> Result<EndpointSlice, Box<ManifestError>> {
    const KIND: &str = "EndpointSlice";
    let mut ports = Vec::new();
    let listed = |name: &str| {
        doc.value
            .get(name)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    };
    for (index, item) in listed("ports").iter().enumerate() {
        // A port entry without `port` means "all ports" in the API; nothing
        // Envoy can dial, so it contributes no port.
        if item.get("port").is_none_or(Value::is_null) {
            continue;
        }
        let port = parse_port(
            doc,
            KIND,
            key,
            &format!("ports[{index}].port"),
            item.get("port"),
        )?;
        let name = item.get("name").and_then(Value::as_str).map(str::to_string);
        ports.push(SlicePort { name, port });
    }
    let mut ready_addresses = Vec::new();
    for (index, endpoint) in listed("endpoints").iter().enumerate() {
        // `ready` unset means ready (discovery.k8s.io/v1 semantics).
        let ready = endpoint
            .pointer("/conditions/ready")
            .and_then(Value::as_bool)
            .unwrap_or(true);
        let addresses = endpoint
            .get("addresses")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                error(
                    doc,
                    KIND,
                    key,
                    &format!("endpoints[{index}].addresses"),
                    "is missing; expected a list of addresses".to_string(),
                )
            })?;
        if !ready {
            continue;
        }
        for (at, address) in addresses.iter().enumerate() {
            let text = address.as_str().filter(|a| !a.is_empty()).ok_or_else(|| {
                error(
                    doc,
                    KIND,
                    key,
                    &format!("endpoints[{index}].addresses[{at}]"),
                    format!("is {address}; expected an IP address or DNS name"),
                )
            })?;
            ready_addresses.push(text.to_string());
        }
    }
    Ok(EndpointSlice {
        origin: doc.origin.clone(),
        name: key.name.clone(),
        ready_addresses,
        ports,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(document: usize, value: Value) -> SourceDoc {
        SourceDoc {
            origin: Origin {
                file: "svc.yaml".into(),
                document,
                item: None,
            },
            value,
        }
    }

    fn key(namespace: &str, name: &str) -> ObjectKey {
        ObjectKey {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    #[test]
    fn services_and_slices_are_indexed_by_their_service() {
        let manifests = Manifests::index(&[
            doc(
                1,
                json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
                "spec": {"clusterIP": "10.0.0.7", "ports": [{"name": "http", "port": 80}]}}),
            ),
            doc(
                2,
                json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": "web-abc", "namespace": "shop", "labels": {"kubernetes.io/service-name": "web"}},
                "addressType": "IPv4", "ports": [{"name": "http", "port": 8080}],
                "endpoints": [{"addresses": ["10.1.0.1"]}, {"addresses": ["10.1.0.2"], "conditions": {"ready": false}}]}),
            ),
            doc(
                3,
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web", "namespace": "shop"}}),
            ),
        ]);
        let Some(Ok(service)) = manifests.services.get(&key("shop", "web")) else {
            unreachable!("service missing: {:?}", manifests.services)
        };
        assert_eq!(service.cluster_ip, "10.0.0.7".parse().ok());
        assert_eq!(
            service.ports,
            [ServicePort {
                name: Some("http".into()),
                port: 80
            }]
        );
        let slices = &manifests.slices[&key("shop", "web")];
        let Ok(slice) = &slices[0] else {
            unreachable!("{slices:?}")
        };
        assert_eq!(
            slice.ready_addresses,
            ["10.1.0.1"],
            "the not-ready endpoint is left out"
        );
        assert_eq!(
            slice.ports,
            [SlicePort {
                name: Some("http".into()),
                port: 8080
            }]
        );
    }

    #[test]
    fn a_bad_port_names_file_document_and_field() {
        let manifests = Manifests::index(&[doc(
            4,
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                "spec": {"ports": [{"port": 80}, {"port": 70000}]}}),
        )]);
        let Some(Err(err)) = manifests.services.get(&key("default", "web")) else {
            unreachable!()
        };
        assert_eq!(
            err.to_string(),
            "svc.yaml (document 4): Service default/web: field spec.ports[1].port: is 70000; expected a port number 1-65535"
        );
    }

    #[test]
    fn external_name_services_need_a_name() {
        let manifests = Manifests::index(&[doc(
            1,
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ext", "namespace": "a"},
                "spec": {"type": "ExternalName"}}),
        )]);
        let Some(Err(err)) = manifests.services.get(&key("a", "ext")) else {
            unreachable!()
        };
        assert_eq!(err.path, "spec.externalName");
    }
}
