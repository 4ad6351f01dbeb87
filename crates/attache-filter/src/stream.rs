//! What happens to one request and its response.
//!
//! Request headers, with at most three host calls: the `xds.route_name`
//! property, one copy of the header map, and one write of the whole new map
//! when anything changed. The `destination.port` property only where the
//! listener must be told apart: for an Istio route name shared by listeners
//! with different settings, and for fallback matching over listeners with
//! different ports (docs/filter.md):
//! 1. find the route: `xds.route_name` and one hash lookup, else fallback
//!    matching on the copied map;
//! 2. strip client-supplied router control headers from the copy (unless the
//!    document trusts them), on every request, matched or not;
//! 3. apply the route's header changes, then its control headers, to the
//!    copy, and write it back once.
//!
//! Response headers: the remembered route's response header changes, one
//! single-header write each; no host call at all for a route without any.

use std::rc::Rc;

use crate::config::CompiledConfig;
use crate::control::CLIENT_CONTROL_HEADERS;
use crate::host::{Counter, HeaderMap, Host, LogLevel};
use crate::ops::{self, Pairs};
use crate::request::RequestFacts;
use crate::route::CompiledRoute;

/// The Envoy property holding the name of the route Envoy selected.
pub const ROUTE_NAME_PROPERTY: [&str; 2] = ["xds", "route_name"];

#[derive(Debug, Default)]
pub struct Stream {
    config: Option<Rc<CompiledConfig>>,
    generation: u64,
    route: Option<Rc<CompiledRoute>>,
}

impl Stream {
    /// A stream keeps the configuration it started with, even if a newer
    /// one is accepted while it is in flight.
    pub fn new(config: Option<Rc<CompiledConfig>>, generation: u64) -> Self {
        Stream {
            config,
            generation,
            route: None,
        }
    }

    pub fn route(&self) -> Option<&CompiledRoute> {
        self.route.as_deref()
    }

    pub fn on_request_headers(&mut self, host: &mut impl Host) {
        let config = self.config.clone();
        let strip = !config
            .as_ref()
            .is_some_and(|c| c.trust_client_control_headers);
        let by_name = config.as_ref().and_then(|c| route_by_name(host, c));
        let fallback = config.as_ref().filter(|c| !c.fallback().is_empty());
        let needs_copy = strip
            || by_name.as_ref().is_some_and(|r| !r.request_ops.is_empty())
            || (by_name.is_none() && fallback.is_some());
        if !needs_copy {
            // Trusted document and a route with nothing to write, or no
            // route at all: the request passes with one host call.
            self.finish_match(host, by_name, config.is_some(), "route name");
            return;
        }
        let mut headers = host.headers(HeaderMap::Request);
        let mut changed = strip && strip_client_control_headers(host, &mut headers);
        let (route, how) = match (by_name, fallback) {
            (Some(route), _) => (Some(route), "route name"),
            (None, Some(config)) => {
                let facts = RequestFacts::from_headers(&headers);
                // Listener-aware only where the document's listeners have
                // different ports: otherwise the port is not read.
                let table = config.fallback();
                let port = match table.tells_ports_apart() {
                    true => destination_port(host),
                    false => None,
                };
                let found = table.find(&facts, port, host).cloned();
                (found, "fallback matching")
            }
            (None, None) => (None, ""),
        };
        if let Some(route) = &route {
            changed |= ops::apply(&mut headers, &route.request_ops);
        }
        if changed {
            host.set_headers(HeaderMap::Request, &headers);
        }
        self.finish_match(host, route, config.is_some(), how);
    }

    pub fn on_response_headers(&mut self, host: &mut impl Host) {
        let Some(route) = &self.route else { return };
        if route.enforces.response_headers {
            ops::apply_each(host, HeaderMap::Response, &route.response_ops);
            host.increment(Counter::EnforcedResponseHeaders);
        }
    }

    /// Counts and logs the outcome and remembers the route for the response.
    fn finish_match(
        &mut self,
        host: &mut impl Host,
        route: Option<Rc<CompiledRoute>>,
        configured: bool,
        how: &str,
    ) {
        if !configured {
            return;
        }
        let Some(route) = route else {
            host.increment(Counter::Unmatched);
            if host.log_enabled(LogLevel::Debug) {
                host.log(
                    LogLevel::Debug,
                    &format!(
                        "attache: generation {}: no route entry matches; request passes untouched",
                        self.generation
                    ),
                );
            }
            return;
        };
        host.increment(if how == "route name" {
            Counter::MatchedByName
        } else {
            Counter::MatchedByFallback
        });
        self.log_match(host, &route, how);
        let e = route.enforces;
        for (on, counter) in [
            (e.timeout, Counter::EnforcedTimeout),
            (e.retry, Counter::EnforcedRetry),
            (e.request_headers, Counter::EnforcedRequestHeaders),
        ] {
            if on {
                host.increment(counter);
            }
        }
        self.route = Some(route);
    }

    fn log_match(&self, host: &impl Host, route: &CompiledRoute, how: &str) {
        if host.log_enabled(LogLevel::Debug) {
            host.log(
                LogLevel::Debug,
                &format!(
                    "attache: generation {}: route {:?} found by {how}",
                    self.generation, route.name
                ),
            );
        }
    }
}

fn route_by_name(host: &impl Host, config: &CompiledConfig) -> Option<Rc<CompiledRoute>> {
    let bytes = host.property(&ROUTE_NAME_PROPERTY)?;
    config
        .route_named_at(std::str::from_utf8(&bytes).ok()?, || destination_port(host))
        .cloned()
}

/// `destination.port`: Envoy hands integer properties over as 8 bytes,
/// little-endian (its Wasm context serialises CEL int64 values raw:
/// `serializeValue` in source/extensions/common/wasm/context.cc).
fn destination_port(host: &impl Host) -> Option<u16> {
    let bytes: [u8; 8] = host.property(&DESTINATION_PORT_PROPERTY)?.try_into().ok()?;
    u16::try_from(i64::from_le_bytes(bytes)).ok()
}

const DESTINATION_PORT_PROPERTY: [&str; 2] = ["destination", "port"];

/// Removes client control headers from the copy; returns whether any was
/// there. Envoy hands names over lower-cased, as the constants are.
fn strip_client_control_headers(host: &mut impl Host, headers: &mut Pairs) -> bool {
    let before = headers.len();
    headers.retain(|(name, _)| !CLIENT_CONTROL_HEADERS.contains(&name.as_str()));
    let stripped = headers.len() != before;
    if stripped {
        host.increment(Counter::ClientControlHeadersStripped);
    }
    stripped
}
