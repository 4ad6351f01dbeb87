//! After reading: which policy targets exist, and the precedence-ordered index by target.

use super::*;
use crate::model::kinds::RouteKind;

/// Checks that each target exists, then indexes valid policies by target
/// in precedence order.
pub(super) fn resolve_targets(inputs: &mut Inputs) {
    select_targets(inputs);
    inputs.policies.sort_by(|a, b| {
        (a.kind, &a.meta.namespace, &a.meta.name).cmp(&(b.kind, &b.meta.namespace, &b.meta.name))
    });
    let known = Known {
        classes: &inputs.classes,
        gateways: &inputs.gateways,
        http_routes: &inputs.routes,
        grpc_routes: &inputs.grpc_routes,
        namespaces: inputs
            .gateways
            .keys()
            .chain(inputs.routes.keys())
            .chain(inputs.grpc_routes.keys())
            .map(|k| k.namespace.as_str())
            .chain(inputs.namespaces.keys().map(String::as_str))
            .collect(),
    };
    let mut missing = Vec::new();
    let mut by_target: BTreeMap<Target, Vec<usize>> = BTreeMap::new();
    for (index, policy) in inputs.policies.iter_mut().enumerate() {
        if !policy.is_valid() {
            continue;
        }
        let (display, origin) = (policy.display_name(), policy.meta.origin.clone());
        for tr in policy.targets.iter_mut() {
            let Some(target) = tr.resolved.clone() else {
                continue;
            };
            match known.check(&target) {
                Ok(()) => by_target.entry(target).or_default().push(index),
                Err(hint) => {
                    missing.push(
                        Diagnostic::warning(format!(
                            "target {target} does not exist (TargetNotFound)"
                        ))
                        .at(&origin)
                        .on(display.clone())
                        .field(tr.path.clone())
                        .hint(hint),
                    );
                    tr.resolved = None;
                }
            }
        }
    }
    let policies = &inputs.policies;
    for list in by_target.values_mut() {
        list.sort_by(|a, b| {
            policies
                .get(*a)
                .map(Policy::rank_key)
                .cmp(&policies.get(*b).map(Policy::rank_key))
        });
    }
    inputs.by_target = by_target;
    inputs.diagnostics.extend(missing);
}

/// kgateway's `targetSelectors`: each Gateway or HTTPRoute of the policy's
/// namespace whose labels match becomes a target, as if named in
/// `targetRefs`, with the selector's `sectionName` (docs/peers.md); whether
/// that section exists is then checked as for a targetRef.
fn select_targets(inputs: &mut Inputs) {
    let Inputs {
        policies,
        gateways,
        routes,
        grpc_routes,
        ..
    } = inputs;
    for policy in policies.iter_mut() {
        let Some(ns) = policy.meta.namespace.clone() else {
            continue;
        };
        let mut found = Vec::new();
        for s in &policy.selectors {
            let hit = |labels: &BTreeMap<String, String>| s.selector.matches(labels);
            let section = &s.section_name;
            let targets: Vec<(&str, Target)> = match s.kind {
                TargetKind::Gateway => gateways
                    .values()
                    .filter(|g| g.key.namespace == ns && hit(&g.meta.labels))
                    .map(|g| {
                        (
                            TargetKind::Gateway.info().name,
                            Target::Gateway(g.key.clone(), section.clone()),
                        )
                    })
                    .collect(),
                kind => routes
                    .values()
                    .chain(grpc_routes.values())
                    .filter(|r| r.kind.target_kind() == kind)
                    .filter(|r| r.key.namespace == ns && hit(&r.meta.labels))
                    .map(|r| {
                        (
                            r.kind.name(),
                            Target::Route(r.kind, r.key.clone(), section.clone()),
                        )
                    })
                    .collect(),
            };
            for (kind, target) in targets {
                let (Target::Gateway(key, _) | Target::Route(_, key, _)) = &target else {
                    continue;
                };
                let named = |t: &TargetRef| t.resolved.as_ref() == Some(&target);
                if policy.targets.iter().chain(&found).any(named) {
                    continue;
                }
                found.push(TargetRef {
                    group: GATEWAY_GROUP.into(),
                    kind: kind.into(),
                    name: key.name.clone(),
                    section_name: s.section_name.clone(),
                    path: s.path.clone(),
                    resolved: Some(target.clone()),
                });
            }
        }
        policy.targets.extend(found);
    }
}

/// What exists in the input, for checking targets.
struct Known<'a> {
    classes: &'a BTreeMap<String, GatewayClass>,
    gateways: &'a BTreeMap<ObjectKey, Gateway>,
    http_routes: &'a BTreeMap<ObjectKey, HttpRoute>,
    grpc_routes: &'a BTreeMap<ObjectKey, HttpRoute>,
    /// Namespaces with a manifest, a Gateway or an HTTPRoute.
    namespaces: BTreeSet<&'a str>,
}

impl Known<'_> {
    /// Ok when the target exists; otherwise a hint listing what does.
    fn check(&self, target: &Target) -> Result<(), String> {
        match target {
            Target::GatewayClass(name) => {
                self.classes
                    .contains_key(name)
                    .then_some(())
                    .ok_or_else(|| {
                        format!(
                            "known GatewayClasses: {}",
                            list(self.classes.keys().map(String::as_str))
                        )
                    })
            }
            Target::Namespace(name) => self
                .namespaces
                .contains(name.as_str())
                .then_some(())
                .ok_or_else(|| {
                    "no Namespace manifest and no Gateway or HTTPRoute lives there".into()
                }),
            Target::Gateway(key, section) => {
                let Some(g) = self.gateways.get(key) else {
                    return Err(format!(
                        "Gateways in {}: {}",
                        key.namespace,
                        in_namespace(self.gateways, key)
                    ));
                };
                match section {
                    Some(s) if !g.listeners.iter().any(|l| &l.name == s) => Err(format!(
                        "listeners of Gateway {key}: {}",
                        list(g.listeners.iter().map(|l| l.name.as_str()))
                    )),
                    _ => Ok(()),
                }
            }
            Target::Route(kind, key, section) => {
                let routes = match kind {
                    RouteKind::Http => self.http_routes,
                    RouteKind::Grpc => self.grpc_routes,
                };
                let Some(r) = routes.get(key) else {
                    return Err(format!(
                        "{}s in {}: {}",
                        kind.name(),
                        key.namespace,
                        in_namespace(routes, key)
                    ));
                };
                match section {
                    Some(s) if !r.rules.iter().any(|rule| rule.name.as_ref() == Some(s)) => {
                        Err(format!(
                            "named rules of {}: {}",
                            r.object(),
                            list(r.rules.iter().filter_map(|rule| rule.name.as_deref()))
                        ))
                    }
                    _ => Ok(()),
                }
            }
        }
    }
}

/// The names of the objects in `key`'s namespace.
fn in_namespace<T>(objects: &BTreeMap<ObjectKey, T>, key: &ObjectKey) -> String {
    list(
        objects
            .keys()
            .filter(|k| k.namespace == key.namespace)
            .map(|k| k.name.as_str()),
    )
}

fn list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}
