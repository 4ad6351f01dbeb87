//! An in-memory [`Host`] for native tests: header maps, properties, counters
//! and log lines that tests can inspect.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use crate::host::{Counter, Gauge, HeaderMap, Host, LogLevel};

#[derive(Debug)]
pub struct FakeHost {
    pub request: Vec<(String, Vec<u8>)>,
    pub response: Vec<(String, Vec<u8>)>,
    pub properties: HashMap<Vec<String>, Vec<u8>>,
    pub counters: HashMap<Counter, u64>,
    /// Each gauge's last value, and how many times any gauge was set.
    pub gauges: HashMap<Gauge, u64>,
    pub gauge_sets: usize,
    pub logs: RefCell<Vec<(LogLevel, String)>>,
    /// Lowest level that is written, as Envoy's log level would be.
    pub level: LogLevel,
    /// How many times a single header was looked up by name.
    pub lookups: RefCell<usize>,
    /// How many property reads were made (of the route and the port: the
    /// reads of the enforced mark are counted in `mark_calls`).
    pub property_reads: RefCell<usize>,
    /// Reads and writes of [`crate::stream::ENFORCED_PROPERTY`], the
    /// mark every configured request costs (one read, one write), counted
    /// apart so that the lookup's own reads stay visible.
    pub mark_calls: RefCell<usize>,
    /// How many single-header writes (set, remove, add) were made.
    pub header_writes: usize,
    /// The fake clock, in nanoseconds, and how far each reading moves it.
    pub clock: Cell<u64>,
    pub clock_step: u64,
    /// What the VM's memory size reads as; `None`: the host cannot tell.
    pub memory: Option<u64>,
}

impl Default for FakeHost {
    fn default() -> Self {
        FakeHost {
            request: Vec::new(),
            response: Vec::new(),
            properties: HashMap::new(),
            counters: HashMap::new(),
            gauges: HashMap::new(),
            gauge_sets: 0,
            logs: RefCell::new(Vec::new()),
            level: LogLevel::Trace,
            lookups: RefCell::new(0),
            property_reads: RefCell::new(0),
            mark_calls: RefCell::new(0),
            header_writes: 0,
            clock: Cell::new(0),
            clock_step: 0,
            memory: None,
        }
    }
}

impl FakeHost {
    /// A GET to `authority` + `path` with extra headers.
    pub fn request(authority: &str, path: &str, headers: &[(&str, &str)]) -> Self {
        let mut host = FakeHost::default();
        host.request.push((":authority".into(), authority.into()));
        host.request.push((":path".into(), path.into()));
        host.request.push((":method".into(), b"GET".to_vec()));
        for (name, value) in headers {
            host.request
                .push((name.to_string(), value.as_bytes().to_vec()));
        }
        host
    }

    pub fn with_route_name(mut self, name: &str) -> Self {
        self.properties.insert(
            vec!["xds".into(), "route_name".into()],
            name.as_bytes().to_vec(),
        );
        self
    }

    /// `destination.port` as Envoy hands it over: an int64 in 8
    /// little-endian bytes.
    pub fn with_destination_port(mut self, port: i64) -> Self {
        self.properties.insert(
            vec!["destination".into(), "port".into()],
            port.to_le_bytes().to_vec(),
        );
        self
    }

    pub fn with_method(mut self, method: &str) -> Self {
        self.request.retain(|(n, _)| n != ":method");
        self.request
            .push((":method".into(), method.as_bytes().to_vec()));
        self
    }

    /// Every host call the stream made, by kind: (property reads, header
    /// reads, header writes). The host has no whole-map call to count.
    pub fn calls(&self) -> (usize, usize, usize) {
        (
            *self.property_reads.borrow(),
            *self.lookups.borrow(),
            self.header_writes,
        )
    }

    /// As Envoy hands the request to the filter for a client it takes for
    /// internal: marked with `x-envoy-internal` and nothing stripped.
    pub fn internal(mut self) -> Self {
        self.request
            .push(("x-envoy-internal".into(), b"true".to_vec()));
        self
    }

    fn map(&self, map: HeaderMap) -> &Vec<(String, Vec<u8>)> {
        match map {
            HeaderMap::Request => &self.request,
            HeaderMap::Response => &self.response,
        }
    }

    fn map_mut(&mut self, map: HeaderMap) -> &mut Vec<(String, Vec<u8>)> {
        match map {
            HeaderMap::Request => &mut self.request,
            HeaderMap::Response => &mut self.response,
        }
    }

    /// Every value of `name`, in order, lossily decoded for assertions.
    pub fn values(&self, map: HeaderMap, name: &str) -> Vec<String> {
        self.map(map)
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
            .collect()
    }

    pub fn request_values(&self, name: &str) -> Vec<String> {
        self.values(HeaderMap::Request, name)
    }

    pub fn count(&self, counter: Counter) -> u64 {
        self.counters.get(&counter).copied().unwrap_or(0)
    }

    /// A gauge's value; 0 (as Envoy reads it) until set.
    pub fn gauge(&self, gauge: Gauge) -> u64 {
        self.gauges.get(&gauge).copied().unwrap_or(0)
    }

    pub fn log_lines(&self) -> Vec<(LogLevel, String)> {
        self.logs.borrow().clone()
    }
}

impl Host for FakeHost {
    fn property(&self, path: &[&str]) -> Option<Vec<u8>> {
        if path == crate::stream::ENFORCED_PROPERTY {
            *self.mark_calls.borrow_mut() += 1;
        } else {
            *self.property_reads.borrow_mut() += 1;
        }
        let key: Vec<String> = path.iter().map(|s| s.to_string()).collect();
        self.properties.get(&key).cloned()
    }

    fn set_property(&mut self, path: &[&str], value: &[u8]) {
        *self.mark_calls.borrow_mut() += 1;
        let key: Vec<String> = path.iter().map(|s| s.to_string()).collect();
        self.properties.insert(key, value.to_vec());
    }

    fn header(&self, map: HeaderMap, name: &str) -> Option<Vec<u8>> {
        *self.lookups.borrow_mut() += 1;
        self.map(map)
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    }

    fn set_header(&mut self, map: HeaderMap, name: &str, value: Option<&str>) {
        self.header_writes += 1;
        let entries = self.map_mut(map);
        entries.retain(|(n, _)| n != name);
        if let Some(value) = value {
            entries.push((name.to_string(), value.as_bytes().to_vec()));
        }
    }

    fn add_header(&mut self, map: HeaderMap, name: &str, value: &str) {
        self.header_writes += 1;
        self.map_mut(map)
            .push((name.to_string(), value.as_bytes().to_vec()));
    }

    fn log_enabled(&self, level: LogLevel) -> bool {
        level >= self.level
    }

    fn log(&self, level: LogLevel, message: &str) {
        if self.log_enabled(level) {
            self.logs.borrow_mut().push((level, message.to_string()));
        }
    }

    fn increment(&mut self, counter: Counter) {
        self.add_to_metric(counter, 1);
    }

    fn add_to_metric(&mut self, counter: Counter, delta: u64) {
        *self.counters.entry(counter).or_default() += delta;
    }

    fn set_gauge(&mut self, gauge: Gauge, value: u64) {
        self.gauge_sets += 1;
        self.gauges.insert(gauge, value);
    }

    fn clock_nanos(&self) -> Option<u64> {
        // Each reading advances the fake clock by `clock_step`.
        let now = self.clock.get();
        self.clock.set(now.checked_add(self.clock_step)?);
        Some(now)
    }

    fn memory_bytes(&self) -> Option<u64> {
        self.memory
    }
}
