//! After reading: which policy targets exist, and the precedence-ordered index by target.

use super::*;
use crate::model::kinds::RouteKind;
use crate::model::{SetRef, SetState};

/// Checks that each target exists, then indexes valid policies by target
/// in precedence order.
pub(super) fn resolve_targets(inputs: &mut Inputs) {
    select_targets(inputs);
    super::ancestors::limit_ancestors(inputs);
    inputs.policies.sort_by(|a, b| {
        (a.kind, &a.meta.namespace, &a.meta.name).cmp(&(b.kind, &b.meta.namespace, &b.meta.name))
    });
    let known = Known {
        classes: &inputs.classes,
        gateways: &inputs.gateways,
        routes: &inputs.routes,
        grpc_routes: &inputs.grpc_routes,
        listener_sets: &inputs.listener_sets,
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
    // (policy, targetRef, why it cannot be used): set once checking is
    // done, so that only a policy with a target not found is copied.
    let mut not_found: Vec<(usize, usize, Option<String>)> = Vec::new();
    let mut by_target: BTreeMap<Target, Vec<usize>> = BTreeMap::new();
    for (index, policy) in inputs.policies.iter().enumerate() {
        if !policy.is_valid() {
            continue;
        }
        for (at, tr) in policy.targets.iter().enumerate() {
            let Some(target) = &tr.resolved else {
                continue;
            };
            let (warning, unusable) = match known.check(target) {
                Ok(()) => {
                    by_target.entry(target.clone()).or_default().push(index);
                    continue;
                }
                Err(Missing::Unusable(why)) => (
                    Diagnostic::warning(format!(
                        "target {target} cannot be used (TargetNotFound): {why}"
                    ))
                    .hint("an invalid target resource: fix it, or target another"),
                    Some(why),
                ),
                Err(Missing::Absent(hint)) => (
                    Diagnostic::warning(format!("target {target} does not exist (TargetNotFound)"))
                        .hint(hint),
                    None,
                ),
            };
            missing.push(
                warning
                    .at(&policy.meta.origin)
                    .on(policy.display_name())
                    .field(tr.path.clone()),
            );
            not_found.push((index, at, unusable));
        }
    }
    for (index, at, unusable) in not_found {
        let policy = inputs.policies.get_mut(index).map(Arc::make_mut);
        if let Some(tr) = policy.and_then(|p| p.targets.get_mut(at)) {
            tr.resolved = None;
            tr.unusable = unusable;
        }
    }
    let policies = &inputs.policies;
    for list in by_target.values_mut() {
        list.sort_by(|a, b| {
            policies
                .get(*a)
                .map(|p| p.rank_key())
                .cmp(&policies.get(*b).map(|p| p.rank_key()))
        });
    }
    inputs.by_target = by_target;
    inputs.diagnostics.extend(missing);
}

/// kgateway's `targetSelectors`: each Gateway, ListenerSet or HTTPRoute of the policy's
/// namespace whose labels match becomes a target, as if named in
/// `targetRefs`, with the selector's `sectionName` (docs/peers.md); whether
/// that section exists is then checked as for a targetRef.
fn select_targets(inputs: &mut Inputs) {
    let Inputs {
        policies,
        gateways,
        routes,
        grpc_routes,
        listener_sets,
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
            let targets: Vec<Target> = match s.kind {
                TargetKind::Gateway => gateways
                    .values()
                    .filter(|g| g.key.namespace == ns && hit(&g.meta.labels))
                    .map(|g| Target::Gateway(g.key.clone(), section.clone()))
                    .collect(),
                TargetKind::ListenerSet | TargetKind::XListenerSet => listener_sets
                    .values()
                    .map(|l| Target::ListenerSet(l.id.clone(), section.clone()))
                    .filter(|t| t.kind() == s.kind)
                    .filter(|t| {
                        let Target::ListenerSet(id, _) = t else {
                            return false;
                        };
                        id.key.namespace == ns
                            && listener_sets.get(id).is_some_and(|l| hit(&l.meta.labels))
                    })
                    .collect(),
                kind => routes
                    .values()
                    .chain(grpc_routes.values())
                    .filter(|r| r.kind.target_kind() == kind)
                    .filter(|r| r.key.namespace == ns && hit(&r.meta.labels))
                    .map(|r| Target::Route(r.kind, r.key.clone(), section.clone()))
                    .collect(),
            };
            for target in targets {
                let info = target.kind().info();
                let (Target::Gateway(key, _)
                | Target::Route(_, key, _)
                | Target::ListenerSet(SetRef { key, .. }, _)) = &target
                else {
                    continue;
                };
                let named = |t: &TargetRef| t.resolved.as_ref() == Some(&target);
                if policy.targets.iter().chain(&found).any(named) {
                    continue;
                }
                found.push(TargetRef {
                    group: info.group.into(),
                    kind: info.name.into(),
                    name: key.name.clone(),
                    section_name: s.section_name.clone(),
                    path: s.path.clone(),
                    resolved: Some(target.clone()),
                    unusable: None,
                });
            }
        }
        // Only a policy whose selectors found something is copied.
        if !found.is_empty() {
            Arc::make_mut(policy).targets.extend(found);
        }
    }
}

