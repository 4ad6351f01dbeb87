//! Which objects each Gateway's resolution can depend on, and a fingerprint
//! of them: the incremental reconcile resolves a Gateway again only when
//! its fingerprint changed (docs/controller.md, "Incremental reconcile").
//! Pure: the parsed input and the objects' content versions in, a number
//! per Gateway out.
//!
//! An object is in a Gateway's scope when it can reach the Gateway:
//! - the Gateway itself, its ListenerSets (by their parentRef);
//! - a GatewayClass: every Gateway of that class;
//! - a route: the Gateways its parentRefs name, directly or through a
//!   ListenerSet, and those of every route that delegates to it or that it
//!   names as a parent, transitively;
//! - a policy: the Gateways its targets reach (targetRefs, and selectors
//!   once resolved into targets), those beyond the 16-ancestor limit too.
//!
//! A Namespace (its labels select routes and ListenerSets), a policy
//! attached to a Namespace and a policy with selectors are in every
//! Gateway's scope: over-approximated, never under. The scope is computed
//! afresh each round from the current objects, and the fingerprint covers
//! the set of objects and each one's version. So an object that joins,
//! leaves or changes in a Gateway's scope changes the fingerprint: a
//! deleted object was in the old scope, a new one is in the new one.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{Hash, Hasher};

use attache_core::model::kinds::{RouteKind, HTTP_ROUTE};
use attache_core::model::Target;
use attache_core::source::Origin;
use attache_core::topology::ObjectKey;
use attache_core::Inputs;

/// Each document's content version (`crate::content_hash::content_version`),
/// by where it was read from.
pub type Versions = HashMap<Origin, u64>;

/// A hash of the objects in a Gateway's scope and of their versions.
pub type Fingerprint = u64;

/// The Gateways an object can reach (borrowed from the input: a round
/// over 10,000 routes copies no key).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reach<'a> {
    Everywhere,
    Gateways(BTreeSet<&'a ObjectKey>),
}

/// The fingerprint of every Gateway of `inputs`.
pub fn fingerprints(inputs: &Inputs, versions: &Versions) -> BTreeMap<ObjectKey, Fingerprint> {
    let mut scopes: BTreeMap<&ObjectKey, Vec<&Origin>> =
        inputs.gateways.keys().map(|k| (k, Vec::new())).collect();
    let mut everywhere: Vec<&Origin> = Vec::new();
    for (origin, reach) in reaches(inputs) {
        match reach {
            Reach::Everywhere => everywhere.push(origin),
            Reach::Gateways(gateways) => {
                for gateway in gateways {
                    if let Some(scope) = scopes.get_mut(gateway) {
                        scope.push(origin);
                    }
                }
            }
        }
    }
    let shared = hash_scope(&everywhere, versions, 0);
    scopes
        .into_iter()
        .map(|(key, scope)| (key.clone(), hash_scope(&scope, versions, shared)))
        .collect()
}

/// Every object of `inputs` with where it reaches.
fn reaches(inputs: &Inputs) -> Vec<(&Origin, Reach<'_>)> {
    let routes = RouteGraph::new(inputs);
    let mut out: Vec<(&Origin, Reach)> = Vec::new();
    for class in inputs.classes.values() {
        let name = &class.meta.name;
        out.push((&class.meta.origin, Reach::Gateways(of_class(inputs, name))));
    }
    for namespace in inputs.namespaces.values() {
        out.push((&namespace.meta.origin, Reach::Everywhere));
    }
    for gateway in inputs.gateways.values() {
        let only = BTreeSet::from([&gateway.key]);
        out.push((&gateway.meta.origin, Reach::Gateways(only)));
    }
    for set in inputs.listener_sets.values() {
        let parent = BTreeSet::from([&set.parent]);
        out.push((&set.meta.origin, Reach::Gateways(parent)));
    }
    for route in inputs.all_routes() {
        let reach = routes.reach(route.kind, &route.key);
        out.push((&route.meta.origin, Reach::Gateways(reach)));
    }
    for policy in &inputs.policies {
        let targets = policy.targets.iter().chain(&policy.beyond_limit);
        let mut reach = Reach::Gateways(BTreeSet::new());
        if !policy.selectors.is_empty() {
            reach = Reach::Everywhere;
        }
        for target in targets.filter_map(|t| t.resolved.as_ref()) {
            let found = match target {
                Target::Namespace(_) => None,
                Target::GatewayClass(name) => Some(of_class(inputs, name)),
                // A Gateway the input lacks has no scope to join.
                Target::Gateway(key, _) => Some(
                    inputs
                        .gateways
                        .get_key_value(key)
                        .map(|(key, _)| key)
                        .into_iter()
                        .collect(),
                ),
                Target::Route(kind, key, _) => Some(routes.reach(*kind, key)),
                Target::ListenerSet(set, _) => Some(
                    inputs
                        .listener_sets
                        .get(set)
                        .map(|s| &s.parent)
                        .into_iter()
                        .collect(),
                ),
            };
            reach = match (reach, found) {
                (Reach::Gateways(mut all), Some(more)) => {
                    all.extend(more);
                    Reach::Gateways(all)
                }
                _ => Reach::Everywhere,
            };
        }
        out.push((&policy.meta.origin, reach));
    }
    out
}

