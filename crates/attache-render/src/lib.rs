//! Data-plane renderers: pure functions from a resolved Gateway to the JSON
//! values Envoy and Istio read. No I/O here: the CLI reads manifests and
//! writes files; this crate only decides what they say.
//!
//! - [`bootstrap::envoy_bootstrap`]: a static Envoy bootstrap (listeners,
//!   routes in Gateway API precedence, clusters) that loads the Attaché
//!   filter through ECDS from a file.
//! - [`ecds::discovery_response`]: that ECDS file.
//! - [`bootstrap::dynamic_bootstrap`] and [`xds`]: the file-based xDS
//!   layout, where listeners, routes and clusters come from watched files
//!   too, and [`xds::transition`], the order in which to rewrite them.
//! - [`wasmplugin::wasm_plugin`]: an Istio `WasmPlugin` carrying the document.
//! - [`envoyextensionpolicy::envoy_extension_policy`] and
//!   [`envoyfilter::envoy_filter`]: the dynamic module on Envoy Gateway and
//!   on Istio.
//! - [`crds::crds`]: the policy CRDs, and [`oci`]: the filter as an OCI image.
//!
//! All of them carry the document through [`plugin_config`]: compact and without
//! the `sources` provenance the filter never reads.
#![forbid(unsafe_code)]

pub mod backends;
pub mod bootstrap;
pub mod chains;
pub mod crds;
pub mod duration;
pub mod ecds;
pub mod envoyextensionpolicy;
pub mod envoyfilter;
pub mod error;
pub mod filter;
pub mod listener;
pub mod manifests;
pub mod matching;
pub mod module;
pub mod oci;
pub mod plugin_config;
pub mod resources;
pub mod sds;
pub mod secrets;
pub mod tls;
pub mod trafficextension;
pub mod version;
pub mod virtual_hosts;
pub mod wasm;
pub mod wasmplugin;
pub mod xds;

#[cfg(test)]
mod test_fixtures;
#[cfg(test)]
mod test_gateway;

pub use error::RenderError;
