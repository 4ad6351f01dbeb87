//! GEP-713's merge strategies as rewritten in 2025 (docs/semantics.md,
//! "Merge strategies (GEP-713, 2025)"): the words a policy opts in with
//! (`spec.mergeStrategy`) and the words `explain` and status name every
//! policy's strategy in, the seeds' and the peers' included.

use std::fmt;

use super::meta::{Op, Priority};

/// The strategy a policy opted into with `spec.mergeStrategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MergeStrategy {
    /// The policy's settings whole, if nothing folded before supplied any.
    AtomicDefaults,
    /// What was folded before is dropped; the policy's settings stand whole.
    AtomicOverrides,
    /// RFC 7386, target the policy, patch what was folded before.
    PatchDefaults,
    /// RFC 7386, target what was folded before, patch the policy (`null`
    /// removes a field).
    PatchOverrides,
    /// One of kgateway's four names: section 3's fold, chosen by the policy.
    Custom(Priority),
}

/// The values `spec.mergeStrategy` takes, for the CRD and messages.
pub const STRATEGY_VALUES: [&str; 8] = [
    "AtomicDefaults",
    "AtomicOverrides",
    "PatchDefaults",
    "PatchOverrides",
    "ShallowMergePreferChild",
    "ShallowMergePreferParent",
    "DeepMergePreferChild",
    "DeepMergePreferParent",
];

/// Why a `spec.mergeStrategy` value is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StrategyError {
    /// GEP-713's `None`: a kind may not combine None with another strategy.
    None,
    Unknown(String),
}

impl fmt::Display for StrategyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StrategyError::None => f.write_str(
                "None is not a strategy a RoutePolicy may take: GEP-713 does not let a kind combine None \
                 with another strategy",
            ),
            StrategyError::Unknown(text) => write!(f, "{text:?} is not a merge strategy"),
        }
    }
}

impl MergeStrategy {
    pub fn parse(text: &str) -> Result<MergeStrategy, StrategyError> {
        Ok(match text {
            "AtomicDefaults" => MergeStrategy::AtomicDefaults,
            "AtomicOverrides" => MergeStrategy::AtomicOverrides,
            "PatchDefaults" => MergeStrategy::PatchDefaults,
            "PatchOverrides" => MergeStrategy::PatchOverrides,
            "None" => return Err(StrategyError::None),
            other => match Priority::parse(other) {
                Some(p) => MergeStrategy::Custom(p),
                None => return Err(StrategyError::Unknown(other.to_string())),
            },
        })
    }

    /// Defaults fill (the more specific wins), overrides replace.
    pub fn op(self) -> Op {
        match self {
            MergeStrategy::AtomicDefaults | MergeStrategy::PatchDefaults => Op::Fill,
            MergeStrategy::AtomicOverrides | MergeStrategy::PatchOverrides => Op::Replace,
            MergeStrategy::Custom(p) => p.op(),
        }
    }

    /// Whether `null` may remove a field (PatchOverrides only).
    pub fn takes_null(self) -> bool {
        self == MergeStrategy::PatchOverrides
    }

    /// As the policy writes it.
    pub fn value(self) -> &'static str {
        match self {
            MergeStrategy::AtomicDefaults => "AtomicDefaults",
            MergeStrategy::AtomicOverrides => "AtomicOverrides",
            MergeStrategy::PatchDefaults => "PatchDefaults",
            MergeStrategy::PatchOverrides => "PatchOverrides",
            MergeStrategy::Custom(p) => p.name(),
        }
    }
}

impl fmt::Display for MergeStrategy {
    /// In the GEP's words: `Atomic defaults`, `Patch overrides`,
    /// `Custom (DeepMergePreferParent)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MergeStrategy::AtomicDefaults => f.write_str("Atomic defaults"),
            MergeStrategy::AtomicOverrides => f.write_str("Atomic overrides"),
            MergeStrategy::PatchDefaults => f.write_str("Patch defaults"),
            MergeStrategy::PatchOverrides => f.write_str("Patch overrides"),
            MergeStrategy::Custom(p) => write!(f, "Custom ({})", p.name()),
        }
    }
}

/// `spec.mergeStrategy` in the CRD: one of [`STRATEGY_VALUES`], and `None`
/// refused with the GEP's reason (CEL, evaluated in tests/crds_rules.rs).
pub(crate) fn schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let values: Vec<String> = STRATEGY_VALUES.iter().map(|v| format!("'{v}'")).collect();
    schemars::json_schema!({
        "type": "string",
        "x-kubernetes-validations": [
            {
                "rule": "self != 'None'",
                "message": "None is not a strategy a RoutePolicy may take (GEP-713: a kind may not combine None with another strategy)"
            },
            {
                "rule": format!("self in [{}]", values.join(", ")),
                "message": format!("mergeStrategy must be one of {}", STRATEGY_VALUES.join(", "))
            }
        ]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_parses_to_itself_and_none_is_refused() {
        for text in STRATEGY_VALUES {
            assert_eq!(
                MergeStrategy::parse(text).map(MergeStrategy::value),
                Ok(text)
            );
        }
        assert_eq!(MergeStrategy::parse("None"), Err(StrategyError::None));
        assert!(matches!(
            MergeStrategy::parse("atomicDefaults"),
            Err(StrategyError::Unknown(_))
        ));
        assert_eq!(
            MergeStrategy::Custom(Priority::DeepMergePreferParent).to_string(),
            "Custom (DeepMergePreferParent)"
        );
    }
}
