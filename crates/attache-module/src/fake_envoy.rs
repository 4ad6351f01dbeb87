//! An in-process stand-in for Envoy's side of the ABI: the callbacks
//! `crate::abi` declares, defined over plain header lists, and a driver
//! that calls the module's exported hooks as Envoy does (configuration new,
//! filter new, request headers, response headers, destroy). The unit tests,
//! the comparison with the `.wasm`'s path (tests in `src/tests.rs`) and the
//! fuzz targets (feature `fake-envoy`) drive the adapter through it; the
//! `.so` Envoy loads never contains it (tests/module_exports.rs).
//!
//! Thread-local state (counters, log lines) belongs to the test's thread.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::thread::LocalKey;

use crate::abi::{EnvoyBuffer, ModuleBuffer};
use crate::exports;

/// One request and its response as the fake Envoy holds them.
#[derive(Debug, Default, Clone)]
pub struct FakeStream {
    pub request: Vec<(String, Vec<u8>)>,
    pub response: Vec<(String, Vec<u8>)>,
    /// `xds.route_name`; `None`: Envoy selected no named route.
    pub route_name: Option<Vec<u8>>,
    pub destination_port: Option<u64>,
    pub filter_state: HashMap<String, Vec<u8>>,
    /// Single-header writes (set, remove, add) to either map.
    pub header_writes: usize,
}

impl FakeStream {
    fn map(&mut self, header_type: u32) -> Option<&mut Vec<(String, Vec<u8>)>> {
        match header_type {
            crate::abi::REQUEST_HEADER => Some(&mut self.request),
            crate::abi::RESPONSE_HEADER => Some(&mut self.response),
            _ => None,
        }
    }
}

thread_local! {
    static COUNTER_NAMES: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    static COUNTS: RefCell<HashMap<String, u64>> = RefCell::new(HashMap::new());
    static GAUGE_NAMES: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    static GAUGES: RefCell<HashMap<String, u64>> = RefCell::new(HashMap::new());
    static LOGS: RefCell<Vec<(u32, String)>> = const { RefCell::new(Vec::new()) };
    /// Envoy's default, info: the request path's debug lines are not
    /// formatted unless a test asks (the fuzz target runs millions).
    static LOG_LEVEL: RefCell<u32> = const { RefCell::new(2) };
}

/// The first log lines of a thread are kept, no more.
const MAX_LOG_LINES: usize = 10_000;

/// The count of the counter named `name` on this thread.
pub fn count(name: &str) -> u64 {
    COUNTS.with(|c| c.borrow().get(name).copied().unwrap_or(0))
}

/// The gauge named `name` on this thread; 0 (as Envoy reads it) until set.
pub fn gauge(name: &str) -> u64 {
    GAUGES.with(|g| g.borrow().get(name).copied().unwrap_or(0))
}

/// Every log line written on this thread, with abi.h's level.
pub fn logs() -> Vec<(u32, String)> {
    LOGS.with(|l| l.borrow().clone())
}

/// Lowest level written (abi.h's numbering; 0 trace, 2 info).
pub fn set_log_level(level: u32) {
    LOG_LEVEL.with(|l| *l.borrow_mut() = level);
}

/// A loaded configuration, destroyed on drop.
#[derive(Debug)]
pub struct FakeEnvoy {
    config: *const c_void,
    /// What Envoy's config pointer points to: only its address matters.
    _envoy_config: Box<u8>,
}

impl FakeEnvoy {
    /// `on_http_filter_config_new` with `document` as `filter_config`;
    /// `None` if the module refused it.
    pub fn load(document: &[u8]) -> Option<FakeEnvoy> {
        let mut envoy_config = Box::new(0u8);
        let pointer: *mut u8 = &mut *envoy_config;
        let name = b"attache";
        // SAFETY: both buffers live for the call.
        let config = unsafe {
            exports::envoy_dynamic_module_on_http_filter_config_new(
                pointer.cast(),
                EnvoyBuffer {
                    ptr: name.as_ptr(),
                    length: name.len(),
                },
                EnvoyBuffer {
                    ptr: document.as_ptr(),
                    length: document.len(),
                },
            )
        };
        (!config.is_null()).then_some(FakeEnvoy {
            config,
            _envoy_config: envoy_config,
        })
    }

