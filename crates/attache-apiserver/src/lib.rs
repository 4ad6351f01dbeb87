//! A Kubernetes API server stand-in for tests, "the closest thing to
//! envtest possible" where no real API server can run. It serves, over
//! plain HTTP on 127.0.0.1, what kube-rs and kubectl need, following the
//! API conventions
//! (community/contributors/devel/sig-architecture/api-conventions.md) and
//! kubernetes.io/docs/reference/using-api/api-concepts/:
//!
//! - discovery (`/api`, `/apis`, `/apis/{group}/{version}`) of the kinds it
//!   serves; a kind it does not serve answers 404, as a missing CRD does;
//! - get, list (`limit`/`continue`, label and field selectors, a collection
//!   resourceVersion), watch (from a resourceVersion, bookmarks,
//!   `sendInitialEvents`, `timeoutSeconds`, 410 Gone after compaction),
//!   create, update, delete (finalizers honoured);
//! - server-side apply with `managedFields` and field-manager conflicts
//!   (kubernetes.io/docs/reference/using-api/server-side-apply/), merge
//!   patch, the `status` subresource, optimistic concurrency (409);
//! - structural-schema pruning on every write ([`prune`]);
//! - a request log with counters by verb, resource and subresource
//!   ([`RequestLog`]), and fault injection ([`Faults`], [`Handle::restart`]).
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use attache_apiserver::{Config, StandIn, Verb};
//! let server = StandIn::start(Config::default().with_gateway_api()).await?;
//! server.write_kubeconfig(std::path::Path::new("kubeconfig.yaml"))?;
//! // ... run a client against server.url() ...
//! let status_patches = server.log().count(Verb::Patch, "routepolicies", Some("status"));
//! # Ok(()) }
//! ```
//!
//! docs/apiserver-standin.md says what it does not do.

#![forbid(unsafe_code)]

mod apply;
mod error;
mod faults;
mod fields;
mod handle;
mod kinds;
mod log;
mod manifests;
mod prune;
mod selector;
mod server;
mod state;
mod store;
mod write;

pub use error::{ApiError, Cause, LoadError, StartError};
pub use faults::{Faults, Scope};
pub use handle::{Config, Handle, StandIn};
pub use kinds::{builtin, gateway_api, KindSpec, Version};
pub use log::{RequestLog, RequestRecord, Verb};
pub use manifests::{parse as parse_manifests, read as read_manifests, SEED_MANAGER};
pub use prune::{prune, prune_value};
