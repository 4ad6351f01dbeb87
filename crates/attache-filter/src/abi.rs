//! The proxy-wasm ABI 0.2.1 host calls the filter makes, declared here
//! instead of through the Rust SDK (`crate::proxy` says why), each wrapped
//! in a safe function that never panics: a status other than `Ok` becomes
//! `None`/`false` where the SDK would trap.
//!
//! Signatures and numbering follow the ABI specification
//! (proxy-wasm/spec, abi-versions/v0.2.1/README.md) and proxy-wasm-cpp-host's
//! `include/proxy-wasm/exports.h`; `usize` is the module's 32-bit pointer
//! size. Memory the host hands back (a header value, a property, the
//! configuration) was allocated through our `proxy_on_memory_allocate`
//! export as a `Vec<u8>` of exactly that size, so it is taken back with
//! `Vec::from_raw_parts(ptr, size, size)`.

// The host calls are foreign functions: this adapter is where the filter's
// `unsafe` lives (lib.rs denies it everywhere else).
#![allow(unsafe_code)]

use std::ptr::null_mut;

use crate::host::with_property_path;

/// `WasmResult::Ok`; every other status is a refusal we do not act on.
const OK: u32 = 0;

/// Header map types (`WasmHeaderMapType`).
pub const REQUEST_HEADERS: u32 = 0;
pub const RESPONSE_HEADERS: u32 = 2;
/// `WasmBufferType::PluginConfiguration`.
const PLUGIN_CONFIGURATION: u32 = 7;
/// `MetricType::Counter` and `MetricType::Gauge`.
const COUNTER: u32 = 0;
const GAUGE: u32 = 1;

#[link(wasm_import_module = "env")]
extern "C" {
    fn proxy_log(level: u32, message: *const u8, message_size: usize) -> u32;
    fn proxy_get_log_level(level: *mut u32) -> u32;
    fn proxy_get_current_time_nanoseconds(time: *mut u64) -> u32;
    fn proxy_set_tick_period_milliseconds(period: u32) -> u32;
    fn proxy_get_buffer_bytes(
        buffer_type: u32,
        start: usize,
        max_size: usize,
        data: *mut *mut u8,
        size: *mut usize,
    ) -> u32;
    fn proxy_get_header_map_value(
        map: u32,
        key: *const u8,
        key_size: usize,
        value: *mut *mut u8,
        value_size: *mut usize,
    ) -> u32;
    fn proxy_replace_header_map_value(
        map: u32,
        key: *const u8,
        key_size: usize,
        value: *const u8,
        value_size: usize,
    ) -> u32;
    fn proxy_add_header_map_value(
        map: u32,
        key: *const u8,
        key_size: usize,
        value: *const u8,
        value_size: usize,
    ) -> u32;
    fn proxy_remove_header_map_value(map: u32, key: *const u8, key_size: usize) -> u32;
    fn proxy_get_property(
        path: *const u8,
        path_size: usize,
        value: *mut *mut u8,
        value_size: *mut usize,
    ) -> u32;
    fn proxy_set_property(
        path: *const u8,
        path_size: usize,
        value: *const u8,
        value_size: usize,
    ) -> u32;
    fn proxy_define_metric(
        metric_type: u32,
        name: *const u8,
        name_size: usize,
        id: *mut u32,
    ) -> u32;
    fn proxy_increment_metric(id: u32, offset: i64) -> u32;
    fn proxy_record_metric(id: u32, value: u64) -> u32;
}

/// Takes back the host's copy of a value: memory from our allocator, or
/// null for an empty value.
fn owned(status: u32, data: *mut u8, size: usize) -> Option<Vec<u8>> {
    if status != OK {
        return None;
    }
    if data.is_null() {
        return Some(Vec::new());
    }
    // SAFETY: the host wrote `size` bytes into a block it asked
    // `proxy_on_memory_allocate` for with exactly that size: a `Vec<u8>`
    // whose length and capacity are `size`, now ours to free.
    Some(unsafe { Vec::from_raw_parts(data, size, size) })
}

/// `proxy_on_memory_allocate`'s body: a block of exactly `size` bytes the
/// host fills and then hands to one of the calls above, which frees it.
/// When the VM cannot grow, null: the spec's "failure" answer, which the
/// host turns into a failed call instead of a trap (`Vec::with_capacity`,
/// which the SDK used, aborts).
pub fn allocate(size: usize) -> *mut u8 {
    let mut block = Vec::<u8>::new();
    if block.try_reserve_exact(size).is_err() || block.capacity() != size {
        return null_mut();
    }
    let pointer = block.as_mut_ptr();
    std::mem::forget(block);
    pointer
}

