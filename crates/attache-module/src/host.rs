//! The filter core's [`Host`] over Envoy's dynamic-module callbacks: one
//! for a stream ([`StreamHost`], a worker thread) and one for loading a
//! configuration ([`LoadHost`], the main thread or a worker's first stream).
//! Safe code: every call goes through [`crate::abi`]'s wrappers.

use attache_filter::host::{Counter, Gauge, HeaderMap, Host, LogLevel};
use attache_filter::stream::ENFORCED_PROPERTY;

use std::cell::OnceCell;

use crate::abi::{self, ConfigPtr, FilterPtr};
use crate::snapshot::HeaderSnapshot;

/// The filter state key of the stream's enforced mark
/// ([`ENFORCED_PROPERTY`]). The `.wasm` keeps its mark as
/// `wasm.attache_enforced`, a Wasm-typed object this host cannot read, so
/// a module and a `.wasm` on one stream do not see each other's mark
/// (docs/filter.md, "The dynamic module").
pub const ENFORCED_KEY: &str = "attache.enforced";

/// Envoy's log levels as abi.h numbers them (trace 0 … critical 5).
fn level(level: LogLevel) -> u32 {
    match level {
        LogLevel::Trace => 0,
        LogLevel::Debug => 1,
        LogLevel::Info => 2,
        LogLevel::Warn => 3,
        LogLevel::Error => 4,
    }
}

fn map_type(map: HeaderMap) -> u32 {
    match map {
        HeaderMap::Request => abi::REQUEST_HEADER,
        HeaderMap::Response => abi::RESPONSE_HEADER,
    }
}

/// Nanoseconds since the Unix epoch: what a load's duration is measured
/// with (Envoy's clock is not in the ABI; the process's is the same).
fn now_nanos() -> Option<u64> {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    u64::try_from(since.as_nanos()).ok()
}

/// One stream's host: headers, attributes and filter state of the stream,
/// counters in the configuration's scope. Made for one hook.
pub struct StreamHost<'a> {
    filter: FilterPtr,
    counters: &'a CounterIds,
    /// The first map the core reads in this hook, taken whole at that read
    /// and kept current with the hook's writes ([`HeaderSnapshot`] says
    /// why); empty until then, and for a map Envoy would not hand over.
    headers: OnceCell<(HeaderMap, HeaderSnapshot)>,
}

impl<'a> StreamHost<'a> {
    pub fn new(filter: FilterPtr, counters: &'a CounterIds) -> Self {
        StreamHost {
            filter,
            counters,
            headers: OnceCell::new(),
        }
    }

    /// The snapshot of `map`, taking it if no map was taken yet.
    fn snapshot(&self, map: HeaderMap) -> Option<&HeaderSnapshot> {
        let (taken, snapshot) = match self.headers.get() {
            Some(held) => held,
            None => {
                let snapshot = abi::headers(self.filter, map_type(map))?;
                self.headers.get_or_init(|| (map, snapshot))
            }
        };
        (*taken == map).then_some(snapshot)
    }

    /// The snapshot of `map` if one was taken: writes keep it current.
    fn snapshot_mut(&mut self, map: HeaderMap) -> Option<&mut HeaderSnapshot> {
        match self.headers.get_mut() {
            Some((taken, snapshot)) if *taken == map => Some(snapshot),
            _ => None,
        }
    }
}

impl Host for StreamHost<'_> {
    fn property(&self, path: &[&str]) -> Option<Vec<u8>> {
        match path {
            ["xds", "route_name"] => abi::route_name(self.filter),
            // As the Wasm host serialises an integer property: 8 bytes,
            // little-endian, which the core decodes.
            ["destination", "port"] => {
                let port = i64::try_from(abi::destination_port(self.filter)?).ok()?;
                Some(port.to_le_bytes().to_vec())
            }
            _ if path == ENFORCED_PROPERTY => abi::filter_state(self.filter, ENFORCED_KEY),
            _ => None,
        }
    }

    fn set_property(&mut self, path: &[&str], value: &[u8]) {
        // The core sets no other property.
        if path == ENFORCED_PROPERTY {
            abi::set_filter_state(self.filter, ENFORCED_KEY, value);
        }
    }

    fn header(&self, map: HeaderMap, name: &str) -> Option<Vec<u8>> {
        match self.snapshot(map) {
            Some(snapshot) => snapshot.get(name.as_bytes()).map(<[u8]>::to_vec),
            None => abi::header(self.filter, map_type(map), name),
        }
    }

    /// With the map in hand: removing an absent header is skipped (it
    /// changes nothing), and setting one becomes an add (Envoy's set
    /// searches the map to remove first). Without it, as asked.
    fn set_header(&mut self, map: HeaderMap, name: &str, value: Option<&str>) {
        let filter = self.filter;
        let Some(snapshot) = self.snapshot_mut(map) else {
            abi::set_header(filter, map_type(map), name, value);
            return;
        };
        match (snapshot.contains(name.as_bytes()), value) {
            (false, None) => {}
            (false, Some(value)) => {
                abi::add_header(filter, map_type(map), name, value);
                snapshot.add(name.as_bytes(), value.as_bytes());
            }
            (true, value) => {
                abi::set_header(filter, map_type(map), name, value);
                snapshot.set(name.as_bytes(), value.map(str::as_bytes));
            }
        }
    }

    fn add_header(&mut self, map: HeaderMap, name: &str, value: &str) {
        abi::add_header(self.filter, map_type(map), name, value);
        if let Some(snapshot) = self.snapshot_mut(map) {
            snapshot.add(name.as_bytes(), value.as_bytes());
        }
    }

    fn log_enabled(&self, at: LogLevel) -> bool {
        abi::log_enabled(level(at))
    }

    fn log(&self, at: LogLevel, message: &str) {
        abi::log(level(at), message);
    }

    fn increment(&mut self, counter: Counter) {
        self.add_to_metric(counter, 1);
    }

    /// Straight to Envoy's counter (an atomic add behind a function call):
    /// no VM to batch crossings for, so no tally.
    fn add_to_metric(&mut self, counter: Counter, delta: u64) {
        if let Some(id) = self.counters.get(counter) {
            abi::increment_counter(self.filter, id, delta);
        }
    }

    /// Gauges are set at load (`LoadHost`), never on the request path.
    fn set_gauge(&mut self, _gauge: Gauge, _value: u64) {}

    fn clock_nanos(&self) -> Option<u64> {
        now_nanos()
    }

    fn memory_bytes(&self) -> Option<u64> {
        None
    }
}