    /// One stream through a new filter: request headers, then (the backend
    /// having answered with `stream.response`) response headers.
    pub fn exchange(&self, stream: &mut FakeStream) {
        self.exchange_then(stream, |_| {});
    }

    /// As [`FakeEnvoy::exchange`], with `backend` run between the request
    /// and the response hooks (it may write the response it answers with).
    pub fn exchange_then(&self, stream: &mut FakeStream, backend: impl FnOnce(&mut FakeStream)) {
        let envoy: *mut FakeStream = stream;
        // SAFETY: `config` is live (dropped with self); `envoy` outlives
        // the filter, which is destroyed before this returns; no hook runs
        // while `backend` holds the stream.
        unsafe {
            let filter =
                exports::envoy_dynamic_module_on_http_filter_new(self.config, envoy.cast());
            exports::envoy_dynamic_module_on_http_filter_request_headers(
                envoy.cast(),
                filter,
                true,
            );
            if let Some(stream) = envoy.as_mut() {
                backend(stream);
            }
            exports::envoy_dynamic_module_on_http_filter_response_headers(
                envoy.cast(),
                filter,
                true,
            );
            exports::envoy_dynamic_module_on_http_filter_destroy(filter);
        }
    }
}

impl Drop for FakeEnvoy {
    fn drop(&mut self) {
        // SAFETY: made by config_new, destroyed once.
        unsafe { exports::envoy_dynamic_module_on_http_filter_config_destroy(self.config) };
    }
}

/// # Safety
/// `buffer` is a module buffer valid for the call.
unsafe fn bytes(buffer: ModuleBuffer) -> Vec<u8> {
    if buffer.ptr.is_null() {
        return Vec::new();
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(buffer.ptr, buffer.length) }.to_vec()
}

/// # Safety
/// `filter` is the `*mut FakeStream` [`FakeEnvoy::exchange`] passed.
unsafe fn stream<'a>(filter: *mut c_void) -> Option<&'a mut FakeStream> {
    // SAFETY: the caller's contract.
    unsafe { filter.cast::<FakeStream>().as_mut() }
}

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8_lossy(&bytes).into_owned()
}

#[no_mangle]
extern "C" fn envoy_dynamic_module_callback_log(level: u32, message: ModuleBuffer) {
    // SAFETY: valid for the call (the module's contract).
    let message = text(unsafe { bytes(message) });
    // Bounded: a long run must not grow without end.
    LOGS.with(|l| {
        let mut logs = l.borrow_mut();
        if logs.len() < MAX_LOG_LINES {
            logs.push((level, message));
        }
    });
}

#[no_mangle]
extern "C" fn envoy_dynamic_module_callback_log_enabled(level: u32) -> bool {
    LOG_LEVEL.with(|l| level >= *l.borrow())
}

#[no_mangle]
unsafe extern "C" fn envoy_dynamic_module_callback_http_get_header(
    filter: *mut c_void,
    header_type: u32,
    key: ModuleBuffer,
    result: *mut EnvoyBuffer,
    index: usize,
    optional_size: *mut usize,
) -> bool {
    // SAFETY: the module passes valid pointers (abi.h's precondition).
    let (Some(stream), key) = (unsafe { stream(filter) }, text(unsafe { bytes(key) })) else {
        return false;
    };
    let Some(map) = stream.map(header_type) else {
        return false;
    };
    let values: Vec<&Vec<u8>> = map
        .iter()
        .filter(|(n, _)| *n == key)
        .map(|(_, v)| v)
        .collect();
    let found = values
        .get(index)
        .map_or(EnvoyBuffer::empty(), |v| EnvoyBuffer {
            ptr: v.as_ptr(),
            length: v.len(),
        });
    // SAFETY: as above.
    unsafe {
        *result = found;
        if !optional_size.is_null() {
            *optional_size = values.len();
        }
    }
    index < values.len()
}

