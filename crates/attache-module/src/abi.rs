//! The Envoy callbacks the module calls, declared by hand from Envoy 1.40's
//! `source/extensions/dynamic_modules/abi/abi.h` (ABI version
//! [`ABI_VERSION`]), each wrapped in a safe function that copies what
//! Envoy hands back before the hook returns.
//!
//! Why by hand: `envoy-dynamic-modules-rust-sdk` 0.1.1 on crates.io was
//! written for an earlier ABI (its hooks and callbacks have other names and
//! shapes), and the filter needs eleven callbacks. Every name below is in
//! the dynamic symbol table of the pinned Envoy 1.40 binary (`nm -D`;
//! docs/filter.md, "The dynamic module"), and the `.so` is linked with
//! `-z now`, so an Envoy that lacks one refuses the module at `dlopen`
//! instead of failing on the first request.
//!
//! C enums are `int` on every target Envoy ships (x86_64, aarch64): they
//! go over as `u32`. C `bool` is Rust's `bool`.

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use crate::snapshot::HeaderSnapshot;

/// What `envoy_dynamic_module_on_program_init` returns: Envoy 1.40's
/// `ENVOY_DYNAMIC_MODULES_ABI_VERSION`. Envoy logs "ABI version … matched"
/// when it is its own, and warns (but loads) when it is not.
pub const ABI_VERSION: &std::ffi::CStr = c"v0.2.0";

/// `envoy_dynamic_module_type_envoy_buffer`: bytes Envoy owns, valid until
/// the hook returns or the module writes the map they came from.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct EnvoyBuffer {
    pub ptr: *const u8,
    pub length: usize,
}

impl EnvoyBuffer {
    pub const fn empty() -> Self {
        EnvoyBuffer {
            ptr: null(),
            length: 0,
        }
    }

    /// A copy of the bytes.
    ///
    /// Only for a buffer Envoy just filled (or [`EnvoyBuffer::empty`]).
    pub fn to_vec(self) -> Vec<u8> {
        if self.ptr.is_null() || self.length == 0 {
            return Vec::new();
        }
        // SAFETY: Envoy filled ptr/length with a live buffer of its own,
        // valid for the rest of this hook; we copy it before returning.
        unsafe { std::slice::from_raw_parts(self.ptr, self.length) }.to_vec()
    }

    /// The bytes as a slice, for the hooks' arguments (the filter name and
    /// configuration), valid for the duration of the hook.
    ///
    /// # Safety
    /// `ptr` must point to `length` readable bytes for `'a`.
    pub unsafe fn as_slice<'a>(self) -> &'a [u8] {
        if self.ptr.is_null() || self.length == 0 {
            return &[];
        }
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts(self.ptr, self.length) }
    }
}

/// `envoy_dynamic_module_type_module_buffer`: bytes the module owns, read
/// by Envoy during the call. A null `ptr` means "no value" where the ABI
/// gives that a meaning (`set_header`: remove).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ModuleBuffer {
    pub ptr: *const u8,
    pub length: usize,
}

impl ModuleBuffer {
    pub fn of(bytes: &[u8]) -> Self {
        ModuleBuffer {
            ptr: bytes.as_ptr(),
            length: bytes.len(),
        }
    }

    const NULL: ModuleBuffer = ModuleBuffer {
        ptr: null(),
        length: 0,
    };
}

/// `envoy_dynamic_module_type_envoy_http_header`: one header of Envoy's
/// map, its name and value owned by Envoy until the hook returns or the
/// module writes that map.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct EnvoyHeader {
    key: EnvoyBuffer,
    value: EnvoyBuffer,
}

/// More headers than any map Envoy accepts (its default limit is 100, the
/// configurable one 10,000): a larger count is not believed, and the
/// caller asks header by header instead.
const MAX_HEADERS: usize = 16_384;

/// `envoy_dynamic_module_type_http_header_type`.
pub const REQUEST_HEADER: u32 = 0;
pub const RESPONSE_HEADER: u32 = 2;

