//! One Envoy listener's filter chains as render holds them between the
//! module that builds them (`resources`, with `tls` for an HTTPS chain) and
//! the one that writes them as Envoy JSON (`listener`). A leaf: it imports
//! nothing of this crate, so the three need not import each other.

use serde_json::Value;

/// One Envoy listener: the Gateway listeners sharing a local port.
#[derive(Debug, Clone, PartialEq)]
pub struct PortListener {
    /// The listener keys joined with `+` ([`crate::resources::port_listener_name`]).
    pub name: String,
    pub port: u16,
    /// An HTTP port has one chain for all its listeners; an HTTPS port one
    /// per Gateway listener, chosen by SNI, so each listener serves only
    /// its own routes with its own certificate.
    pub chains: Vec<Chain>,
}

/// One filter chain: an HTTP connection manager and its routes.
#[derive(Debug, Clone, PartialEq)]
pub struct Chain {
    /// The name of its route configuration and its HTTP stat prefix: the
    /// port listener's name for HTTP, the Gateway listener's for HTTPS.
    pub name: String,
    /// `envoy.config.route.v3.RouteConfiguration` named like the chain.
    pub route_config: Value,
    pub tls: Option<ChainTls>,
}

/// What an HTTPS chain terminates TLS with.
#[derive(Debug, Clone, PartialEq)]
pub struct ChainTls {
    /// SNI that selects the chain: the listener's hostname; empty for a
    /// listener without one (then it takes any name the others do not).
    pub server_names: Vec<String>,
    /// SDS names of its certificates (`<namespace>/<name>` of each Secret).
    pub secrets: Vec<String>,
}
