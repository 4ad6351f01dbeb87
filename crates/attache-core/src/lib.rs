//! Pure resolver: model, attachment, the fold, validation, status. No I/O and
//! no proxy-wasm; the CLI and the filter are thin shells around it.
//!
//! ```text
//! let inputs = attache_core::parse(&docs);            // never fails; see inputs.diagnostics
//! let gw = attache_core::select_gateway(&inputs, None)?;
//! let resolved = attache_core::resolve(&inputs, &gw)?; // resolved.resolution.document is schema-1
//! let why = attache_core::explain_route(&inputs, &gw, &route)?; // per-field provenance and losers
//! let status = attache_core::policy_status(&inputs);   // GEP-713 conditions per policy
//! ```
#![forbid(unsafe_code)]

pub use attache_contract as contract;

pub(crate) mod attach;
pub mod authored_form;
pub mod diagnostic;
pub mod diff;
pub mod dns_name;
pub(crate) mod duration;
mod entry;
mod entry_memo;
pub(crate) mod error;
pub mod explain;
pub mod field;
pub(crate) mod fold;
pub(crate) mod gateway_pass;
pub(crate) mod hostname;
pub mod limits;
pub(crate) mod matches;
pub mod model;
pub mod near_miss;
pub mod overlay;
pub(crate) mod parse;
pub mod re2_program;
pub mod reach;
pub mod resolve;
pub mod retries;
pub mod route_parents;
pub mod schema;
pub(crate) mod settings;
pub mod source;
pub mod status;
pub(crate) mod steering;
pub mod supplier;
pub mod topology;
pub mod who_applies;

pub use diagnostic::{Diagnostic, Severity};
pub use explain::Explanation;
pub use limits::Limits;
pub use model::Inputs;
pub use parse::{assemble, limit_ancestors_with_foreign, parse, parse_each, Pieces};
pub use resolve::{
    explain_route, resolve, resolve_for, resolve_for_data_plane, select_gateway, EntryMemo,
    ResolveError, Resolved,
};
pub use status::{policy_status, StatusReport};
pub use who_applies::DataPlane;
