//! What happens to one request and its response.
//!
//! Request headers, one host call per header read or written and never a
//! copy of the whole map (docs/filter.md, "The request path"):
//! 1. find the route: the `xds.route_name` property and one hash lookup,
//!    else fallback matching on `:authority`, `:path`, `:method` and only the
//!    headers its matches name, each read once (a control header the strip
//!    will remove reads as absent). `destination.port` only where the
//!    listener must be told apart: for an Istio route name shared by
//!    listeners with different settings, and for fallback matching over
//!    listeners with different ports. Nothing is written before this;
//! 2. a route with an `add` claims the stream (`ENFORCED_PROPERTY`, a read
//!    and a write); claimed already by an earlier instance of the filter,
//!    the request is left alone. Every other route skips this step;
//! 3. strip client-supplied router control headers (unless the document
//!    trusts them), on every request, matched or not. Envoy's connection
//!    manager already removed most of them unless it took the client for
//!    internal, which it then marks with `x-envoy-internal` (a header no
//!    client can forge: Envoy removes it first). So: one read of
//!    `x-envoy-internal`, one read of each header Envoy never strips, and a
//!    remove only for a header that is there (`crate::control`);
//! 4. apply the route's header changes, then its control headers, one
//!    replace/add/remove call each. A request with nothing to strip and a
//!    route without request changes writes nothing, so Envoy keeps its
//!    cached route (any request-header write clears it).
//!
//! Response headers: the remembered route's response header changes, one
//! single-header write each; no host call at all for a route without any.

use std::rc::Rc;

use crate::config::CompiledConfig;
use crate::control::{CLIENT_CONTROL_HEADERS, ENVOY_INTERNAL, NOT_STRIPPED_BY_ENVOY};
use crate::host::{Counter, HeaderMap, Host, LogLevel};
use crate::ops;
use crate::request::{ReadOnce, RequestFacts};
use crate::route::CompiledRoute;

/// The Envoy property holding the name of the route Envoy selected.
pub const ROUTE_NAME_PROPERTY: [&str; 2] = ["xds", "route_name"];

/// What an instance of the filter leaves on the stream before it applies a
/// route whose operations would differ if applied twice (an `add`:
/// `CompiledRoute::applies_once`); filter state `wasm.attache_enforced`,
/// which only a filter can write. A second instance on the same stream
/// (both objects live for a moment while the controller switches Istio
/// kinds, or the filter deployed twice) finds it and leaves the request
/// alone: an `add` is never applied twice. Any other route is applied by
/// every instance, to the same headers, without the mark's two host calls
/// (bench/findings.md, "Issue 33"). An instance without a configuration
/// leaves no mark, so the next one enforces: never none.
pub const ENFORCED_PROPERTY: [&str; 1] = ["attache_enforced"];

/// Marks the stream as enforced by this instance; false if an earlier
/// instance already had (proxy-wasm has no test-and-set: a read, then a
/// write, on the one thread that runs the stream's filters in order).
fn claim_stream(host: &mut impl Host) -> bool {
    if host.property(&ENFORCED_PROPERTY).is_some() {
        return false;
    }
    host.set_property(&ENFORCED_PROPERTY, b"1");
    true
}

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
        let Some(config) = self.config.clone() else {
            // No document yet: strip anyway, enforce nothing, leave no mark
            // (the next instance on the stream enforces: never none).
            strip_client_control_headers(host);
            return;
        };
        let trusted = config.trust_client_control_headers;
        // Found before the strip writes anything, so that a second instance
        // decides before touching what the first one set; fallback matching
        // sees the control headers as the strip will leave them.
        let (route, how) = {
            let reads = ReadOnce::new(&mut *host).hiding_client_control_headers(!trusted);
            find_route(&reads, &config)
        };
        if route.as_ref().is_some_and(|r| r.applies_once) && !claim_stream(host) {
            host.increment(Counter::EnforcedByAnotherInstance);
            return;
        }
        if !trusted {
            strip_client_control_headers(host);
        }
        if let Some(route) = &route {
            ops::apply_each(host, HeaderMap::Request, &route.request_ops);
        }
        self.finish_match(host, route, how);
    }

    pub fn on_response_headers(&mut self, host: &mut impl Host) {
        let Some(route) = &self.route else { return };
        if route.enforces.response_headers {
            ops::apply_each(host, HeaderMap::Response, &route.response_ops);
            host.increment(Counter::EnforcedResponseHeaders);
        }
    }

    /// Counts and logs the outcome and remembers the route for the response.
    fn finish_match(&mut self, host: &mut impl Host, route: Option<Rc<CompiledRoute>>, how: &str) {
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

/// The route of this request and how it was found: by Envoy's route name,
/// else by fallback matching. `host` asks each header and property once.
fn find_route<H: Host>(
    host: &ReadOnce<'_, H>,
    config: &CompiledConfig,
) -> (Option<Rc<CompiledRoute>>, &'static str) {
    if let Some(route) = route_by_name(host, config) {
        return (Some(route), "route name");
    }
    let table = config.fallback();
    if table.is_empty() {
        return (None, "");
    }
    let facts = RequestFacts::from_host(host.uncached());
    // Listener-aware only where the document's listeners have different
    // ports: otherwise the port is not read.
    let port = match table.tells_ports_apart() {
        true => destination_port(host),
        false => None,
    };
    let entry = table.find(&facts, port, host);
    let route = entry.and_then(|e| config.route_at(e)).cloned();
    (route, "fallback matching")
}

fn route_by_name<H: Host>(
    host: &ReadOnce<'_, H>,
    config: &CompiledConfig,
) -> Option<Rc<CompiledRoute>> {
    let bytes = host.uncached().property(&ROUTE_NAME_PROPERTY)?;
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

/// Removes the client's control headers that Envoy left in place: all of
/// them for a request Envoy took for internal (`x-envoy-internal` present),
/// else only those Envoy never strips. A header is removed only if it is
/// there: a remove is a write, and every request-header write makes Envoy
/// match the route again. Returns whether any was there.
fn strip_client_control_headers(host: &mut impl Host) -> bool {
    let internal = host.header(HeaderMap::Request, ENVOY_INTERNAL).is_some();
    let names: &[&str] = match internal {
        true => &CLIENT_CONTROL_HEADERS,
        false => &NOT_STRIPPED_BY_ENVOY,
    };
    let mut stripped = false;
    for name in names {
        if host.header(HeaderMap::Request, name).is_some() {
            host.set_header(HeaderMap::Request, name, None);
            stripped = true;
        }
    }
    if stripped {
        host.increment(Counter::ClientControlHeadersStripped);
    }
    stripped
}
