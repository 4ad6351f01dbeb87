//! Who contributed a value to a route rule, and at which level: the
//! vocabulary of provenance, explain and status.

use std::fmt;

use serde::Serialize;

use crate::model::kinds::RouteKind;
use crate::model::meta::{Granularity, Op};
use crate::model::{MergeStrategy, Priority, Target};
use crate::topology::ObjectKey;

/// How a contribution came to fold the way it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// `spec.defaults`: fill, field.
    Defaults,
    /// `spec.overrides`: replace, field.
    Overrides,
    /// Settings directly under `spec`, per the target's priority annotation.
    Plain(Priority),
    /// A rule's own timeouts/retry/header filters. The leaf rule's are the
    /// starting point; a delegating parent rule's follow its route's annotation.
    Inline(Priority),
    /// A BackendTrafficPolicy merged under a more specific one that sets
    /// Envoy Gateway's `mergeType`: fill, field (fold/peer_gate.rs).
    Merged,
    /// A policy that opted into a GEP-713 (2025) strategy with
    /// `spec.mergeStrategy` (fold/strategy.rs).
    Strategy(MergeStrategy),
}

impl Role {
    pub fn op(self) -> Op {
        match self {
            Role::Defaults | Role::Merged => Op::Fill,
            Role::Overrides => Op::Replace,
            Role::Plain(p) | Role::Inline(p) => p.op(),
            Role::Strategy(s) => s.op(),
        }
    }

    pub fn granularity(self) -> Granularity {
        match self {
            Role::Defaults | Role::Overrides | Role::Merged => Granularity::Field,
            Role::Plain(p) | Role::Inline(p) | Role::Strategy(MergeStrategy::Custom(p)) => {
                p.granularity()
            }
            // Atomic and Patch fold by their own steps (fold/strategy.rs);
            // leaf by leaf is what they share with field.
            Role::Strategy(
                MergeStrategy::AtomicDefaults
                | MergeStrategy::AtomicOverrides
                | MergeStrategy::PatchDefaults
                | MergeStrategy::PatchOverrides,
            ) => Granularity::Field,
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Role::Defaults => f.write_str("defaults"),
            Role::Overrides => f.write_str("overrides"),
            Role::Plain(p) => write!(f, "plain, {}", p.name()),
            Role::Inline(p) => write!(f, "inline, {}", p.name()),
            Role::Merged => f.write_str("merged under a more specific mergeType"),
            Role::Strategy(s) => write!(f, "{s}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Source {
    /// Index into `Inputs::policies`, and the target through which it applies.
    Policy {
        index: usize,
        name: String,
        target: Target,
    },
    /// A rule's own values.
    Inline {
        kind: RouteKind,
        route: ObjectKey,
        rule: String,
    },
}

/// One contribution to one route rule.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Supplier {
    pub source: Source,
    pub role: Role,
    /// The level it sits at, e.g. `Gateway infra/edge listener http`.
    pub level: String,
    /// The leaf rule's own values start the fold; they are not a level above it.
    pub leaf: bool,
}

impl Role {
    /// The strategy in GEP-713's (2025) words (docs/semantics.md, "Merge
    /// strategies"): an opted-in policy's own; the seeds' stanzas "Custom
    /// (field defaults)" and "Custom (field overrides)"; plain settings and
    /// kgateway "Custom (<annotation>)"; Envoy Gateway's `mergeType` unset
    /// "Atomic defaults", JSONMerge "Patch defaults", StrategicMerge
    /// "Custom (StrategicMerge)". `None` for a rule's own values.
    pub fn strategy_words(self, policy: &crate::model::Policy) -> Option<String> {
        use crate::model::policy::{MergeType, PolicyKind};
        let envoy_gateway = || match policy.merge_type {
            None => MergeStrategy::AtomicDefaults.to_string(),
            Some(MergeType::JsonMerge) => MergeStrategy::PatchDefaults.to_string(),
            Some(MergeType::StrategicMerge) => "Custom (StrategicMerge)".to_string(),
        };
        Some(match (self, policy.kind) {
            (Role::Strategy(s), _) => s.to_string(),
            (Role::Defaults, _) => "Custom (field defaults)".to_string(),
            (Role::Overrides, _) => "Custom (field overrides)".to_string(),
            (Role::Plain(_) | Role::Merged, PolicyKind::BackendTrafficPolicy) => envoy_gateway(),
            (
                Role::Plain(p),
                PolicyKind::RoutePolicy
                | PolicyKind::ClusterRoutePolicy
                | PolicyKind::TrafficPolicy,
            ) => MergeStrategy::Custom(p).to_string(),
            (
                Role::Merged,
                PolicyKind::RoutePolicy
                | PolicyKind::ClusterRoutePolicy
                | PolicyKind::TrafficPolicy,
            ) => "Custom (merged)".to_string(),
            (Role::Inline(_), _) => return None,
        })
    }
}

impl Supplier {
    /// The source without the level: `RoutePolicy shop/fast` or
    /// `HTTPRoute shop/checkout rule 0`.
    pub fn who(&self) -> String {
        match &self.source {
            Source::Policy { name, .. } => name.clone(),
            Source::Inline { kind, route, rule } => format!("{} {route} rule {rule}", kind.name()),
        }
    }
}

impl fmt::Display for Supplier {
    /// `RoutePolicy shop/fast (defaults @ HTTPRoute shop/checkout)`,
    /// `HTTPRoute shop/checkout rule 0 (inline)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            Source::Policy { name, .. } => write!(f, "{name} ({} @ {})", self.role, self.level),
            Source::Inline { .. } if self.leaf => write!(f, "{} (inline)", self.who()),
            Source::Inline { .. } => write!(f, "{} ({})", self.who(), self.role),
        }
    }
}

/// Serializable view of a supplier for `explain -o json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SupplierView {
    pub source: String,
    pub role: String,
    pub level: String,
}

impl From<&Supplier> for SupplierView {
    fn from(s: &Supplier) -> Self {
        let role = if s.leaf {
            "inline".to_string()
        } else {
            s.role.to_string()
        };
        SupplierView {
            source: s.who(),
            role,
            level: s.level.clone(),
        }
    }
}
