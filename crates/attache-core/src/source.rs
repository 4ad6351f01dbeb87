//! Where an input object came from, so every message can name the file and
//! the document. The CLI reads files; the core only sees parsed values.

use std::fmt;

/// A document's place in the input: file path (or `-` for stdin) and its
/// 1-based position among the file's YAML documents (items of a `kind: List`
/// get `item`, 0-based, too). Document 0 is an object that is no file's
/// document (one read from the Kubernetes API): `file` alone names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct Origin {
    pub file: String,
    pub document: usize,
    pub item: Option<usize>,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.document == 0 {
            return write!(f, "{}", self.file);
        }
        write!(f, "{} (document {}", self.file, self.document)?;
        if let Some(item) = self.item {
            write!(f, ", items[{item}]")?;
        }
        write!(f, ")")
    }
}

/// One Kubernetes object as parsed from YAML, before the core interprets it.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceDoc {
    pub origin: Origin,
    pub value: serde_json::Value,
}
