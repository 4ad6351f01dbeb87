//! Errors: [`ApiError`] is what a request is answered with (a `Status`
//! object, api-conventions.md "Response Status Kind"); [`StartError`] and
//! [`LoadError`] are the library's own.

use serde_json::{json, Value};

/// One cause of a failure (`details.causes[]`), e.g. a field-manager
/// conflict of server-side apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    pub reason: String,
    pub message: String,
    pub field: String,
}

/// A request that failed, answered as a `Status` with `code`, `reason` and
/// `message` (api-conventions.md, "HTTP Status codes" and "Response Status
/// Kind").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub causes: Vec<Cause>,
    /// `details.retryAfterSeconds` and the `Retry-After` header (429).
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            causes: Vec::new(),
            retry_after: None,
        }
    }

    pub fn not_found(what: &str, name: &str) -> Self {
        Self::new(404, "NotFound", format!("{what} \"{name}\" not found"))
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 409 Conflict: a stale `metadata.resourceVersion` (optimistic
    /// concurrency, api-conventions.md "Concurrency Control and Consistency").
    pub fn stale(what: &str, name: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {what} \"{name}\": the object has been modified; please apply your changes to the latest version and try again"),
        )
    }

    /// 410 Gone: a resourceVersion or continue token older than the
    /// retained history (api-concepts "Efficient detection of changes").
    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// The `Status` object of this error.
    pub fn status(&self) -> Value {
        let mut details = json!({});
        if !self.causes.is_empty() {
            details["causes"] = self
                .causes
                .iter()
                .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
                .collect();
        }
        if let Some(seconds) = self.retry_after {
            details["retryAfterSeconds"] = json!(seconds);
        }
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "details": details,
            "code": self.code,
        })
    }
}

/// Reading manifests or CRDs.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not YAML: {source}")]
    Yaml {
        path: String,
        #[source]
        source: serde_yaml_ng::Error,
    },
    #[error("{what}: {message}")]
    Invalid { what: String, message: String },
    #[error("{what}: the API refused it: {source}")]
    Refused {
        what: String,
        #[source]
        source: ApiError,
    },
}

/// Starting the server.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot listen on {address}: {source}")]
    Listen {
        address: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Load(#[from] LoadError),
}
