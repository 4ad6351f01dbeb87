//! End-to-end tests: the generator's real output in a real Envoy running the
//! real filter .wasm, traffic from a real client to the test backend.
//!
//! Compiled only with `--features e2e` (scripts/test.sh turns it on after
//! scripts/setup.sh has installed Envoy and built the .wasm). Each test
//! starts its own backend and Envoy on free ports and kills them on Drop.
//! docs/testing.md says what each test proves.

#![cfg(feature = "e2e")]
// Everything here is test code, helpers included: a failed expectation is a
// test failure with its message, which is what these lints exist to prevent
// in shipped code (clippy.toml exempts only #[test] functions themselves).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod harness;

mod control_headers;
mod edge_values;
mod example;
mod fallback;
mod grpc;
mod headers;
mod hostile;
mod hot_reload;
mod https;
mod internal_clients;
mod istio;
mod listener_sets;
mod matching;
mod module_so;
mod precedence;
mod retries;
mod route_cache;
mod served_replicas;
mod served_stats;
mod steering;
mod strategies;
mod timeouts;
mod two_instances;
mod validate;
mod wasm_exports;
mod xds_reload;
