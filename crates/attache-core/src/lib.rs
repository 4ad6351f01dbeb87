//! Pure resolver: model, attachment, the fold, validation, status. No I/O and
//! no proxy-wasm; the CLI and the filter are thin shells around it.
#![forbid(unsafe_code)]

pub use attache_contract as contract;

pub mod source;
pub mod topology;