pub fn log(level: u32, message: &str) {
    // SAFETY: a valid pointer and length for the call's duration.
    unsafe { proxy_log(level, message.as_ptr(), message.len()) };
}

pub fn log_level() -> Option<u32> {
    let mut level = 0;
    // SAFETY: the host writes one u32 through a valid pointer.
    (unsafe { proxy_get_log_level(&mut level) } == OK).then_some(level)
}

pub fn now_nanos() -> Option<u64> {
    let mut time = 0;
    // SAFETY: the host writes one u64 through a valid pointer.
    (unsafe { proxy_get_current_time_nanoseconds(&mut time) } == OK).then_some(time)
}

pub fn set_tick_period(milliseconds: u32) {
    // SAFETY: no pointers.
    unsafe { proxy_set_tick_period_milliseconds(milliseconds) };
}

/// The plugin configuration's first `size` bytes (`size` as
/// `proxy_on_configure` announced it).
pub fn plugin_configuration(size: usize) -> Option<Vec<u8>> {
    let (mut data, mut len) = (null_mut(), 0);
    // SAFETY: the host writes a pointer and a length through valid pointers.
    let status =
        unsafe { proxy_get_buffer_bytes(PLUGIN_CONFIGURATION, 0, size, &mut data, &mut len) };
    owned(status, data, len)
}

/// The first value of `name`; `None` when absent (status `NotFound`).
pub fn header(map: u32, name: &str) -> Option<Vec<u8>> {
    let (mut data, mut len) = (null_mut(), 0);
    // SAFETY: valid key for the call; the host writes a pointer and length.
    let status =
        unsafe { proxy_get_header_map_value(map, name.as_ptr(), name.len(), &mut data, &mut len) };
    owned(status, data, len)
}

pub fn replace_header(map: u32, name: &str, value: &str) {
    // SAFETY: valid key and value for the call's duration.
    unsafe {
        proxy_replace_header_map_value(map, name.as_ptr(), name.len(), value.as_ptr(), value.len())
    };
}

pub fn add_header(map: u32, name: &str, value: &str) {
    // SAFETY: valid key and value for the call's duration.
    unsafe {
        proxy_add_header_map_value(map, name.as_ptr(), name.len(), value.as_ptr(), value.len())
    };
}

pub fn remove_header(map: u32, name: &str) {
    // SAFETY: a valid key for the call's duration.
    unsafe { proxy_remove_header_map_value(map, name.as_ptr(), name.len()) };
}

/// A property such as `["xds", "route_name"]`. The path goes over as its
/// segments joined by NUL bytes (the spec's `proxy_get_property`).
pub fn property(path: &[&str]) -> Option<Vec<u8>> {
    with_property_path(path, |joined| {
        let (mut data, mut len) = (null_mut(), 0);
        // SAFETY: a valid path for the call; the host writes a pointer and length.
        let status =
            unsafe { proxy_get_property(joined.as_ptr(), joined.len(), &mut data, &mut len) };
        owned(status, data, len)
    })
}

/// Sets a property of the stream (the spec's `proxy_set_property`; the
/// path goes over as for [`property`]).
pub fn set_property(path: &[&str], value: &[u8]) {
    with_property_path(path, |joined| {
        // SAFETY: valid path and value for the call's duration.
        unsafe { proxy_set_property(joined.as_ptr(), joined.len(), value.as_ptr(), value.len()) };
    })
}

pub fn define_counter(name: &str) -> Option<u32> {
    define_metric(COUNTER, name)
}

pub fn define_gauge(name: &str) -> Option<u32> {
    define_metric(GAUGE, name)
}

fn define_metric(metric_type: u32, name: &str) -> Option<u32> {
    let mut id = 0;
    // SAFETY: a valid name for the call; the host writes one u32.
    let status = unsafe { proxy_define_metric(metric_type, name.as_ptr(), name.len(), &mut id) };
    (status == OK).then_some(id)
}

/// Sets a gauge (the spec's `proxy_record_metric`).
pub fn record_metric(id: u32, value: u64) {
    // SAFETY: no pointers.
    unsafe { proxy_record_metric(id, value) };
}

pub fn increment_metric(id: u32, delta: i64) {
    // SAFETY: no pointers.
    unsafe { proxy_increment_metric(id, delta) };
}
