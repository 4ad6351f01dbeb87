//! Messages about the input. Every problem names where it is (file,
//! document), what (the object), which field, and what would be valid, so a
//! user can fix it without reading the resolver's code.

use std::fmt;

use serde::Serialize;

use crate::source::Origin;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The object (or the part of it named) is dropped.
    Error,
    /// Kept, but probably not what the author meant.
    Warning,
    /// Informational (e.g. a kind the resolver does not read).
    Note,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        })
    }
}

/// One message about the input.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Diagnostic {
    pub severity: Severity,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
    /// `Kind namespace/name` (or `Kind name` when cluster-scoped).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    /// Dotted field path inside the object, e.g. `spec.defaults.timeouts.request`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    pub message: String,
    /// What would be valid, or what to do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// What kind of finding it is, for a reader that acts on a kind (the
    /// controller's Events); most findings have none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<DiagnosticCode>,
}

/// Findings a reader acts on by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum DiagnosticCode {
    /// A policy's request-header change refused on a rule because a rule
    /// matches on that header (docs/semantics.md, "A policy never changes
    /// which rule serves a request").
    HeaderChangeRefused,
}

impl DiagnosticCode {
    /// The Event reason (UpperCamelCase, as Kubernetes reasons are).
    pub fn reason(self) -> &'static str {
        match self {
            DiagnosticCode::HeaderChangeRefused => "HeaderChangeRefused",
        }
    }
}

impl Diagnostic {
    pub fn new(severity: Severity, message: impl Into<String>) -> Self {
        Diagnostic {
            severity,
            origin: None,
            object: None,
            field: None,
            message: message.into(),
            hint: None,
            code: None,
        }
    }
    pub fn error(message: impl Into<String>) -> Self {
        Self::new(Severity::Error, message)
    }
    pub fn warning(message: impl Into<String>) -> Self {
        Self::new(Severity::Warning, message)
    }
    pub fn note(message: impl Into<String>) -> Self {
        Self::new(Severity::Note, message)
    }
    pub fn code(mut self, code: DiagnosticCode) -> Self {
        self.code = Some(code);
        self
    }
    pub fn at(mut self, origin: &Origin) -> Self {
        self.origin = Some(origin.clone());
        self
    }
    pub fn on(mut self, object: impl Into<String>) -> Self {
        self.object = Some(object.into());
        self
    }
    pub fn field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for Diagnostic {
    /// `policies.yaml (document 3) RoutePolicy shop/fast: spec.defaults.timeouts.request: "1.5s" is not ...; use e.g. 1500ms`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut wrote = false;
        if let Some(origin) = &self.origin {
            write!(f, "{origin}")?;
            wrote = true;
        }
        if let Some(object) = &self.object {
            if wrote {
                f.write_str(" ")?;
            }
            f.write_str(object)?;
            wrote = true;
        }
        if wrote {
            f.write_str(": ")?;
        }
        if let Some(field) = &self.field {
            write!(f, "{field}: ")?;
        }
        f.write_str(&self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "; {hint}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_file_document_object_field_and_hint() {
        let d = Diagnostic::error("\"1.5s\" is not a Gateway API duration")
            .at(&Origin {
                file: "policies.yaml".into(),
                document: 3,
                item: None,
            })
            .on("RoutePolicy shop/fast")
            .field("spec.defaults.timeouts.request")
            .hint("use e.g. 1500ms");
        assert_eq!(
            d.to_string(),
            "policies.yaml (document 3) RoutePolicy shop/fast: spec.defaults.timeouts.request: \"1.5s\" is not a Gateway API duration; use e.g. 1500ms"
        );
    }

    #[test]
    fn display_without_location_is_just_the_message() {
        assert_eq!(Diagnostic::note("skipped").to_string(), "skipped");
    }
}
