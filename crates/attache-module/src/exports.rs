//! The event hooks Envoy 1.40 resolves in the module (abi.h's
//! `envoy_dynamic_module_on_*`), the `.so`'s whole export list
//! (tests/module_exports.rs checks it with `nm -D --defined-only`).
//!
//! Envoy refuses a module that lacks any hook it resolves when it loads an
//! HTTP filter configuration (`newDynamicModuleHttpFilterConfig`): besides
//! the ones the filter needs (program init, configuration new and destroy,
//! filter new and destroy, request and response headers) that is the body,
//! trailers, stream-complete, callout, scheduler and watermark hooks, which
//! here do nothing and continue. Optional hooks (per-route configuration,
//! local reply, configuration-level callouts and scheduler) are not
//! exported, so Envoy never calls them.
//!
//! **No panic crosses the ABI.** Every hook runs its body under
//! [`guarded`], which catches an unwinding panic, logs it at error and
//! returns what lets the request through untouched, as the `.wasm` does for
//! a request it cannot handle. The module is built with `panic = "unwind"`
//! (the workspace's release profile; Cargo.toml says why the `.wasm` keeps
//! aborting): under `abort`, a panic would end Envoy.

use std::ffi::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::null;

use crate::abi::{self, ConfigPtr, EnvoyBuffer, FilterPtr, ABI_VERSION};
use crate::config::ModuleConfig;
use crate::filter::ModuleFilter;
use crate::host::CounterIds;

/// Every `*_status_Continue` of abi.h is 0.
const CONTINUE: u32 = 0;

/// Runs `body`, or on a panic logs it and returns `fallback()`.
pub(crate) fn guarded<R>(hook: &str, fallback: impl FnOnce() -> R, body: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(result) => result,
        Err(_) => {
            // Logging is a plain callback and cannot panic itself on any
            // input: the message is ours.
            let _ = catch_unwind(|| {
                abi::log(
                    4,
                    &format!(
                        "attache: internal error in {hook}; the stream passes through untouched"
                    ),
                )
            });
            fallback()
        }
    }
}

/// The ABI version Envoy compares with its own at `dlopen`.
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_program_init() -> *const c_char {
    ABI_VERSION.as_ptr()
}

/// A new configuration (at start, or an ECDS update): the document's bytes
/// as `filter_config` carries them. Null refuses it.
///
/// # Safety
/// `config` points to `config.length` bytes for the call (Envoy's contract).
#[no_mangle]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_config_new(
    config_envoy: *mut c_void,
    _name: EnvoyBuffer,
    config: EnvoyBuffer,
) -> *const c_void {
    guarded("on_http_filter_config_new", null, || {
        // SAFETY: the caller's contract; copied before returning.
        let bytes = unsafe { config.as_slice() }.to_vec();
        let envoy = ConfigPtr(config_envoy);
        match ModuleConfig::load(Some(envoy), CounterIds::define(envoy), bytes) {
            Some(loaded) => Box::into_raw(Box::new(loaded)).cast_const().cast(),
            None => null(),
        }
    })
}

/// # Safety
/// `config` is a pointer `config_new` returned, destroyed once.
#[no_mangle]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_config_destroy(config: *const c_void) {
    // SAFETY: made by Box::into_raw in config_new; Envoy destroys it once,
    // after every filter made from it.
    unsafe { destroy::<ModuleConfig>("on_http_filter_config_destroy", config) }
}

/// Drops what `Box::into_raw` made for Envoy's handle, under [`guarded`];
/// a null handle is nothing to drop.
///
/// # Safety
/// `handle` is null or a `Box<T>` turned raw, not used after this call.
unsafe fn destroy<T>(hook: &str, handle: *const c_void) {
    guarded(
        hook,
        || (),
        || {
            if !handle.is_null() {
                // SAFETY: the caller's contract.
                drop(unsafe { Box::from_raw(handle.cast::<T>().cast_mut()) });
            }
        },
    )
}

