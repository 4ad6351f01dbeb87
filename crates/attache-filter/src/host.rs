//! The few things the filter needs from its host. The proxy-wasm adapter
//! implements this over host calls; tests implement it with a fake, so every
//! decision is exercised natively.

/// Which header map a call addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HeaderMap {
    Request,
    Response,
}

/// Envoy's log levels, as proxy-wasm passes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

/// The filter's counters. The adapter defines one Envoy metric per variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Counter {
    MatchedByName,
    MatchedByFallback,
    Unmatched,
    EnforcedTimeout,
    EnforcedRetry,
    EnforcedRequestHeaders,
    EnforcedResponseHeaders,
    ClientControlHeadersStripped,
    ConfigsAccepted,
    ConfigsRejected,
    /// A request another instance of the filter already enforced (the
    /// filter twice on one stream: a switch of Istio kinds, or a double
    /// deployment); this instance left it alone.
    EnforcedByAnotherInstance,
    /// A refused configuration, by [`crate::error::ConfigError::class`]
    /// (each beside the total `ConfigsRejected`).
    RejectedSyntax,
    RejectedSchema,
    RejectedEncoding,
    RejectedInvalid,
}

impl Counter {
    pub const ALL: [Counter; 15] = [
        Counter::MatchedByName,
        Counter::MatchedByFallback,
        Counter::Unmatched,
        Counter::EnforcedTimeout,
        Counter::EnforcedRetry,
        Counter::EnforcedRequestHeaders,
        Counter::EnforcedResponseHeaders,
        Counter::ClientControlHeadersStripped,
        Counter::ConfigsAccepted,
        Counter::ConfigsRejected,
        Counter::EnforcedByAnotherInstance,
        Counter::RejectedSyntax,
        Counter::RejectedSchema,
        Counter::RejectedEncoding,
        Counter::RejectedInvalid,
    ];

    /// The metric name as it appears in Envoy's stats (Envoy adds its own
    /// `wasmcustom.` prefix).
    pub fn metric_name(self) -> &'static str {
        match self {
            Counter::MatchedByName => "attache.requests.matched_by_name",
            Counter::MatchedByFallback => "attache.requests.matched_by_fallback",
            Counter::Unmatched => "attache.requests.unmatched",
            Counter::EnforcedTimeout => "attache.enforced.timeout",
            Counter::EnforcedRetry => "attache.enforced.retry",
            Counter::EnforcedRequestHeaders => "attache.enforced.request_headers",
            Counter::EnforcedResponseHeaders => "attache.enforced.response_headers",
            Counter::ClientControlHeadersStripped => {
                "attache.requests.client_control_headers_stripped"
            }
            Counter::ConfigsAccepted => "attache.configs.accepted",
            Counter::ConfigsRejected => "attache.configs.rejected",
            Counter::EnforcedByAnotherInstance => "attache.requests.enforced_by_another_instance",
            Counter::RejectedSyntax => "attache.configs.rejected.syntax",
            Counter::RejectedSchema => "attache.configs.rejected.schema",
            Counter::RejectedEncoding => "attache.configs.rejected.encoding",
            Counter::RejectedInvalid => "attache.configs.rejected.invalid",
        }
    }

    /// Position in [`Counter::ALL`], for adapters that keep ids in an array.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// The filter's gauges: what it serves, set when a configuration is
/// accepted, never on the request path. The adapter defines one Envoy
/// metric per variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Gauge {
    /// The identity of the document this Envoy serves
    /// (attache_contract::document_id): what the controller compares with
    /// the document it applied. 0 until one is accepted.
    DocumentId,
}

impl Gauge {
    pub const ALL: [Gauge; 1] = [Gauge::DocumentId];

    /// The metric name as it appears in Envoy's stats (after Envoy's
    /// `wasmcustom.` prefix).
    pub fn metric_name(self) -> &'static str {
        match self {
            Gauge::DocumentId => "attache.config.document_id",
        }
    }

    /// Position in [`Gauge::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Host services used by the filter. Header values come back as raw bytes