/// The host a configuration is loaded with. `quiet`: a worker's own copy of
/// a configuration the main thread already loaded, logged and counted, so
/// only an error (which would mean the two loads differ) is written.
pub struct LoadHost<'a> {
    pub config: Option<ConfigPtr>,
    pub counters: &'a CounterIds,
    pub quiet: bool,
}

impl Host for LoadHost<'_> {
    fn property(&self, _path: &[&str]) -> Option<Vec<u8>> {
        None
    }

    fn set_property(&mut self, _path: &[&str], _value: &[u8]) {}

    fn header(&self, _map: HeaderMap, _name: &str) -> Option<Vec<u8>> {
        None
    }

    fn set_header(&mut self, _map: HeaderMap, _name: &str, _value: Option<&str>) {}

    fn add_header(&mut self, _map: HeaderMap, _name: &str, _value: &str) {}

    fn log_enabled(&self, at: LogLevel) -> bool {
        (!self.quiet || at >= LogLevel::Error) && abi::log_enabled(level(at))
    }

    fn log(&self, at: LogLevel, message: &str) {
        if self.log_enabled(at) {
            abi::log(level(at), message);
        }
    }

    fn increment(&mut self, counter: Counter) {
        self.add_to_metric(counter, 1);
    }

    fn add_to_metric(&mut self, counter: Counter, delta: u64) {
        if self.quiet {
            return;
        }
        if let (Some(config), Some(id)) = (self.config, self.counters.get(counter)) {
            abi::increment_config_counter(config, id, delta);
        }
    }

    /// The main thread's load publishes what this Envoy serves (the
    /// document's identity); a worker's quiet copy does not repeat it.
    fn set_gauge(&mut self, gauge: Gauge, value: u64) {
        if self.quiet {
            return;
        }
        if let (Some(config), Some(id)) = (self.config, self.counters.gauge(gauge)) {
            abi::set_config_gauge(config, id, value);
        }
    }

    fn clock_nanos(&self) -> Option<u64> {
        now_nanos()
    }

    fn memory_bytes(&self) -> Option<u64> {
        None
    }
}

/// Envoy's id of each counter and gauge, defined in `config_new` (Envoy
/// freezes stats creation after it); `None` where Envoy refused one.
#[derive(Debug, Clone, Copy, Default)]
pub struct CounterIds(
    [Option<usize>; Counter::ALL.len()],
    [Option<usize>; Gauge::ALL.len()],
);

impl CounterIds {
    /// Defines every [`Counter`] and [`Gauge`] under its metric name, in the scope Envoy
    /// gives the configuration (`<metrics_namespace>.`, by default
    /// `dynamicmodulescustom.`).
    pub fn define(config: ConfigPtr) -> Self {
        let mut ids = CounterIds::default();
        for counter in Counter::ALL {
            if let Some(slot) = ids.0.get_mut(counter.index()) {
                *slot = abi::define_counter(config, counter.metric_name());
            }
        }
        for gauge in Gauge::ALL {
            if let Some(slot) = ids.1.get_mut(gauge.index()) {
                *slot = abi::define_gauge(config, gauge.metric_name());
            }
        }
        ids
    }

    pub fn get(&self, counter: Counter) -> Option<usize> {
        self.0.get(counter.index()).copied().flatten()
    }

    pub fn gauge(&self, gauge: Gauge) -> Option<usize> {
        self.1.get(gauge.index()).copied().flatten()
    }
}
