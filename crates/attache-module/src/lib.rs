//! Attaché's filter as an Envoy dynamic module: the same core as the
//! proxy-wasm `.wasm` (`attache-filter`: the compiled document and
//! [`attache_filter::Host`]), behind Envoy 1.40's dynamic-module HTTP
//! filter ABI instead of proxy-wasm. `cargo build --release` writes it as
//! `target/release/libattache_module.so`; docs/filter.md ("The dynamic
//! module") and docs/envoy.md say how Envoy loads it.
//!
//! `unsafe` lives in two modules only: `abi` (the callbacks Envoy exports,
//! declared by hand) and `exports` (the hooks Envoy calls, turning its
//! pointers into references), plus the in-process Envoy of the tests
//! (`fake_envoy`). Everything else is safe code over the core.

#![deny(unsafe_code)]

#[allow(unsafe_code)]
mod abi;
pub mod config;
#[allow(unsafe_code)]
pub mod exports;
pub mod filter;
pub mod host;
mod snapshot;

pub use abi::ABI_VERSION;

#[cfg(any(test, feature = "fake-envoy"))]
#[allow(unsafe_code)]
pub mod fake_envoy;

#[cfg(test)]
mod tests;