/// `envoy_dynamic_module_type_attribute_id`: positions in the enum.
const ATTRIBUTE_DESTINATION_PORT: u32 = 27;
const ATTRIBUTE_XDS_ROUTE_NAME: u32 = 61;

/// `envoy_dynamic_module_type_metrics_result_Success`.
const METRICS_SUCCESS: u32 = 0;

/// Envoy's pointer to one HTTP filter configuration
/// (`DynamicModuleHttpFilterConfig`). Envoy may hand it to any thread's
/// callbacks (`*_config_increment_counter` say so), so it is Send and Sync.
#[derive(Debug, Clone, Copy)]
pub struct ConfigPtr(pub *mut c_void);

// SAFETY: an opaque handle Envoy keeps alive until it calls
// `on_http_filter_config_destroy`; the config-level metric callbacks are
// documented as callable outside the request lifecycle.
unsafe impl Send for ConfigPtr {}
// SAFETY: as above; the module never dereferences it.
unsafe impl Sync for ConfigPtr {}

/// Envoy's pointer to one stream's filter (`DynamicModuleHttpFilter`),
/// used only on the worker thread that runs the stream.
#[derive(Debug, Clone, Copy)]
pub struct FilterPtr(pub *mut c_void);

extern "C" {
    fn envoy_dynamic_module_callback_log(level: u32, message: ModuleBuffer);
    fn envoy_dynamic_module_callback_log_enabled(level: u32) -> bool;
    fn envoy_dynamic_module_callback_http_get_header(
        filter: *mut c_void,
        header_type: u32,
        key: ModuleBuffer,
        result: *mut EnvoyBuffer,
        index: usize,
        optional_size: *mut usize,
    ) -> bool;
    fn envoy_dynamic_module_callback_http_get_headers_size(
        filter: *mut c_void,
        header_type: u32,
    ) -> usize;
    fn envoy_dynamic_module_callback_http_get_headers(
        filter: *mut c_void,
        header_type: u32,
        result_headers: *mut EnvoyHeader,
    ) -> bool;
    fn envoy_dynamic_module_callback_http_set_header(
        filter: *mut c_void,
        header_type: u32,
        key: ModuleBuffer,
        value: ModuleBuffer,
    ) -> bool;
    fn envoy_dynamic_module_callback_http_add_header(
        filter: *mut c_void,
        header_type: u32,
        key: ModuleBuffer,
        value: ModuleBuffer,
    ) -> bool;
    fn envoy_dynamic_module_callback_http_filter_get_attribute_string(
        filter: *mut c_void,
        attribute: u32,
        result: *mut EnvoyBuffer,
    ) -> bool;
    fn envoy_dynamic_module_callback_http_filter_get_attribute_int(
        filter: *mut c_void,
        attribute: u32,
        result: *mut u64,
    ) -> bool;
    fn envoy_dynamic_module_callback_http_set_filter_state_bytes(
        filter: *mut c_void,
        key: ModuleBuffer,
        value: ModuleBuffer,
    ) -> bool;
    fn envoy_dynamic_module_callback_http_get_filter_state_bytes(
        filter: *mut c_void,
        key: ModuleBuffer,
        result: *mut EnvoyBuffer,
    ) -> bool;
    fn envoy_dynamic_module_callback_http_filter_config_define_counter(
        config: *mut c_void,
        name: ModuleBuffer,
        label_names: *mut ModuleBuffer,
        label_names_length: usize,
        id: *mut usize,
    ) -> u32;
    fn envoy_dynamic_module_callback_http_filter_config_define_gauge(
        config: *mut c_void,
        name: ModuleBuffer,
        label_names: *mut ModuleBuffer,
        label_names_length: usize,
        id: *mut usize,
    ) -> u32;
    fn envoy_dynamic_module_callback_http_filter_config_set_gauge(
        config: *mut c_void,
        id: usize,
        label_values: *mut ModuleBuffer,
        label_values_length: usize,
        value: u64,
    ) -> u32;
    fn envoy_dynamic_module_callback_http_filter_increment_counter(
        filter: *mut c_void,
        id: usize,
        label_values: *mut ModuleBuffer,
        label_values_length: usize,
        value: u64,
    ) -> u32;
    fn envoy_dynamic_module_callback_http_filter_config_increment_counter(
        config: *mut c_void,
        id: usize,
        label_values: *mut ModuleBuffer,
        label_values_length: usize,
        value: u64,
    ) -> u32;
}

