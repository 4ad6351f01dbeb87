//! `attache controller`: the generator run in the cluster
//! (docs/controller.md, docs/semantics.md section 11).
//!
//! Shaped like kube-rs's controller-rs: the decisions are pure functions of
//! a snapshot of objects ([`reconcile`], [`status`]), tested table-driven;
//! [`kube`](crate::kube) is the thin adapter that watches, applies and
//! writes status. Objects from the API are read by the same reader as files
//! (`attache_input`), resolved by the same core.

// Denied, not forbidden: `kube::memory` calls glibc's malloc_trim, the one
// `unsafe` here (ARCHITECTURE.md, "What each crate may do").
#![deny(unsafe_code)]

pub mod content_hash;
pub mod deploy;
pub mod image;
pub mod kinds;
pub mod kube;
pub mod plugin_kind;
pub mod prune;
pub mod rbac;
pub mod reconcile;
pub mod scope;
pub mod served;
pub mod serving;
pub mod snapshot;
pub mod status;
pub mod warnings;
