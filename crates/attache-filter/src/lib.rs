//! Attaché's proxy-wasm HTTP filter: enforces each route's timeouts, retries
//! and header changes from the schema-1 document (docs/contract.md).
//!
//! Everything but `proxy` and `abi` is plain Rust behind the
//! [`host::Host`] trait, so the decisions are unit-tested natively. `proxy`
//! (the module's exports) and `abi` (the host calls) are the thin proxy-wasm
//! adapter and exist only in the wasm32 build; `dispatch` is their context
//! table, tested natively. docs/filter.md describes the behaviour for
//! operators.

// Denied, not forbidden: the proxy-wasm adapter (`abi`, `proxy`) allows it
// for itself; nothing else may (ARCHITECTURE.md, "What each crate may do"),
// as in the dynamic module's crate (crates/attache-module).
#![deny(unsafe_code)]

pub mod config;
pub mod control;
pub mod dispatch;
pub mod document;
pub mod envelope;
pub mod error;
pub mod fallback;
pub mod fallback_index;
pub mod host;
pub mod index;
pub mod integral_floats;
pub mod ops;
pub mod pattern;
pub mod plugin;
pub mod request;
pub mod route;
pub mod stream;
pub mod syntax;
pub mod tally;
pub mod validate;

#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
mod abi;
#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
mod proxy;

pub use config::CompiledConfig;
pub use error::{ConfigError, Problem, RefusalClass};
pub use host::{Counter, Gauge, HeaderMap, Host, LogLevel};
pub use plugin::Plugin;
pub use stream::Stream;
pub use tally::Tally;

/// The in-memory host of the native tests, also for the fuzz targets
/// (`fuzz/`, feature `fuzzing`).
#[cfg(any(test, feature = "fuzzing"))]
pub mod testing;
#[cfg(test)]
mod tests;
