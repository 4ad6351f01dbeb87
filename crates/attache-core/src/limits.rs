//! Bounds on the work one Gateway may cost the resolver (docs/semantics.md,
//! "What a policy may not do"): any route author can write routes, so the
//! size of what they expand to must be bounded before it is allocated.

/// Default for [`Limits::max_delegation_depth`].
pub const DEFAULT_MAX_DELEGATION_DEPTH: usize = 8;

/// Default for [`Limits::max_entries`].
pub const DEFAULT_MAX_ENTRIES: usize = 100_000;

/// How far delegation may go and how many entries one Gateway may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Delegation levels below the route attached to the Gateway; a deeper
    /// delegation is skipped with an error naming the chain.
    pub max_delegation_depth: usize,
    /// Entries (listener, route, rule) of one Gateway; more fails the
    /// Gateway with an error naming the chain being expanded.
    pub max_entries: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_delegation_depth: DEFAULT_MAX_DELEGATION_DEPTH,
            max_entries: DEFAULT_MAX_ENTRIES,
        }
    }
}
