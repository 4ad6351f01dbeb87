//! The machinery of the end-to-end tests: real processes (Envoy, the test
//! backend, the `attache` CLI), free ports, readiness, teardown on Drop.

pub mod backend;
pub mod client;
pub mod envoy;
pub mod filter;
pub mod generator;
pub mod grpc;
pub mod load;
pub mod paths;
pub mod probe;
pub mod process;
pub mod scratch;
pub mod stack;
pub mod xds;
