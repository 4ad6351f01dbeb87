//! Why a Gateway could not be resolved. Attach (the entry budget), the
//! preparation of a Gateway and resolve all return it, so it sits below all
//! of them.

use crate::topology::ObjectKey;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("the input has no Gateway")]
    NoGateway,
    #[error("Gateway {wanted} is not in the input; Gateways found: {available}")]
    GatewayNotFound {
        wanted: ObjectKey,
        available: String,
    },
    #[error("the input has {count} Gateways, so one must be chosen: {available}")]
    GatewayRequired { count: usize, available: String },
    #[error("Gateway {gateway} would have more than {limit} entries (stopped while expanding {chain}); nothing is written for it\n  hint: look for routes that delegate to the same child from many rules, or raise --max-entries")]
    TooManyEntries {
        gateway: ObjectKey,
        limit: usize,
        chain: String,
    },
}

/// Why a pattern does not parse: regex-syntax's own message, its last line
/// (the line that says what is wrong).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct RegexSyntaxError {
    pub message: String,
}
