//! `attache diff --cluster -f CHANGE`: OLD is the live cluster, NEW the
//! cluster with CHANGE laid over it (docs/semantics.md section 13,
//! `attache_core::overlay`). The cluster is read once for both sides.

use std::path::PathBuf;

use attache_core::overlay::overlay;

use crate::cmd::source::{read_cluster, ClusterArgs};
use crate::cmd::{shown_paths, CliError, LimitArgs};

/// OLD and NEW, parsed. The overlay's notes (a deletion of an object the
/// cluster lacks) are printed: a change that does nothing must say so.
pub fn load(
    cluster: &ClusterArgs,
    change: &[PathBuf],
    limits: &LimitArgs,
) -> Result<(attache_core::Inputs, attache_core::Inputs), CliError> {
    let changed = limits.read(change, Default::default())?;
    if changed.is_empty() {
        return Err(CliError::EmptyInput(shown_paths(change)));
    }
    let (live, _) = read_cluster(cluster, limits)?;
    let old = limits.parse(&live);
    let laid = overlay(live, changed);
    for note in &laid.notes {
        eprintln!("note: {note}");
    }
    Ok((old, limits.parse(&laid.docs)))
}
