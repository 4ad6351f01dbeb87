//! Pure resolver (see crate description). No I/O, no proxy-wasm.
#![forbid(unsafe_code)]
pub use attache_contract as contract;
