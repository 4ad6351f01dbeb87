//! The proxy-wasm adapter: root and HTTP contexts that hand every decision to
//! [`Plugin`] and [`Stream`], and a [`Host`] over proxy-wasm host calls.
//!
//! Counters are recorded in the VM and published from the root context's
//! tick (see [`crate::tally`]); Envoy's log level is cached the same way.
//!
//! Header values are read as bytes (`get_map_value_bytes`): the SDK's string
//! variant unwraps UTF-8 and would trap on a client's non-UTF-8 header.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use proxy_wasm::hostcalls;
use proxy_wasm::traits::{Context, HttpContext, RootContext};
use proxy_wasm::types::{Action, ContextType, LogLevel as WasmLogLevel, MapType, MetricType};

use crate::host::{Counter, HeaderMap, Host, LogLevel};
use crate::plugin::{Generations, Plugin};
use crate::stream::Stream;
use crate::tally::Tally;

proxy_wasm::main! {{
    // The SDK logger also installs a panic hook that logs the message before
    // the (abort) trap, should one ever happen inside the SDK.
    proxy_wasm::set_log_level(WasmLogLevel::Trace);
    proxy_wasm::set_root_context(|_| -> Box<dyn RootContext> { Box::new(Root::new()) });
}}

/// Shared by every root context of this VM (one per plugin configuration).
static GENERATIONS: Generations = Generations::new();

/// How often a root context publishes the VM's counts and re-reads Envoy's
/// log level. Stats lag by at most this much.
const TICK: Duration = Duration::from_secs(1);

/// Metric ids, one per [`Counter`]; `None` where the host refused one.
type MetricIds = [Option<u32>; Counter::ALL.len()];

/// What every context of this VM shares: Envoy's metrics live in the VM's
/// stats scope, so one set of ids and one tally serve all root contexts,
/// and whichever root ticks next publishes counts from streams of any.
struct VmState {
    metrics: MetricIds,
    tally: Tally,
    /// Envoy's log level as last read; `None` until read. Cached so that
    /// the request path asks no host call before deciding not to log.
    level: Cell<Option<WasmLogLevel>>,
}

impl VmState {
    fn new() -> Self {
        let mut metrics: MetricIds = [None; Counter::ALL.len()];
        for counter in Counter::ALL {
            if let Some(slot) = metrics.get_mut(counter.index()) {
                *slot = hostcalls::define_metric(MetricType::Counter, counter.metric_name()).ok();
            }
        }
        VmState {
            metrics,
            tally: Tally::default(),
            level: Cell::new(None),
        }
    }

    fn refresh_level(&self) {
        self.level.set(hostcalls::get_log_level().ok());
    }
}

thread_local! {
    static VM: Rc<VmState> = Rc::new(VmState::new());
}

struct ProxyHost {
    vm: Rc<VmState>,
}

fn map_type(map: HeaderMap) -> MapType {
    match map {
        HeaderMap::Request => MapType::HttpRequestHeaders,
        HeaderMap::Response => MapType::HttpResponseHeaders,
    }
}

fn wasm_level(level: LogLevel) -> WasmLogLevel {
    match level {
        LogLevel::Trace => WasmLogLevel::Trace,
        LogLevel::Debug => WasmLogLevel::Debug,
        LogLevel::Info => WasmLogLevel::Info,
        LogLevel::Warn => WasmLogLevel::Warn,
        LogLevel::Error => WasmLogLevel::Error,
    }
}

impl Host for ProxyHost {
    fn property(&self, path: &[&str]) -> Option<Vec<u8>> {
        hostcalls::get_property(path.to_vec()).ok().flatten()
    }

    fn header(&self, map: HeaderMap, name: &str) -> Option<Vec<u8>> {
        hostcalls::get_map_value_bytes(map_type(map), name)
            .ok()
            .flatten()
    }

    fn set_header(&mut self, map: HeaderMap, name: &str, value: Option<&str>) {
        // A refused write leaves the request as it was; there is nobody to
        // report it to on the request path beyond Envoy's own logs.
        let _ = hostcalls::set_map_value_bytes(map_type(map), name, value.map(str::as_bytes));
    }

    fn add_header(&mut self, map: HeaderMap, name: &str, value: &str) {
        let _ = hostcalls::add_map_value_bytes(map_type(map), name, value.as_bytes());
    }

    fn log_enabled(&self, level: LogLevel) -> bool {
        // The cached level (refreshed on configure and every tick), so a
        // level change takes effect within one tick.
        self.vm
            .level
            .get()
            .is_some_and(|current| (current as u32) <= (wasm_level(level) as u32))
    }

    fn log(&self, level: LogLevel, message: &str) {
        let _ = hostcalls::log(wasm_level(level), message);
    }

    fn increment(&mut self, counter: Counter) {
        self.vm.tally.record(counter);
    }

    fn clock_nanos(&self) -> Option<u64> {
        let since_epoch = hostcalls::get_current_time()
            .ok()?
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?;
        u64::try_from(since_epoch.as_nanos()).ok()
    }

    fn memory_bytes(&self) -> Option<u64> {
        // Pages of 64 KiB (the Wasm spec's page size); not a host call.
        let pages = core::arch::wasm32::memory_size(0);
        u64::try_from(pages).ok()?.checked_mul(65_536)
    }

    fn add_to_metric(&mut self, counter: Counter, delta: u64) {
        if let Some(Some(id)) = self.vm.metrics.get(counter.index()) {
            let delta = i64::try_from(delta).unwrap_or(i64::MAX);
            let _ = hostcalls::increment_metric(*id, delta);
        }
    }
}

struct Root {
    plugin: Plugin,
    vm: Rc<VmState>,
}

impl Root {
    fn new() -> Self {
        Root {
            plugin: Plugin::default(),
            vm: VM.with(Rc::clone),
        }
    }

    fn host(&self) -> ProxyHost {
        ProxyHost {
            vm: Rc::clone(&self.vm),
        }
    }

    fn flush(&self) {
        let mut host = self.host();
        self.vm.tally.flush(&mut host);
    }
}

impl Context for Root {
    fn on_done(&mut self) -> bool {
        self.flush();
        true
    }
}

impl RootContext for Root {
    fn on_configure(&mut self, _plugin_configuration_size: usize) -> bool {
        self.vm.refresh_level();
        let bytes = self.get_plugin_configuration().unwrap_or_default();
        let mut host = self.host();
        let accepted = self.plugin.configure(&mut host, &GENERATIONS, bytes);
        self.flush();
        self.set_tick_period(TICK);
        accepted
    }

    fn on_tick(&mut self) {
        self.vm.refresh_level();
        self.flush();
    }

    fn create_http_context(&self, _context_id: u32) -> Option<Box<dyn HttpContext>> {
        Some(Box::new(Http {
            stream: Stream::new(self.plugin.current(), self.plugin.generation()),
            host: self.host(),
        }))
    }

    fn get_type(&self) -> Option<ContextType> {
        Some(ContextType::HttpContext)
    }
}

struct Http {
    stream: Stream,
    host: ProxyHost,
}

impl Context for Http {}

impl HttpContext for Http {
    fn on_http_request_headers(&mut self, _num_headers: usize, _end_of_stream: bool) -> Action {
        self.stream.on_request_headers(&mut self.host);
        Action::Continue
    }

    fn on_http_response_headers(&mut self, _num_headers: usize, _end_of_stream: bool) -> Action {
        self.stream.on_response_headers(&mut self.host);
        Action::Continue
    }
}
