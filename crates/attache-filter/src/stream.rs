//! What happens to one request and its response.
//!
//! Request headers, in order:
//! 1. strip client-supplied router control headers (unless the document
//!    trusts them), on every request, matched or not, from one snapshot of
//!    the header names;
//! 2. find the route: `xds.route_name` and one hash lookup, else fallback
//!    matching;
//! 3. apply the route's header changes, then its control headers.
//!
//! Response headers: apply the remembered route's response header changes.

use std::rc::Rc;

use crate::config::CompiledConfig;
use crate::control::CLIENT_CONTROL_HEADERS;
use crate::host::{Counter, HeaderMap, Host, LogLevel};
use crate::ops;
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
        let trust = self
            .config
            .as_ref()
            .is_some_and(|c| c.trust_client_control_headers);
        if !trust {
            strip_client_control_headers(host);
        }
        let Some(config) = self.config.clone() else {
            return;
        };
        let Some(route) = self.find_route(host, &config) else {
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
        ops::apply(host, HeaderMap::Request, &route.request_ops);
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

    pub fn on_response_headers(&mut self, host: &mut impl Host) {
        let Some(route) = &self.route else { return };
        if route.enforces.response_headers {
            ops::apply(host, HeaderMap::Response, &route.response_ops);
            host.increment(Counter::EnforcedResponseHeaders);
        }
    }

    fn find_route(
        &self,
        host: &mut impl Host,
        config: &CompiledConfig,
    ) -> Option<Rc<CompiledRoute>> {
        let by_name = host.property(&ROUTE_NAME_PROPERTY).and_then(|bytes| {
            config
                .route_named(std::str::from_utf8(&bytes).ok()?)
                .cloned()
        });
        if let Some(route) = by_name {
            host.increment(Counter::MatchedByName);
            self.log_match(host, &route, "route name");
            return Some(route);
        }
        if config.fallback().is_empty() {
            return None;
        }
        let facts = RequestFacts::read(host);
        let route = config.fallback().find(&facts, host).cloned()?;
        host.increment(Counter::MatchedByFallback);
        self.log_match(host, &route, "fallback matching");
        Some(route)
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

fn strip_client_control_headers(host: &mut impl Host) {
    // One copy of the header map instead of a lookup per control header:
    // clients almost never send any, and each lookup is a host call.
    // Envoy hands names over lower-cased, as the constants are.
    let mut present: Vec<&str> = Vec::new();
    for (name, _) in host.headers(HeaderMap::Request) {
        if let Some(known) = CLIENT_CONTROL_HEADERS.iter().find(|c| **c == name) {
            if !present.contains(known) {
                present.push(known);
            }
        }
    }
    for name in &present {
        host.set_header(HeaderMap::Request, name, None);
    }
    if !present.is_empty() {
        host.increment(Counter::ClientControlHeadersStripped);
    }
}
