//! The proxy-wasm adapter: root and HTTP contexts that hand every decision to
//! [`Plugin`] and [`Stream`], and a [`Host`] over proxy-wasm host calls.
//!
//! Header values are read as bytes (`get_map_value_bytes`): the SDK's string
//! variant unwraps UTF-8 and would trap on a client's non-UTF-8 header.

use std::rc::Rc;

use proxy_wasm::hostcalls;
use proxy_wasm::traits::{Context, HttpContext, RootContext};
use proxy_wasm::types::{Action, ContextType, LogLevel as WasmLogLevel, MapType, MetricType};

use crate::host::{Counter, HeaderMap, Host, LogLevel};
use crate::plugin::{Generations, Plugin};
use crate::stream::Stream;

proxy_wasm::main! {{
    // The SDK logger also installs a panic hook that logs the message before
    // the (abort) trap, should one ever happen inside the SDK.
    proxy_wasm::set_log_level(WasmLogLevel::Trace);
    proxy_wasm::set_root_context(|_| -> Box<dyn RootContext> { Box::new(Root::new()) });
}}

/// Shared by every root context of this VM (one per plugin configuration).
static GENERATIONS: Generations = Generations::new();

/// Metric ids, one per [`Counter`]; `None` where the host refused one.
type MetricIds = [Option<u32>; Counter::ALL.len()];

struct ProxyHost {
    metrics: Rc<MetricIds>,
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
        // Envoy's current level for the wasm logger; asking is cheaper than
        // formatting a message Envoy would drop.
        hostcalls::get_log_level()
            .is_ok_and(|current| (current as u32) <= (wasm_level(level) as u32))
    }

    fn log(&self, level: LogLevel, message: &str) {
        let _ = hostcalls::log(wasm_level(level), message);
    }

    fn increment(&mut self, counter: Counter) {
        if let Some(Some(id)) = self.metrics.get(counter.index()) {
            let _ = hostcalls::increment_metric(*id, 1);
        }
    }
}

struct Root {
    plugin: Plugin,
    metrics: Rc<MetricIds>,
}

impl Root {
    fn new() -> Self {
        let mut ids: MetricIds = [None; Counter::ALL.len()];
        for counter in Counter::ALL {
            if let Some(slot) = ids.get_mut(counter.index()) {
                *slot = hostcalls::define_metric(MetricType::Counter, counter.metric_name()).ok();
            }
        }
        Root {
            plugin: Plugin::default(),
            metrics: Rc::new(ids),
        }
    }

    fn host(&self) -> ProxyHost {
        ProxyHost {
            metrics: Rc::clone(&self.metrics),
        }
    }
}

impl Context for Root {}

impl RootContext for Root {
    fn on_configure(&mut self, _plugin_configuration_size: usize) -> bool {
        let bytes = self.get_plugin_configuration().unwrap_or_default();
        let mut host = self.host();
        self.plugin.configure(&mut host, &GENERATIONS, &bytes)
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
