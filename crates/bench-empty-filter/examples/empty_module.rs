//! The floor of Envoy's dynamic-module HTTP filter: a native module that
//! exports the same 21 hooks as the Attaché module (crates/attache-module,
//! `exports::HOOKS`), each doing nothing, and makes no callback into Envoy.
//! Set against native route configuration, it is what Envoy charges for
//! running any module filter on a stream (the filter chain entry, the hook
//! calls across the C ABI); set against the Attaché module, what the filter's
//! own work and callbacks cost (bench/findings.md, issue 44).
//!
//! The hooks take Envoy's pointers and never dereference them, so no
//! `unsafe` block is needed; the configuration and the per-stream filter are
//! one static, non-null address (Envoy refuses a null configuration and
//! closes a stream whose filter is null).

use std::ffi::{c_char, c_void};

/// Envoy 1.40's ABI version, as the Attaché module returns it
/// (crates/attache-module/src/abi.rs, `ABI_VERSION`).
const ABI_VERSION: &std::ffi::CStr = c"v0.2.0";

/// What the configuration and every filter point to: Envoy only passes the
/// address back.
static TOKEN: u8 = 0;

/// `Continue` for every header, body and trailer hook.
const CONTINUE: u32 = 0;

fn token() -> *const c_void {
    std::ptr::from_ref(&TOKEN).cast()
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_program_init() -> *const c_char {
    ABI_VERSION.as_ptr()
}

/// Envoy's buffer type by value: a pointer and a length, never read here.
#[repr(C)]
pub struct EnvoyBuffer {
    ptr: *const c_char,
    length: usize,
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_config_new(
    _config_envoy: *mut c_void,
    _name: EnvoyBuffer,
    _config: EnvoyBuffer,
) -> *const c_void {
    token()
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_config_destroy(_config: *const c_void) {}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_new(
    _config: *const c_void,
    _filter_envoy: *mut c_void,
) -> *const c_void {
    token()
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_destroy(_filter: *const c_void) {}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_request_headers(
    _filter_envoy: *mut c_void,
    _filter: *const c_void,
    _end_of_stream: bool,
) -> u32 {
    CONTINUE
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_response_headers(
    _filter_envoy: *mut c_void,
    _filter: *const c_void,
    _end_of_stream: bool,
) -> u32 {
    CONTINUE
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_request_body(
    _filter_envoy: *mut c_void,
    _filter: *const c_void,
    _end_of_stream: bool,
) -> u32 {
    CONTINUE
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_request_trailers(
    _filter_envoy: *mut c_void,
    _filter: *const c_void,
) -> u32 {
    CONTINUE
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_response_body(
    _filter_envoy: *mut c_void,
    _filter: *const c_void,
    _end_of_stream: bool,
) -> u32 {
    CONTINUE
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_response_trailers(
    _filter_envoy: *mut c_void,
    _filter: *const c_void,
) -> u32 {
    CONTINUE
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_stream_complete(
    _filter_envoy: *mut c_void,
    _filter: *const c_void,
) {
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_http_callout_done(
    _filter_envoy: *mut c_void,
    _filter: *const c_void,
    _callout_id: u64,
    _result: u32,
    _headers: *mut c_void,
    _headers_size: usize,
    _body_chunks: *mut c_void,
    _body_chunks_size: usize,
) {
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_http_stream_headers(
    _filter_envoy: *mut c_void,
    _filter: *const c_void,
    _stream_id: u64,
    _headers: *mut c_void,
    _headers_size: usize,
    _end_stream: bool,
) {
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_http_stream_data(
    _filter_envoy: *mut c_void,
    _filter: *const c_void,
    _stream_id: u64,
    _data: *const c_void,
    _data_count: usize,
    _end_stream: bool,
) {
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_http_stream_trailers(
    _filter_envoy: *mut c_void,
    _filter: *const c_void,
    _stream_id: u64,
    _trailers: *mut c_void,
    _trailers_size: usize,
) {
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_http_stream_complete(
    _filter_envoy: *mut c_void,
    _filter: *const c_void,
    _stream_id: u64,
) {
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_http_stream_reset(
    _filter_envoy: *mut c_void,
    _filter: *const c_void,
    _stream_id: u64,
    _reason: u32,
) {
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_scheduled(
    _filter_envoy: *mut c_void,
    _filter: *const c_void,
    _event_id: u64,
) {
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_downstream_above_write_buffer_high_watermark(
    _filter_envoy: *mut c_void,
    _filter: *const c_void,
) {
}

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_downstream_below_write_buffer_low_watermark(
    _filter_envoy: *mut c_void,
    _filter: *const c_void,
) {
}
