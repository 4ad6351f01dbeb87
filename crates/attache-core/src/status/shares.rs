//! The status fold in shares, one per Gateway: what folding one Gateway
//! contributes to every policy's status. [`super::policy_status_reaching`]
//! folds every Gateway and sums the shares; a caller that knows which
//! Gateways' inputs changed (the controller's incremental reconcile) keeps
//! the other shares and folds only those again. A share names policies by
//! kind, namespace and name, not by their index into `Inputs::policies`,
//! which moves when a policy comes or goes.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::counting::{contributions, ContributionStats};
use super::{one, upper_reaching, Reaching, StatusReport};
use crate::diagnostic::Diagnostic;
use crate::model::{Inputs, Policy, PolicyKind, Target};
use crate::topology::ObjectKey;

/// A policy by kind, namespace and name.
pub type PolicyId = (PolicyKind, Option<String>, String);

fn id_of(policy: &Policy) -> PolicyId {
    (
        policy.kind,
        policy.meta.namespace.clone(),
        policy.meta.name.clone(),
    )
}

/// What folding one Gateway gives status.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayShare {
    stats: BTreeMap<(PolicyId, Target), ContributionStats>,
    diagnostics: Vec<Diagnostic>,
    /// The (policy, target) pairs through which policies reach it; `None`
    /// when it could not be resolved (its error is in `diagnostics`).
    reaching: Option<BTreeSet<(PolicyId, Target)>>,
}

/// Folds one Gateway of `inputs` for status.
pub fn gateway_share(inputs: &Inputs, key: &ObjectKey) -> GatewayShare {
    let id = |index: usize| inputs.policy(index).map(id_of);
    let found = contributions(inputs, key);
    let (found, diagnostics) = match found {
        Ok(both) => both,
        // A Gateway over its limits still gets its policies' status; the
        // reason it has no entries must not be silent.
        Err(err) => {
            return GatewayShare {
                stats: BTreeMap::new(),
                diagnostics: vec![Diagnostic::error(err.to_string())],
                reaching: None,
            }
        }
    };
    let mut reached: BTreeSet<(usize, Target)> = found.keys().cloned().collect();
    if let Some(gateway) = inputs.gateways.get(key) {
        reached.extend(upper_reaching(inputs, gateway));
    }
    GatewayShare {
        stats: found
            .into_iter()
            .filter_map(|((index, target), s)| Some(((id(index)?, target), s)))
            .collect(),
        diagnostics,
        reaching: Some(
            reached
                .into_iter()
                .filter_map(|(index, target)| Some((id(index)?, target)))
                .collect(),
        ),
    }
}

impl GatewayShare {
    /// Per policy that reaches this Gateway, a hash of its part in the
    /// Gateway's configuration: the policy as the fold reads it
    /// (`crate::entry_memo`'s policy hash) and, through each target that
    /// reaches the Gateway, what it did there (entries reached, fields set
    /// and lost, who won them). Equal hashes in two resolutions: the policy
    /// gives the same values to as many entries, so a document carrying
    /// either serves it (the controller keeps such a policy `Programmed`
    /// while a document changed by another policy rolls out). Empty for a
    /// Gateway that could not be resolved.
    pub fn contributions(&self, inputs: &Inputs) -> HashMap<PolicyId, u64> {
        use std::hash::{Hash, Hasher};
        let Some(reached) = &self.reaching else {
            return HashMap::new();
        };
        let mut hashers: HashMap<&PolicyId, std::hash::DefaultHasher> = HashMap::new();
        // BTreeSet order: each policy's targets are hashed in one order.
        for pair in reached {
            let hasher = hashers.entry(&pair.0).or_default();
            pair.1.hash(hasher);
            self.stats.get(pair).hash(hasher);
        }
        let policies: HashMap<PolicyId, &Policy> =
            inputs.policies.iter().map(|p| (id_of(p), &**p)).collect();
        hashers
            .into_iter()
            .map(|(id, mut hasher)| {
                let values = policies.get(id).map(|p| crate::entry_memo::policy_hash(p));
                values.hash(&mut hasher);
                (id.clone(), hasher.finish())
            })
            .collect()
    }
}

/// Every policy's status from the shares of every Gateway of `inputs`
/// (in Gateway order), and what reaches each Gateway that could be
/// resolved. The routes' own status is left empty: it is a pass over
/// every route that the controller does not write
/// ([`super::policy_status_reaching`] adds it).
pub fn policy_status_of_shares<'a>(
    inputs: &Inputs,
    shares: impl IntoIterator<Item = (&'a ObjectKey, &'a GatewayShare)>,
) -> (StatusReport, BTreeMap<ObjectKey, Reaching>) {
    let index: HashMap<PolicyId, usize> = inputs
        .policies
        .iter()
        .enumerate()
        .map(|(i, p)| (id_of(p), i))
        .collect();
    let at = |id: &PolicyId| index.get(id).copied();
    let mut stats: BTreeMap<(usize, Target), ContributionStats> = BTreeMap::new();
    let mut reaching = BTreeMap::new();
    let mut diagnostics = Vec::new();
    for (key, share) in shares {
        diagnostics.extend(share.diagnostics.iter().cloned());
        let Some(reached) = &share.reaching else {
            continue;
        };
        let reached: Reaching = reached
            .iter()
            .filter_map(|(id, target)| Some((at(id)?, target.clone())))
            .collect();
        reaching.insert(key.clone(), reached);
        for ((id, target), s) in &share.stats {
            let Some(i) = at(id) else { continue };
            stats.entry((i, target.clone())).or_default().absorb(s);
        }
    }
    diagnostics.sort();
    diagnostics.dedup();
    let policies = inputs
        .policies
        .iter()
        .enumerate()
        .map(|(i, p)| one(inputs, i, p, &stats))
        .collect();
    let report = StatusReport {
        policies,
        routes: Vec::new(),
        diagnostics,
    };
    (report, reaching)
}