/// because clients can send anything; the filter decides what to do with
/// bytes that are not UTF-8 instead of trapping on them.
pub trait Host {
    /// A host property such as `["xds", "route_name"]`.
    fn property(&self, path: &[&str]) -> Option<Vec<u8>>;
    /// Sets a property of the stream: Envoy keeps it in the stream's filter
    /// state as `wasm.<path>`, where later filters of the same stream read
    /// it by `path` and no client can write it.
    fn set_property(&mut self, path: &[&str], value: &[u8]);
    /// The first value of `name`. The filter has no call that copies a
    /// whole header map: Envoy answers that through the module's `malloc`,
    /// one copy per header (docs/filter.md, "The request path").
    fn header(&self, map: HeaderMap, name: &str) -> Option<Vec<u8>>;
    /// Replaces every value of `name`; `None` removes the header.
    fn set_header(&mut self, map: HeaderMap, name: &str, value: Option<&str>);
    /// Appends one more value of `name`, keeping existing ones.
    fn add_header(&mut self, map: HeaderMap, name: &str, value: &str);
    /// Whether a message at `level` would be written: lets callers skip
    /// formatting on the request path.
    fn log_enabled(&self, level: LogLevel) -> bool;
    fn log(&self, level: LogLevel, message: &str);
    /// Counts one event. The proxy adapter only records it in the VM's
    /// [`crate::tally::Tally`]; Envoy sees it at the next flush.
    fn increment(&mut self, counter: Counter);
    /// Adds `delta` to the Envoy metric of `counter` (a host call).
    fn add_to_metric(&mut self, counter: Counter, delta: u64);
    /// Sets the Envoy gauge `gauge` to `value` (a host call; at load only).
    fn set_gauge(&mut self, gauge: Gauge, value: u64);
    /// The host's clock in nanoseconds, for how long a configuration took
    /// to load (a host call; never on the request path).
    fn clock_nanos(&self) -> Option<u64>;
    /// The size of the VM's linear memory in bytes. Wasm memory only grows,
    /// so after a load this is the high-water mark the VM keeps.
    fn memory_bytes(&self) -> Option<u64>;
}

/// `path`'s parts joined by NUL, as proxy-wasm takes a property path,
/// handed to `f`. Every request reads `xds.route_name`: a path that short
/// is joined on the stack, without the allocation `join` makes.
pub fn with_property_path<R>(path: &[&str], f: impl FnOnce(&[u8]) -> R) -> R {
    let mut stack = [0u8; 64];
    let mut at = 0;
    for (i, part) in path.iter().enumerate() {
        let separator = usize::from(i > 0);
        let end = at + separator + part.len();
        match stack.get_mut(at + separator..end) {
            // The separator byte before it is still 0.
            Some(room) => room.copy_from_slice(part.as_bytes()),
            None => return f(path.join("\0").as_bytes()),
        }
        at = end;
    }
    f(stack.get(..at).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::{with_property_path, Counter, Gauge};

    #[test]
    fn a_property_path_is_its_parts_joined_by_nul_however_long() {
        let long = "p".repeat(70);
        let paths: [&[&str]; 6] = [
            &["xds", "route_name"],
            &["attache_enforced"],
            &[],
            &["", ""],
            &["a", &long, "b"],
            &[&long[..63]],
        ];
        for path in paths {
            let joined = with_property_path(path, <[u8]>::to_vec);
            assert_eq!(joined, path.join("\0").into_bytes(), "{path:?}");
        }
    }

    #[test]
    fn every_counter_has_its_own_slot_and_metric_name() {
        for (i, counter) in Counter::ALL.iter().enumerate() {
            assert_eq!(counter.index(), i, "{counter:?}");
        }
        let mut names: Vec<_> = Counter::ALL.iter().map(|c| c.metric_name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Counter::ALL.len());
        for (i, gauge) in Gauge::ALL.iter().enumerate() {
            assert_eq!(gauge.index(), i, "{gauge:?}");
            assert!(!names.contains(&gauge.metric_name()), "{gauge:?}");
        }
    }
}