#[no_mangle]
unsafe extern "C" fn envoy_dynamic_module_callback_http_get_headers_size(
    filter: *mut c_void,
    header_type: u32,
) -> usize {
    // SAFETY: the module passes valid pointers.
    let stream = unsafe { stream(filter) };
    stream
        .and_then(|s| s.map(header_type))
        .map_or(0, |m| m.len())
}

/// Fills `result` with `[key, value]` buffer pairs, abi.h's
/// `envoy_dynamic_module_type_envoy_http_header`.
#[no_mangle]
unsafe extern "C" fn envoy_dynamic_module_callback_http_get_headers(
    filter: *mut c_void,
    header_type: u32,
    result: *mut [EnvoyBuffer; 2],
) -> bool {
    // SAFETY: the module passes valid pointers.
    let Some(map) = (unsafe { stream(filter) }).and_then(|s| s.map(header_type)) else {
        return false;
    };
    for (i, (name, value)) in map.iter().enumerate() {
        let pair = [name.as_bytes(), value.as_slice()].map(|b| EnvoyBuffer {
            ptr: b.as_ptr(),
            length: b.len(),
        });
        // SAFETY: the module sized `result` by get_headers_size (abi.h).
        unsafe { result.add(i).write(pair) };
    }
    true
}

unsafe fn write_header(
    filter: *mut c_void,
    header_type: u32,
    key: ModuleBuffer,
    value: ModuleBuffer,
    add: bool,
) -> bool {
    // SAFETY: the module passes valid pointers.
    let (Some(stream), key) = (unsafe { stream(filter) }, text(unsafe { bytes(key) })) else {
        return false;
    };
    stream.header_writes += 1;
    let remove = value.ptr.is_null();
    // SAFETY: as above.
    let value = unsafe { bytes(value) };
    let Some(map) = stream.map(header_type) else {
        return false;
    };
    if !add {
        map.retain(|(n, _)| *n != key);
    }
    if add || !remove {
        map.push((key, value));
    }
    true
}

#[no_mangle]
unsafe extern "C" fn envoy_dynamic_module_callback_http_set_header(
    filter: *mut c_void,
    header_type: u32,
    key: ModuleBuffer,
    value: ModuleBuffer,
) -> bool {
    // SAFETY: forwarded.
    unsafe { write_header(filter, header_type, key, value, false) }
}

#[no_mangle]
unsafe extern "C" fn envoy_dynamic_module_callback_http_add_header(
    filter: *mut c_void,
    header_type: u32,
    key: ModuleBuffer,
    value: ModuleBuffer,
) -> bool {
    // SAFETY: forwarded.
    unsafe { write_header(filter, header_type, key, value, true) }
}

#[no_mangle]
unsafe extern "C" fn envoy_dynamic_module_callback_http_filter_get_attribute_string(
    filter: *mut c_void,
    attribute: u32,
    result: *mut EnvoyBuffer,
) -> bool {
    // SAFETY: valid pointers from the module.
    let Some(stream) = (unsafe { stream(filter) }) else {
        return false;
    };
    match (&stream.route_name, attribute) {
        (Some(name), 61) => {
            // SAFETY: as above.
            unsafe {
                *result = EnvoyBuffer {
                    ptr: name.as_ptr(),
                    length: name.len(),
                }
            };
            true
        }
        _ => false,
    }
}

#[no_mangle]
unsafe extern "C" fn envoy_dynamic_module_callback_http_filter_get_attribute_int(
    filter: *mut c_void,
    attribute: u32,
    result: *mut u64,
) -> bool {
    // SAFETY: valid pointers from the module.
    let Some(stream) = (unsafe { stream(filter) }) else {
        return false;
    };
    match (stream.destination_port, attribute) {
        (Some(port), 27) => {
            // SAFETY: as above.
            unsafe { *result = port };
            true
        }
        _ => false,
    }
}

