//! Why a render failed. Each variant names the object at fault and what
//! would be valid, so the CLI can print it unchanged. A leaf of the crate:
//! the modules that fail import their errors from here.

use attache_core::source::Origin;

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

/// A Service or EndpointSlice field that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}: {kind} {key}: field {path}: {problem}")]
pub struct ManifestError {
    pub origin: Origin,
    pub kind: &'static str,
    pub key: String,
    pub path: String,
    /// What is wrong and what would be valid.
    pub problem: String,
}

/// Why an HTTPS listener is left out (the other listeners are still
/// rendered; `GatewayResources::errors` carries the message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ListenerTlsError {
    #[error("listener '{listener}' (HTTPS) is not served: it names no certificate (tls.certificateRefs)")]
    NoCertificate { listener: String },
    #[error("listener '{listener}' (HTTPS) is not served: {source}")]
    BadSecret {
        listener: String,
        #[source]
        source: Box<ManifestError>,
    },
    #[error("listener '{listener}' (HTTPS) is not served: its tls.certificateRefs[{index}], Secret {secret}, is not in the input; add the kubernetes.io/tls Secret's manifest")]
    MissingSecret {
        listener: String,
        index: usize,
        secret: String,
    },
}

/// Why the filter's OCI image cannot be built (`crate::oci`).
#[derive(Debug, thiserror::Error)]
pub enum OciError {
    #[error("the input is not a WebAssembly binary (it does not start with \\0asm)")]
    NotWasm,
    #[error(
        "tag {0:?} is not an OCI tag: 1-128 of letters, digits, _ . - , not starting with . or -"
    )]
    BadTag(String),
    #[error("cannot build the image layer: {0}")]
    Layer(#[from] std::io::Error),
}

#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error(transparent)]
    Backend(#[from] Box<BackendError>),
    #[error(
        "--listener-port names listener '{listener}', but Gateway {gateway} has no such listener; valid: {valid}"
    )]
    UnknownListener {
        listener: String,
        gateway: String,
        valid: String,
    },
    #[error(transparent)]
    PortClash(#[from] Box<PortClash>),
    #[error("Gateway {gateway} has no HTTP listener to render; Attaché renders listeners with protocol HTTP")]
    NoHttpListener { gateway: String },
    #[error(transparent)]
    XdsCheck(#[from] XdsCheckError),
    #[error("cannot encode the schema-1 document as JSON: {0}")]
    Document(#[from] serde_json::Error),
}

/// Two listeners that cannot share one Envoy listener.
#[derive(Debug, thiserror::Error)]
#[error(
    "listeners {first} and {second} of Gateway {gateway} both need local port {port} but speak different protocols ({first_protocol} vs {second_protocol}); give one of them another --listener-port"
)]
pub struct PortClash {
    pub gateway: String,
    pub port: u16,
    pub first: String,
    pub first_protocol: String,
    pub second: String,
    pub second_protocol: String,
}

/// A shape Envoy would refuse in the xDS files (`crate::xds::check`); here,
/// beside `RenderError`, so that errors stay below the writers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum XdsCheckError {
    #[error("route {route} (listener {listener}) sends to cluster {cluster}, which the CDS file would not hold")]
    DanglingCluster {
        listener: String,
        route: String,
        cluster: String,
    },
    #[error("listener {listener}: two virtual hosts claim domain {domain}; Envoy refuses such a route configuration")]
    DuplicateDomain { listener: String, domain: String },
    #[error("route {route} (listener {listener}): regex {regex:?} does not parse: {reason}\n  hint: Envoy uses RE2 syntax; fix the HTTPRoute's RegularExpression match")]
    BadRegex {
        listener: String,
        route: String,
        regex: String,
        reason: String,
    },
    #[error("route {route} (listener {listener}): regex {regex:?} compiles to an RE2 program of about {size} instructions; Envoy refuses more than {limit}\n  hint: simplify the HTTPRoute's RegularExpression match")]
    RegexTooLarge {
        listener: String,
        route: String,
        regex: String,
        size: usize,
        limit: usize,
    },
    #[error("route {route} (listener {listener}): retry back-off {base_interval} set by {supplier}; Envoy refuses a back-off that is not above 0s\n  hint: fix that policy's retry.backoff (at least 1ms, or leave it out)")]
    ZeroBackOff {
        listener: String,
        route: String,
        base_interval: String,
        /// Who set it, as the entry's `sources` say.
        supplier: String,
    },
    #[error("listener name {name:?} cannot be a file name under the xDS directory: {reason}\n  hint: name Gateway listeners as Gateway API does (lower-case letters, digits, '-' and '.')")]
    UnsafeFileName { name: String, reason: &'static str },
}
