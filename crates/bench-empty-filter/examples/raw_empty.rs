//! An empty proxy-wasm HTTP filter without the SDK: it exports the ABI
//! version, `proxy_on_memory_allocate` (the host refuses a module without
//! it) and the two header callbacks, and nothing else. The Rust SDK exports
//! every `proxy_on_*` callback, so Envoy enters the VM for each of them on
//! every request (context create, headers, done, log, delete); the host
//! skips a callback that is not exported (`ContextBase::onRequestHeaders`
//! and friends in proxy-wasm-cpp-host src/context.cc). Set against the SDK's
//! empty filter (src/lib.rs), the difference is what fewer exports save.
//! No configuration is read: `proxy_on_configure` is not exported either,
//! and the host then takes the configuration as accepted.

/// The ABI this module speaks (the host looks for the export by name).
#[no_mangle]
pub extern "C" fn proxy_abi_version_0_2_1() {}

/// Memory the host writes into (header values, configuration): leaked on
/// purpose, the host hands it back to the module's own calls.
#[no_mangle]
pub extern "C" fn proxy_on_memory_allocate(size: usize) -> *mut u8 {
    let mut buffer = Vec::<u8>::with_capacity(size);
    let pointer = buffer.as_mut_ptr();
    std::mem::forget(buffer);
    pointer
}

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