#[no_mangle]
unsafe extern "C" fn envoy_dynamic_module_callback_http_set_filter_state_bytes(
    filter: *mut c_void,
    key: ModuleBuffer,
    value: ModuleBuffer,
) -> bool {
    // SAFETY: valid pointers from the module.
    let Some(stream) = (unsafe { stream(filter) }) else {
        return false;
    };
    // SAFETY: as above.
    let (key, value) = unsafe { (text(bytes(key)), bytes(value)) };
    stream.filter_state.insert(key, value);
    true
}

#[no_mangle]
unsafe extern "C" fn envoy_dynamic_module_callback_http_get_filter_state_bytes(
    filter: *mut c_void,
    key: ModuleBuffer,
    result: *mut EnvoyBuffer,
) -> bool {
    // SAFETY: valid pointers from the module.
    let Some(stream) = (unsafe { stream(filter) }) else {
        return false;
    };
    // SAFETY: as above.
    let key = text(unsafe { bytes(key) });
    match stream.filter_state.get(&key) {
        Some(value) => {
            // SAFETY: as above.
            unsafe {
                *result = EnvoyBuffer {
                    ptr: value.as_ptr(),
                    length: value.len(),
                }
            };
            true
        }
        None => false,
    }
}

#[no_mangle]
unsafe extern "C" fn envoy_dynamic_module_callback_http_filter_config_define_counter(
    _config: *mut c_void,
    name: ModuleBuffer,
    _label_names: *mut ModuleBuffer,
    _label_names_length: usize,
    id: *mut usize,
) -> u32 {
    // SAFETY: forwarded (valid pointers from the module).
    unsafe { define(&COUNTER_NAMES, name, id) }
}

/// Names a new metric of one kind; its id is its place in `names`.
///
/// # Safety
/// `name` is a module buffer valid for the call; `id` is writable.
unsafe fn define(
    names: &'static LocalKey<RefCell<Vec<String>>>,
    name: ModuleBuffer,
    id: *mut usize,
) -> u32 {
    // SAFETY: the caller's contract.
    let name = text(unsafe { bytes(name) });
    let index = names.with(|names| {
        let mut names = names.borrow_mut();
        names.push(name);
        names.len() - 1
    });
    // SAFETY: as above.
    unsafe { *id = index };
    0
}

fn add(id: usize, value: u64) -> u32 {
    let Some(name) = COUNTER_NAMES.with(|names| names.borrow().get(id).cloned()) else {
        return 1; // MetricNotFound
    };
    COUNTS.with(|c| *c.borrow_mut().entry(name).or_default() += value);
    0
}

#[no_mangle]
extern "C" fn envoy_dynamic_module_callback_http_filter_increment_counter(
    _filter: *mut c_void,
    id: usize,
    _label_values: *mut ModuleBuffer,
    _label_values_length: usize,
    value: u64,
) -> u32 {
    add(id, value)
}

#[no_mangle]
extern "C" fn envoy_dynamic_module_callback_http_filter_config_increment_counter(
    _config: *mut c_void,
    id: usize,
    _label_values: *mut ModuleBuffer,
    _label_values_length: usize,
    value: u64,
) -> u32 {
    add(id, value)
}

#[no_mangle]
unsafe extern "C" fn envoy_dynamic_module_callback_http_filter_config_define_gauge(
    _config: *mut c_void,
    name: ModuleBuffer,
    _label_names: *mut ModuleBuffer,
    _label_names_length: usize,
    id: *mut usize,
) -> u32 {
    // SAFETY: forwarded (valid pointers from the module).
    unsafe { define(&GAUGE_NAMES, name, id) }
}

#[no_mangle]
extern "C" fn envoy_dynamic_module_callback_http_filter_config_set_gauge(
    _config: *mut c_void,
    id: usize,
    _label_values: *mut ModuleBuffer,
    _label_values_length: usize,
    value: u64,
) -> u32 {
    let Some(name) = GAUGE_NAMES.with(|names| names.borrow().get(id).cloned()) else {
        return 1; // MetricNotFound
    };
    GAUGES.with(|g| g.borrow_mut().insert(name, value));
    0
}