pub fn log(level: u32, message: &str) {
    // SAFETY: a valid buffer for the call's duration.
    unsafe { envoy_dynamic_module_callback_log(level, ModuleBuffer::of(message.as_bytes())) };
}

pub fn log_enabled(level: u32) -> bool {
    // SAFETY: no pointers.
    unsafe { envoy_dynamic_module_callback_log_enabled(level) }
}

/// The first value of `name`, copied; `None` when the map has none.
pub fn header(filter: FilterPtr, map: u32, name: &str) -> Option<Vec<u8>> {
    let mut value = EnvoyBuffer::empty();
    let mut count = 0usize;
    // SAFETY: valid key for the call; Envoy writes a buffer and a count
    // through valid pointers.
    let ok = unsafe {
        envoy_dynamic_module_callback_http_get_header(
            filter.0,
            map,
            ModuleBuffer::of(name.as_bytes()),
            &mut value,
            0,
            &mut count,
        )
    };
    (ok && count > 0).then(|| value.to_vec())
}

/// Every header of the map, copied: two calls for the whole map, where
/// [`header`] is one call per name. `None` when Envoy has no such map or
/// gives a count no map can have.
pub fn headers(filter: FilterPtr, map: u32) -> Option<HeaderSnapshot> {
    // SAFETY: a live filter pointer for the hook (the caller's), no other
    // argument is a pointer.
    let count = unsafe { envoy_dynamic_module_callback_http_get_headers_size(filter.0, map) };
    if count > MAX_HEADERS {
        return None;
    }
    let mut raw = vec![
        EnvoyHeader {
            key: EnvoyBuffer::empty(),
            value: EnvoyBuffer::empty(),
        };
        count
    ];
    // SAFETY: `raw` holds `count` entries, the size Envoy just gave
    // (abi.h's precondition); nothing writes the map in between.
    let ok = count == 0
        || unsafe {
            envoy_dynamic_module_callback_http_get_headers(filter.0, map, raw.as_mut_ptr())
        };
    if !ok {
        return None;
    }
    let bytes = raw.iter().map(|h| h.key.length + h.value.length).sum();
    let mut snapshot = HeaderSnapshot::with_capacity(count, bytes);
    for h in raw {
        // SAFETY: Envoy filled each entry with live buffers of its map,
        // valid until the hook returns or the map is written: copied here.
        let (name, value) = unsafe { (h.key.as_slice(), h.value.as_slice()) };
        snapshot.add(name, value);
    }
    Some(snapshot)
}

/// Replaces every value of `name`; `None` removes the header (a null value
/// buffer, as abi.h defines it).
pub fn set_header(filter: FilterPtr, map: u32, name: &str, value: Option<&str>) {
    let value = value.map_or(ModuleBuffer::NULL, |v| ModuleBuffer::of(v.as_bytes()));
    // SAFETY: valid key and value (or the null value abi.h allows).
    unsafe {
        envoy_dynamic_module_callback_http_set_header(
            filter.0,
            map,
            ModuleBuffer::of(name.as_bytes()),
            value,
        )
    };
}

pub fn add_header(filter: FilterPtr, map: u32, name: &str, value: &str) {
    // SAFETY: valid key and value for the call's duration.
    unsafe {
        envoy_dynamic_module_callback_http_add_header(
            filter.0,
            map,
            ModuleBuffer::of(name.as_bytes()),
            ModuleBuffer::of(value.as_bytes()),
        )
    };
}

