//! `metadata` and the annotations that steer the fold.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::source::Origin;

// How a contribution folds (docs/semantics.md, "The fold"): the model
// owns the words, since a policy's priority annotation and mergeType name
// them; `crate::fold` re-exports them and does the folding.

/// fill = prefer child (set only what is unset); replace = prefer parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Op {
    Fill,
    Replace,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Granularity {
    /// Top-level fields (`timeouts`, `retry`, each header modifier) are atomic.
    Shallow,
    /// Leaf by leaf; header set/add entries by name.
    Field,
    /// As field, but header values of the same name are joined with ","
    /// (preferred first) and `remove` lists are unioned.
    Deep,
}

/// Annotation keys for the plain-settings merge mode, project domain first.
pub const PRIORITY_KEYS: [&str; 2] = [
    "policy.attache.dev/inherited-policy-priority",
    "kgateway.dev/inherited-policy-priority",
];
/// Annotation ranking policies inside one level (higher first), project
/// domain first; kgateway's key is read as the project's own.
pub const WEIGHT_KEYS: [&str; 2] = [
    "policy.attache.dev/policy-weight",
    "kgateway.dev/policy-weight",
];

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawMeta {
    pub name: Option<String>,
    pub namespace: Option<String>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    pub creation_timestamp: Option<String>,
    pub generation: Option<i64>,
}

/// kgateway's `inherited-policy-priority` values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Priority {
    #[default]
    ShallowMergePreferChild,
    ShallowMergePreferParent,
    DeepMergePreferChild,
    DeepMergePreferParent,
}

pub const PRIORITY_VALUES: &str =
    "ShallowMergePreferChild (default), ShallowMergePreferParent, DeepMergePreferChild, DeepMergePreferParent";

impl Priority {
    pub fn parse(text: &str) -> Option<Priority> {
        Some(match text {
            "ShallowMergePreferChild" => Priority::ShallowMergePreferChild,
            "ShallowMergePreferParent" => Priority::ShallowMergePreferParent,
            "DeepMergePreferChild" => Priority::DeepMergePreferChild,
            "DeepMergePreferParent" => Priority::DeepMergePreferParent,
            _ => return None,
        })
    }

    /// Prefer child = fill; prefer parent = replace.
    pub fn op(self) -> Op {
        match self {
            Priority::ShallowMergePreferChild | Priority::DeepMergePreferChild => Op::Fill,
            Priority::ShallowMergePreferParent | Priority::DeepMergePreferParent => Op::Replace,
        }
    }

    pub fn granularity(self) -> Granularity {
        match self {
            Priority::ShallowMergePreferChild | Priority::ShallowMergePreferParent => {
                Granularity::Shallow
            }
            Priority::DeepMergePreferChild | Priority::DeepMergePreferParent => Granularity::Deep,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Priority::ShallowMergePreferChild => "ShallowMergePreferChild",
            Priority::ShallowMergePreferParent => "ShallowMergePreferParent",
            Priority::DeepMergePreferChild => "DeepMergePreferChild",
            Priority::DeepMergePreferParent => "DeepMergePreferParent",
        }
    }
}

/// Validated metadata common to every kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    pub origin: Origin,
    pub name: String,
    pub namespace: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    /// RFC 3339 UTC as Kubernetes writes it (`2024-05-01T10:00:00Z`); such
    /// strings order chronologically as text. `None` sorts first.
    pub created: Option<String>,
    pub generation: Option<i64>,
    pub priority: Priority,
}

/// Whether `text` is a Kubernetes timestamp (`YYYY-MM-DDTHH:MM:SS[.frac]Z`),
/// the only form whose text order is time order.
pub fn is_timestamp(text: &str) -> bool {
    let b = text.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|s| s.iter().all(u8::is_ascii_digit));
    b.len() >= 20
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19)
        && b.last() == Some(&b'Z')
        && (b.len() == 20 || (b[19] == b'.' && b.len() > 21 && digits(20..b.len() - 1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_in_kubernetes_form_are_recognised() {
        assert!(is_timestamp("2024-05-01T10:00:00Z"));
        assert!(is_timestamp("2024-05-01T10:00:00.123Z"));
        assert!(!is_timestamp("2024-05-01T10:00:00+02:00"));
        assert!(!is_timestamp("yesterday"));
        assert!(!is_timestamp("2024-05-01T10:00:00.Z"));
    }

    #[test]
    fn priority_maps_to_operation_and_granularity() {
        assert_eq!(
            Priority::parse("DeepMergePreferParent").map(|p| (p.op(), p.granularity())),
            Some((Op::Replace, Granularity::Deep))
        );
        assert_eq!(Priority::default().op(), Op::Fill);
        assert_eq!(Priority::parse("deepmergepreferparent"), None);
    }
}
