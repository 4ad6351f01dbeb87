//! GEP-713's (2025) cap on status ancestors (docs/status.md, "At most 16
//! ancestors"): a policy's ancestors in the GEP's order, and a policy with
//! more than 16 applies under the first 16 only. Those left out are moved
//! out of `targets` (so neither `resolve` nor status sees them there), each
//! with a warning; status names them on the 16th entry.

use super::*;

use crate::model::policy::MAX_ANCESTORS;

/// The key ancestors are ordered by: the target object's
/// `creationTimestamp` (absent first), then group, kind, namespace, name,
/// sectionName.
pub(crate) type AncestorKey = (
    Option<String>,
    String,
    String,
    Option<String>,
    String,
    Option<String>,
);

/// The order key of one targetRef of `policy`.
pub(crate) fn ancestor_key(inputs: &Inputs, policy: &Policy, tr: &TargetRef) -> AncestorKey {
    let created = tr.resolved.as_ref().and_then(|t| match t {
        Target::GatewayClass(name) => inputs.classes.get(name).map(|c| &c.meta),
        Target::Namespace(name) => inputs.namespaces.get(name).map(|n| &n.meta),
        Target::Gateway(key, _) => inputs.gateways.get(key).map(|g| &g.meta),
        Target::Route(kind, key, _) => inputs.routes_of(*kind).get(key).map(|r| &r.meta),
        Target::ListenerSet(set, _) => inputs.listener_sets.get(set).map(|s| &s.meta),
    });
    let namespaced = TargetKind::named(&tr.kind).is_some_and(|k| k.info().namespaced);
    (
        created.and_then(|m| m.created.clone()),
        tr.group.clone(),
        tr.kind.clone(),
        namespaced.then(|| policy.meta.namespace.clone()).flatten(),
        tr.name.clone(),
        tr.section_name.clone(),
    )
}

/// Keeps the first [`MAX_ANCESTORS`] targetRefs of every policy that has
/// more, in the GEP's order; the others go to `beyond_limit`, each with a
/// warning. A policy within the cap is left as written. Runs in `parse`
/// before the policies are indexed by target.
pub(super) fn limit_ancestors(inputs: &mut Inputs) {
    limit(inputs, &|_| 0);
}

/// [`limit_ancestors`] for a controller that found `foreign(policy)`
/// entries of other controllers in a policy's live `status.ancestors`:
/// they are kept and counted (GEP-713), so the policy applies under
/// `16 - foreign` of its own targets only. Call it on parsed inputs before
/// resolving; the targets left out are taken out of the index too.
pub fn limit_ancestors_with_foreign(inputs: &mut Inputs, foreign: &dyn Fn(&Policy) -> usize) {
    for (index, target) in limit(inputs, foreign) {
        if let Some(list) = inputs.by_target.get_mut(&target) {
            list.retain(|i| *i != index);
        }
    }
}

/// Moves the targetRefs beyond each policy's room to `beyond_limit`, with
/// a warning each; returns the (policy index, target) pairs taken out.
fn limit(inputs: &mut Inputs, foreign: &dyn Fn(&Policy) -> usize) -> Vec<(usize, Target)> {
    let mut warnings = Vec::new();
    let mut orders: Vec<(usize, usize, Vec<usize>)> = Vec::new();
    for (index, policy) in inputs.policies.iter().enumerate() {
        let room = MAX_ANCESTORS.saturating_sub(foreign(policy));
        if policy.targets.len() <= room {
            continue;
        }
        let mut order: Vec<(AncestorKey, usize)> = policy
            .targets
            .iter()
            .enumerate()
            .map(|(i, tr)| (ancestor_key(inputs, policy, tr), i))
            .collect();
        order.sort();
        orders.push((index, room, order.into_iter().map(|(_, i)| i).collect()));
    }
    let mut taken = Vec::new();
    for (index, room, order) in orders {
        let Some(policy) = inputs.policies.get_mut(index).map(Arc::make_mut) else {
            continue;
        };
        let mut slots: Vec<Option<TargetRef>> = std::mem::take(&mut policy.targets)
            .into_iter()
            .map(Some)
            .collect();
        for (rank, i) in order.into_iter().enumerate() {
            let Some(tr) = slots.get_mut(i).and_then(Option::take) else {
                continue;
            };
            if rank < room {
                policy.targets.push(tr);
                continue;
            }
            warnings.push(
                Diagnostic::warning(format!(
                    "{} {} is left out: the policy has more than {MAX_ANCESTORS} ancestors (GEP-713), \
                     so it does not apply there",
                    tr.kind, tr.name
                ))
                .at(&policy.meta.origin)
                .on(policy.display_name())
                .field(tr.path.clone())
                .hint("split the policy, or target fewer objects; the oldest 16 are kept"),
            );
            if let Some(target) = &tr.resolved {
                taken.push((index, target.clone()));
            }
            policy.beyond_limit.push(tr);
        }
    }
    inputs.diagnostics.extend(warnings);
    taken
}
