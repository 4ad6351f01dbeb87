//! Which policies reach one Gateway: what `attache status --gateway`
//! shows. A policy reaches a Gateway when it is attached to the Gateway,
//! one of its listeners, its Namespace or its GatewayClass, or to a route
//! (or rule) the Gateway serves; an invalid policy whose targetRef names the
//! Gateway is shown too, so that the filter never hides why it is missing.

use std::collections::BTreeSet;

use crate::model::Target;
use crate::parse::Inputs;
use crate::resolve::ResolveError;
use crate::topology::ObjectKey;

/// The routes with a parentRef that reaches `gateway`, directly or through
/// one of the ListenerSets it takes, whether or not a listener takes them
/// (`attache status --gateway` shows why not).
pub fn routes_reaching(
    inputs: &Inputs,
    gateway: &ObjectKey,
) -> Result<BTreeSet<ObjectKey>, ResolveError> {
    let key = crate::resolve::select_gateway(inputs, Some(gateway))?;
    let Some(gw) = inputs.gateways.get(&key) else {
        return Ok(BTreeSet::new());
    };
    Ok(inputs
        .routes
        .values()
        .filter(|r| {
            r.parent_refs
                .iter()
                .any(|p| crate::route_parents::Parent::of(inputs, p, gw).is_some())
        })
        .map(|r| r.key.clone())
        .collect())
}

/// The (index into `Inputs::policies`, target) pairs through which
/// policies reach `gateway`: the targets its rules were folded from (routes
/// and rules, delegated children included) and its upper levels (each
/// listener, ListenerSet, the Gateway, its Namespace and GatewayClass) with
/// every policy attached there. Status names one ancestor per target, so
/// the controller's `Programmed` is computed per ancestor from this.
pub fn targets_reaching(
    inputs: &Inputs,
    gateway: &ObjectKey,
) -> Result<BTreeSet<(usize, Target)>, ResolveError> {
    let key = crate::resolve::select_gateway(inputs, Some(gateway))?;
    let Some(gw) = inputs.gateways.get(&key) else {
        return Ok(BTreeSet::new());
    };
    let (stats, _) = crate::status::counting::contributions(inputs, &key)?;
    let mut found: BTreeSet<(usize, Target)> = stats.into_keys().collect();
    found.extend(crate::status::upper_reaching(inputs, gw));
    Ok(found)
}

/// Indices into `Inputs::policies` of the policies that reach `gateway`.
pub fn policies_reaching(
    inputs: &Inputs,
    gateway: &ObjectKey,
) -> Result<BTreeSet<usize>, ResolveError> {
    let mut found: BTreeSet<usize> = targets_reaching(inputs, gateway)?
        .into_iter()
        .map(|(index, _)| index)
        .collect();
    for (index, p) in inputs.policies.iter().enumerate() {
        let names_it = p.targets.iter().any(|t| {
            t.kind == "Gateway"
                && t.name == gateway.name
                && p.meta.namespace.as_deref() == Some(gateway.namespace.as_str())
        });
        if !p.is_valid() && names_it {
            found.insert(index);
        }
    }
    Ok(found)
}