/// A stream's filter. Never null (Envoy would close the stream): if making
/// it fails, a filter without a document passes the stream through.
///
/// # Safety
/// `config` is a live pointer `config_new` returned.
#[no_mangle]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_new(
    config: *const c_void,
    _filter_envoy: *mut c_void,
) -> *const c_void {
    let filter = guarded("on_http_filter_new", ModuleFilter::default, || {
        // SAFETY: Envoy keeps the configuration alive while it has filters.
        match unsafe { config.cast::<ModuleConfig>().as_ref() } {
            Some(config) => ModuleFilter::new(config),
            None => ModuleFilter::default(),
        }
    });
    Box::into_raw(Box::new(filter)).cast_const().cast()
}

/// # Safety
/// `filter` is a live pointer `filter_new` returned, used on one thread.
unsafe fn with_filter(filter: *const c_void, hook: &str, body: impl FnOnce(&mut ModuleFilter)) {
    // SAFETY: the caller's contract; Envoy runs a stream's hooks one at a
    // time on its worker thread, so this is the only reference.
    if let Some(filter) = unsafe { filter.cast::<ModuleFilter>().cast_mut().as_mut() } {
        guarded(hook, || (), || body(filter));
    }
}

/// # Safety
/// See [`with_filter`].
#[no_mangle]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_request_headers(
    filter_envoy: *mut c_void,
    filter: *const c_void,
    _end_of_stream: bool,
) -> u32 {
    // SAFETY: forwarded contract.
    unsafe {
        with_filter(filter, "on_http_filter_request_headers", |f| {
            f.request_headers(FilterPtr(filter_envoy))
        })
    };
    CONTINUE
}

/// # Safety
/// See [`with_filter`].
#[no_mangle]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_response_headers(
    filter_envoy: *mut c_void,
    filter: *const c_void,
    _end_of_stream: bool,
) -> u32 {
    // SAFETY: forwarded contract.
    unsafe {
        with_filter(filter, "on_http_filter_response_headers", |f| {
            f.response_headers(FilterPtr(filter_envoy))
        })
    };
    CONTINUE
}

/// # Safety
/// `filter` is a pointer `filter_new` returned, destroyed once.
#[no_mangle]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_destroy(filter: *const c_void) {
    // SAFETY: made by Box::into_raw in filter_new; Envoy destroys it once.
    unsafe { destroy::<ModuleFilter>("on_http_filter_destroy", filter) }
}

// Hooks Envoy requires but the filter has no use for: continue, do nothing.

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

/// The filter starts no callout; Envoy calls this only for one it started.
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

/// The filter schedules nothing.
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_scheduled(
    _filter_envoy: *mut c_void,
    _filter: *const c_void,
    _event_id: u64,
) {
}

/// Called only for a terminal filter, which this is not.
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

/// The hooks' names, for the export check (tests/module_exports.rs).
pub const HOOKS: [&str; 21] = [
    "envoy_dynamic_module_on_program_init",
    "envoy_dynamic_module_on_http_filter_config_new",
    "envoy_dynamic_module_on_http_filter_config_destroy",
    "envoy_dynamic_module_on_http_filter_new",
    "envoy_dynamic_module_on_http_filter_request_headers",
    "envoy_dynamic_module_on_http_filter_response_headers",
    "envoy_dynamic_module_on_http_filter_destroy",
    "envoy_dynamic_module_on_http_filter_request_body",
    "envoy_dynamic_module_on_http_filter_request_trailers",
    "envoy_dynamic_module_on_http_filter_response_body",
    "envoy_dynamic_module_on_http_filter_response_trailers",
    "envoy_dynamic_module_on_http_filter_stream_complete",
    "envoy_dynamic_module_on_http_filter_http_callout_done",
    "envoy_dynamic_module_on_http_filter_http_stream_headers",
    "envoy_dynamic_module_on_http_filter_http_stream_data",
    "envoy_dynamic_module_on_http_filter_http_stream_trailers",
    "envoy_dynamic_module_on_http_filter_http_stream_complete",
    "envoy_dynamic_module_on_http_filter_http_stream_reset",
    "envoy_dynamic_module_on_http_filter_scheduled",
    "envoy_dynamic_module_on_http_filter_downstream_above_write_buffer_high_watermark",
    "envoy_dynamic_module_on_http_filter_downstream_below_write_buffer_low_watermark",
];
