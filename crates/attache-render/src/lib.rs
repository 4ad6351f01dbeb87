//! Data-plane renderers: pure functions from a resolved Gateway to the JSON
//! values Envoy and Istio read. No I/O here: the CLI reads manifests and
//! writes files; this crate only decides what they say.
//!
//! - [`bootstrap::envoy_bootstrap`]: a static Envoy bootstrap (listeners,
//!   routes in Gateway API precedence, clusters) that loads the Attaché
//!   filter through ECDS from a file.
//! - [`ecds::discovery_response`]: that ECDS file.
//! - [`wasmplugin::wasm_plugin`]: an Istio `WasmPlugin` carrying the document.
//!
//! All three carry the document through [`data_plane`]: compact and without
//! the `sources` provenance the filter never reads.
#![forbid(unsafe_code)]

pub mod backends;
pub mod bootstrap;
pub mod data_plane;
pub mod duration;
pub mod ecds;
pub mod error;
pub mod manifests;
pub mod matching;
pub mod virtual_hosts;
pub mod wasm;
pub mod wasmplugin;

#[cfg(test)]
mod test_fixtures;

pub use error::RenderError;
