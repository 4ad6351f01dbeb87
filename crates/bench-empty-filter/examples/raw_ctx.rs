//! An empty proxy-wasm HTTP filter without the SDK that exports the same
//! per-request callbacks as the Attaché filter (crates/attache-filter/src/
//! proxy.rs): context create and delete besides the two header callbacks,
//! each doing nothing. Against it, the filter's figure is what its own
//! work costs (host calls and code), with the VM entries paid by both; set
//! against `raw_empty.rs`, the difference is the two entries the filter
//! needs to keep per-stream state (which root context, which route).

#[no_mangle]
pub extern "C" fn proxy_abi_version_0_2_1() {}

/// Memory the host writes into: leaked on purpose, as in `raw_empty.rs`
/// (this filter reads nothing, so the host never asks).
#[no_mangle]
pub extern "C" fn proxy_on_memory_allocate(size: usize) -> *mut u8 {
    let mut buffer = Vec::<u8>::with_capacity(size);
    let pointer = buffer.as_mut_ptr();
    std::mem::forget(buffer);
    pointer
}

#[no_mangle]
pub extern "C" fn proxy_on_context_create(_context_id: u32, _root_context_id: u32) {}

/// `Continue` (0) for every request.
#[no_mangle]
pub extern "C" fn proxy_on_request_headers(_context_id: u32, _headers: u32, _end: u32) -> u32 {
    0
}

/// `Continue` (0) for every response.
#[no_mangle]
pub extern "C" fn proxy_on_response_headers(_context_id: u32, _headers: u32, _end: u32) -> u32 {
    0
}

#[no_mangle]
pub extern "C" fn proxy_on_delete(_context_id: u32) {}