fn of_class<'a>(inputs: &'a Inputs, class: &str) -> BTreeSet<&'a ObjectKey> {
    inputs
        .gateways
        .values()
        .filter(|g| g.class == class)
        .map(|g| &g.key)
        .collect()
}

/// Routes and how they lead to Gateways: each route's own Gateways (by
/// parentRef, directly or through a ListenerSet) and the routes above it
/// (those that delegate to it, and HTTPRoutes it names as parents). Keys
/// are borrowed from the input; a parentRef naming a Gateway or route the
/// input lacks leads nowhere, so it is left out.
struct RouteGraph<'a> {
    direct: HashMap<RouteId<'a>, BTreeSet<&'a ObjectKey>>,
    above: HashMap<RouteId<'a>, BTreeSet<&'a ObjectKey>>,
}

type RouteId<'a> = (RouteKind, &'a ObjectKey);

impl<'a> RouteGraph<'a> {
    fn new(inputs: &'a Inputs) -> Self {
        let mut direct: HashMap<RouteId<'a>, BTreeSet<&'a ObjectKey>> = HashMap::new();
        let mut above: HashMap<RouteId<'a>, BTreeSet<&'a ObjectKey>> = HashMap::new();
        // Looked up by borrowed names: every route's parentRefs, each round.
        let gateways: HashMap<(&str, &str), &'a ObjectKey> = inputs
            .gateways
            .keys()
            .map(|k| ((k.namespace.as_str(), k.name.as_str()), k))
            .collect();
        for route in inputs.all_routes() {
            let id = (route.kind, &route.key);
            for parent in &route.parent_refs {
                let named = || ObjectKey {
                    namespace: parent.namespace.clone(),
                    name: parent.name.clone(),
                };
                if parent.is_gateway() {
                    let name = (parent.namespace.as_str(), parent.name.as_str());
                    if let Some(gateway) = gateways.get(&name) {
                        direct.entry(id).or_default().insert(*gateway);
                    }
                } else if let Some(set) = parent.set() {
                    if let Some(set) = inputs.listener_sets.get(&set) {
                        direct.entry(id).or_default().insert(&set.parent);
                    }
                } else if HTTP_ROUTE.is(&parent.group, &parent.kind) {
                    if let Some((up, _)) = inputs.routes.get_key_value(&named()) {
                        above.entry(id).or_default().insert(up);
                    }
                }
            }
            for rule in &route.rules {
                for child in &rule.delegates {
                    let child = (RouteKind::Http, child);
                    above.entry(child).or_default().insert(&route.key);
                }
            }
        }
        RouteGraph { direct, above }
    }

    /// The Gateways of the route and of every route above it.
    fn reach(&self, kind: RouteKind, key: &'a ObjectKey) -> BTreeSet<&'a ObjectKey> {
        // Most routes have no route above them: their own Gateways.
        if !self.above.contains_key(&(kind, key)) {
            return self.direct.get(&(kind, key)).cloned().unwrap_or_default();
        }
        let mut found = BTreeSet::new();
        let mut seen = BTreeSet::from([(kind, key)]);
        let mut todo = vec![(kind, key)];
        while let Some(id) = todo.pop() {
            found.extend(self.direct.get(&id).into_iter().flatten().copied());
            for up in self.above.get(&id).into_iter().flatten() {
                // Only HTTPRoutes delegate, and only HTTPRoutes are named
                // as a route's parent.
                let up = (RouteKind::Http, *up);
                if seen.insert(up) {
                    todo.push(up);
                }
            }
        }
        found
    }
}

/// A hash of the objects and their versions, seeded with `seed`. Each
/// object is hashed alone (where it was read, its version), and those
/// hashes are hashed in sorted order: the same scope gives the same
/// fingerprint whatever order the objects came in. Sorting numbers, not
/// the origins' text, took most of this pass's time off at 20,000 objects.
fn hash_scope(scope: &[&Origin], versions: &Versions, seed: u64) -> Fingerprint {
    let mut each: Vec<u64> = scope
        .iter()
        .map(|origin| {
            let mut hasher = std::hash::DefaultHasher::new();
            origin.hash(&mut hasher);
            versions.get(*origin).hash(&mut hasher);
            hasher.finish()
        })
        .collect();
    each.sort_unstable();
    let mut hasher = std::hash::DefaultHasher::new();
    seed.hash(&mut hasher);
    each.hash(&mut hasher);
    hasher.finish()
}
