//! Why a configuration was refused. Every variant names where in the JSON
//! document the problem is, so one log line is enough to fix it.

use attache_contract::envelope::EnvelopeError;
use attache_contract::safety::{self, NameRefusal, ValueRefusal};
use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("configuration is empty: expected a data-plane JSON document (schemaVersion 2; `attache render ecds` writes one)")]
    Empty,
    #[error("configuration is not JSON (line {line}, column {column}): {reason}")]
    NotJson {
        line: usize,
        column: usize,
        reason: String,
    },
    #[error("{path}: {reason}")]
    Shape { path: String, reason: String },
    #[error("{path}: {problem}")]
    Invalid { path: String, problem: Problem },
}

impl ConfigError {
    pub fn invalid(path: impl Into<String>, problem: Problem) -> Self {
        ConfigError::Invalid {
            path: path.into(),
            problem,
        }
    }

    /// What kind of refusal this is, as the filter counts it
    /// (`attache.configs.rejected.<class>`, docs/filter.md): the
    /// controller tells a proxy that refused a document apart from one
    /// that lags, and names the class in the policy's status.
    pub fn class(&self) -> RefusalClass {
        match self {
            ConfigError::Empty | ConfigError::NotJson { .. } => RefusalClass::Syntax,
            ConfigError::Shape { .. } => RefusalClass::Schema,
            ConfigError::Invalid { problem, .. } => match problem {
                Problem::SchemaVersion(_) | Problem::ResolvedSchema => RefusalClass::Schema,
                Problem::Envelope(_) | Problem::Table(_) => RefusalClass::Encoding,
                _ => RefusalClass::Invalid,
            },
        }
    }

    /// The JSON path the error points at (`$` for the whole document).
    pub fn path(&self) -> &str {
        match self {
            ConfigError::Empty | ConfigError::NotJson { .. } => "$",
            ConfigError::Shape { path, .. } | ConfigError::Invalid { path, .. } => path,
        }
    }
}

/// The classes of [`ConfigError::class`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalClass {
    /// Not a document at all: empty, or not JSON.
    Syntax,
    /// A document of another shape or schema version (a generator newer
    /// or older than the filter).
    Schema,
    /// The compressed envelope or the table encoding cannot be read.
    Encoding,
    /// A value the filter refuses to enforce (a header, a regex, a bound).
    Invalid,
}

/// A value that parses but cannot be enforced.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum Problem {
    #[error("schemaVersion {0} is not supported: this filter reads the data-plane schemaVersion 2 as JSON, and schema 3 as its binary table (`attache render ecds` writes either)")]
    SchemaVersion(u32),
    /// Schema 1 is what `attache resolve` writes for people and tools; the
    /// filter reads only its data-plane encoding.
    #[error("schemaVersion 1 (`attache resolve`'s document) is not read by the filter: hand it the data-plane schemaVersion 2 document that `attache render ecds` (or `attache watch`) writes from the same policies")]
    ResolvedSchema,
    #[error("status code {0} cannot be retried: expected 400-599")]
    StatusCode(u16),
    #[error("{0:?} is not a valid HTTP header name: expected letters, digits and !#$%&'*+-.^_`|~")]
    HeaderName(String),
    #[error("{name:?} {}; router control is only through the typed timeouts and retry", .why.reason())]
    RefusedHeaderName { name: String, why: NameRefusal },
    #[error("header value {}", .0.reason())]
    HeaderValue(ValueRefusal),
    #[error("{0} header operations, over the limit of {max}", max = safety::MAX_HEADER_OPERATIONS)]
    TooManyHeaderOperations(usize),
    #[error("{0} retry attempts, over the limit of {max}", max = safety::MAX_RETRY_ATTEMPTS)]
    RetryAttempts(u32),
    #[error("{0:?} is not a valid HTTP method: expected a token such as GET")]
    Method(String),
    #[error("{0:?} is not a valid retry trigger: expected an Envoy retry_on name such as 5xx")]
    RetryTrigger(String),
    #[error("{0:?} is not a valid path: Exact and PathPrefix values start with '/'")]
    Path(String),
    #[error("{0:?} is not a valid hostname: expected a DNS name, optionally starting with '*.'")]
    Hostname(String),
    #[error("gRPC method match: {0}")]
    GrpcMethod(String),
    #[error("regular expression does not compile: {0}")]
    Regex(String),
    #[error("route name {name:?} is already used by {first}; names must be unique")]
    DuplicateRoute { name: String, first: String },
    /// The compressed pluginConfig cannot be opened (attache_contract::envelope).
    #[error("compressed pluginConfig: {0}")]
    Envelope(EnvelopeError),
    /// The table encoding (attache_contract::table) cannot be read here.
    #[error("table encoding: {0}")]
    Table(attache_contract::table::TableError),
    #[error("route name is empty")]
    EmptyRouteName,
    #[error("index {index} is past the end of {table} ({len} entries)")]
    Index {
        index: u32,
        table: &'static str,
        len: usize,
    },
}