/// `xds.route_name`: the name of the route Envoy selected.
pub fn route_name(filter: FilterPtr) -> Option<Vec<u8>> {
    let mut value = EnvoyBuffer::empty();
    // SAFETY: Envoy writes a buffer through a valid pointer.
    let ok = unsafe {
        envoy_dynamic_module_callback_http_filter_get_attribute_string(
            filter.0,
            ATTRIBUTE_XDS_ROUTE_NAME,
            &mut value,
        )
    };
    ok.then(|| value.to_vec())
}

/// `destination.port`.
pub fn destination_port(filter: FilterPtr) -> Option<u64> {
    let mut port = 0u64;
    // SAFETY: Envoy writes one u64 through a valid pointer.
    let ok = unsafe {
        envoy_dynamic_module_callback_http_filter_get_attribute_int(
            filter.0,
            ATTRIBUTE_DESTINATION_PORT,
            &mut port,
        )
    };
    ok.then_some(port)
}

pub fn filter_state(filter: FilterPtr, key: &str) -> Option<Vec<u8>> {
    let mut value = EnvoyBuffer::empty();
    // SAFETY: valid key; Envoy writes a buffer through a valid pointer.
    let ok = unsafe {
        envoy_dynamic_module_callback_http_get_filter_state_bytes(
            filter.0,
            ModuleBuffer::of(key.as_bytes()),
            &mut value,
        )
    };
    ok.then(|| value.to_vec())
}

pub fn set_filter_state(filter: FilterPtr, key: &str, value: &[u8]) {
    // SAFETY: valid key and value for the call's duration.
    unsafe {
        envoy_dynamic_module_callback_http_set_filter_state_bytes(
            filter.0,
            ModuleBuffer::of(key.as_bytes()),
            ModuleBuffer::of(value),
        )
    };
}

/// abi.h's `*_config_define_counter` and `*_config_define_gauge`: the same
/// shape, one for each kind of metric.
type DefineMetric =
    unsafe extern "C" fn(*mut c_void, ModuleBuffer, *mut ModuleBuffer, usize, *mut usize) -> u32;

/// A metric without labels in the configuration's stats scope; `None`
/// where Envoy refused it (stats creation is frozen after `config_new`).
fn define_metric(define: DefineMetric, config: ConfigPtr, name: &str) -> Option<usize> {
    let mut id = 0usize;
    // SAFETY: one of Envoy's define callbacks (the caller's); a valid name,
    // no labels; Envoy writes the id through a valid pointer.
    let result = unsafe {
        define(
            config.0,
            ModuleBuffer::of(name.as_bytes()),
            null_mut(),
            0,
            &mut id,
        )
    };
    (result == METRICS_SUCCESS).then_some(id)
}

/// A counter without labels in the configuration's stats scope.
pub fn define_counter(config: ConfigPtr, name: &str) -> Option<usize> {
    define_metric(
        envoy_dynamic_module_callback_http_filter_config_define_counter,
        config,
        name,
    )
}

pub fn increment_counter(filter: FilterPtr, id: usize, delta: u64) {
    // SAFETY: no labels, as the counter was defined.
    unsafe {
        envoy_dynamic_module_callback_http_filter_increment_counter(
            filter.0,
            id,
            null_mut(),
            0,
            delta,
        )
    };
}

pub fn increment_config_counter(config: ConfigPtr, id: usize, delta: u64) {
    // SAFETY: no labels, as the counter was defined.
    unsafe {
        envoy_dynamic_module_callback_http_filter_config_increment_counter(
            config.0,
            id,
            null_mut(),
            0,
            delta,
        )
    };
}

/// A gauge without labels in the configuration's stats scope.
pub fn define_gauge(config: ConfigPtr, name: &str) -> Option<usize> {
    define_metric(
        envoy_dynamic_module_callback_http_filter_config_define_gauge,
        config,
        name,
    )
}

pub fn set_config_gauge(config: ConfigPtr, id: usize, value: u64) {
    // SAFETY: no labels, as the gauge was defined.
    unsafe {
        envoy_dynamic_module_callback_http_filter_config_set_gauge(
            config.0,
            id,
            null_mut(),
            0,
            value,
        )
    };
}