/// What exists in the input, for checking targets.
struct Known<'a> {
    classes: &'a BTreeMap<String, Arc<GatewayClass>>,
    gateways: &'a BTreeMap<ObjectKey, Arc<Gateway>>,
    routes: &'a BTreeMap<ObjectKey, Arc<HttpRoute>>,
    grpc_routes: &'a BTreeMap<ObjectKey, Arc<HttpRoute>>,
    listener_sets: &'a BTreeMap<SetRef, Arc<crate::model::ListenerSet>>,
    /// Namespaces with a manifest, a Gateway or an HTTPRoute.
    namespaces: BTreeSet<&'a str>,
}

/// Why a target is not found: it is not there (the hint lists what is), or
/// it is there but cannot be used (why).
enum Missing {
    Absent(String),
    Unusable(String),
}

impl Known<'_> {
    /// Ok when the target exists and can be used; otherwise why not.
    fn check(&self, target: &Target) -> Result<(), Missing> {
        match target {
            Target::ListenerSet(set, section) => self.check_set(set, section.as_deref()),
            Target::Gateway(key, Some(s)) => {
                let conflicted = self
                    .gateways
                    .get(key)
                    .and_then(|g| g.conflicted.iter().find(|(n, _)| n == s));
                match conflicted {
                    Some((_, why)) => Err(Missing::Unusable(format!(
                        "listener {s} of Gateway {key} is Conflicted ({why})"
                    ))),
                    None => self.check_plain(target),
                }
            }
            _ => self.check_plain(target),
        }
    }

    /// Whether a target other than a ListenerSet exists; else a hint
    /// listing what does.
    fn check_plain(&self, target: &Target) -> Result<(), Missing> {
        match target {
            Target::GatewayClass(name) => {
                self.classes
                    .contains_key(name)
                    .then_some(())
                    .ok_or_else(|| {
                        Missing::Absent(format!(
                            "known GatewayClasses: {}",
                            list(self.classes.keys().map(String::as_str))
                        ))
                    })
            }
            Target::Namespace(name) => self
                .namespaces
                .contains(name.as_str())
                .then_some(())
                .ok_or_else(|| {
                    Missing::Absent(
                        "no Namespace manifest and no Gateway or HTTPRoute lives there".into(),
                    )
                }),
            Target::Gateway(key, section) => {
                let Some(g) = self.gateways.get(key) else {
                    return Err(Missing::Absent(format!(
                        "Gateways in {}: {}",
                        key.namespace,
                        in_namespace(self.gateways, key)
                    )));
                };
                let own = || g.listeners.iter().filter(|l| l.set.is_none());
                match section {
                    Some(s) if !own().any(|l| &l.name == s) => {
                        // A set's listener is targeted through its set
                        // (Envoy Gateway skips them here too).
                        if let Some(set) = g
                            .listeners
                            .iter()
                            .find(|l| &l.name == s)
                            .and_then(|l| l.set.as_ref())
                        {
                            return Err(Missing::Absent(format!(
                                "{s} is a listener of {set}; target it as {{group: {}, kind: {}, name: {}, sectionName: {s}}}",
                                set.kind.group(),
                                set.kind.name(),
                                set.key.name
                            )));
                        }
                        Err(Missing::Absent(format!(
                            "listeners of Gateway {key}: {}",
                            list(own().map(|l| l.name.as_str()))
                        )))
                    }
                    _ => Ok(()),
                }
            }
            Target::ListenerSet(..) => Ok(()),
            Target::Route(kind, key, section) => {
                let routes = match kind {
                    RouteKind::Http => self.routes,
                    RouteKind::Grpc => self.grpc_routes,
                };
                let Some(r) = routes.get(key) else {
                    return Err(Missing::Absent(format!(
                        "{}s in {}: {}",
                        kind.name(),
                        key.namespace,
                        in_namespace(routes, key)
                    )));
                };
                match section {
                    Some(s) if !r.rules.iter().any(|rule| rule.name.as_ref() == Some(s)) => {
                        Err(Missing::Absent(format!(
                            "named rules of {}: {}",
                            r.object(),
                            list(r.rules.iter().filter_map(|rule| rule.name.as_deref()))
                        )))
                    }
                    _ => Ok(()),
                }
            }
        }
    }
}

impl Known<'_> {
    /// A ListenerSet target exists when the set is attached to its Gateway
    /// and, with a sectionName, that listener is not Conflicted
    /// (`TargetNotFound` otherwise, the hint saying which).
    fn check_set(&self, set: &SetRef, section: Option<&str>) -> Result<(), Missing> {
        let Some(s) = self.listener_sets.get(set) else {
            let same: Vec<&str> = self
                .listener_sets
                .keys()
                .filter(|k| k.kind == set.kind && k.key.namespace == set.key.namespace)
                .map(|k| k.key.name.as_str())
                .collect();
            return Err(Missing::Absent(format!(
                "{}s in {}: {}",
                set.kind.name(),
                set.key.namespace,
                list(same.into_iter())
            )));
        };
        match &s.state {
            SetState::Attached => {}
            SetState::Detached(why) => {
                return Err(Missing::Unusable(format!("{set} is not attached: {why}")))
            }
            SetState::Dropped(why) => {
                return Err(Missing::Unusable(format!("{set} is dropped: {why}")))
            }
        }
        let Some(section) = section else {
            return Ok(());
        };
        if let Some((_, why)) = s.conflicted.iter().find(|(n, _)| n == section) {
            return Err(Missing::Unusable(format!(
                "listener {section} of {set} is Conflicted ({why})"
            )));
        }
        if s.listeners.iter().any(|l| l.name == section) {
            return Ok(());
        }
        Err(Missing::Absent(format!(
            "listeners of {set}: {}",
            list(s.listeners.iter().map(|l| l.name.as_str()))
        )))
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
