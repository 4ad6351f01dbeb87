//! Everything the resolver read, validated and indexed: what parse writes
//! and attach, fold, status and resolve read. It sits in the model so that
//! every layer above can name it without reaching into `parse`.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::diagnostic::Diagnostic;
use crate::model::kinds::RouteKind;
use crate::model::{
    Gateway, GatewayClass, HttpRoute, ListenerSet, Namespace, Policy, PolicyKind, Priority, SetRef,
    Target,
};
use crate::source::Origin;
use crate::topology::ObjectKey;

/// Everything the resolver read, validated and indexed. Each object is
/// shared (`Arc`): the controller assembles a round's input from pieces it
/// keeps between rounds (`crate::parse::assemble`), and a copy of 10,000
/// routes and policies per round was most of that round's parse time. A
/// pass that changes an object copies that one only (`Arc::make_mut`).
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    pub classes: BTreeMap<String, Arc<GatewayClass>>,
    pub namespaces: BTreeMap<String, Arc<Namespace>>,
    pub gateways: BTreeMap<ObjectKey, Arc<Gateway>>,
    /// HTTPRoutes (the only kind a rule may delegate to).
    pub routes: BTreeMap<ObjectKey, Arc<HttpRoute>>,
    /// GRPCRoutes: apart, since an HTTPRoute may have the same name.
    pub grpc_routes: BTreeMap<ObjectKey, Arc<HttpRoute>>,
    /// Every ListenerSet read, attached or not (`SetState`).
    pub listener_sets: BTreeMap<SetRef, Arc<ListenerSet>>,
    /// Sorted by kind, namespace, name; invalid ones included.
    pub policies: Vec<Arc<Policy>>,
    /// Valid policies by the target they attach to, in precedence order.
    pub by_target: BTreeMap<Target, Vec<usize>>,
    /// Everything noticed while reading, in input order.
    pub diagnostics: Vec<Diagnostic>,
    /// Bounds on what resolving one Gateway may cost; the CLI sets them
    /// from its flags after parsing.
    pub limits: crate::limits::Limits,
    /// Reading-time index of `policies` for duplicate detection (stale
    /// after the final sort, which is why it is private).
    pub(crate) policy_ids: std::collections::HashMap<(PolicyKind, Option<String>, String), usize>,
    /// `apiVersion kind` not read, with count and first origin.
    pub(crate) skipped: BTreeMap<String, (usize, Origin)>,
}

impl Inputs {
    /// The priority annotation of a target object (default when the object
    /// has no manifest, e.g. a Namespace only implied by its contents).
    pub fn priority_of(&self, target: &Target) -> Priority {
        match target {
            Target::GatewayClass(name) => self.classes.get(name).map(|c| c.meta.priority),
            Target::Namespace(name) => self.namespaces.get(name).map(|n| n.meta.priority),
            Target::Gateway(key, _) => self.gateways.get(key).map(|g| g.meta.priority),
            Target::Route(kind, key, _) => self.routes_of(*kind).get(key).map(|r| r.meta.priority),
            Target::ListenerSet(set, _) => self.listener_sets.get(set).map(|s| s.meta.priority),
        }
        .unwrap_or_default()
    }

    /// The policy at `index` of [`Inputs::policies`] (what `by_target`
    /// lists).
    pub fn policy(&self, index: usize) -> Option<&Policy> {
        self.policies.get(index).map(|policy| &**policy)
    }

    /// The routes of one kind.
    pub fn routes_of(&self, kind: RouteKind) -> &BTreeMap<ObjectKey, Arc<HttpRoute>> {
        match kind {
            RouteKind::Http => &self.routes,
            RouteKind::Grpc => &self.grpc_routes,
        }
    }

    pub fn routes_of_mut(&mut self, kind: RouteKind) -> &mut BTreeMap<ObjectKey, Arc<HttpRoute>> {
        match kind {
            RouteKind::Http => &mut self.routes,
            RouteKind::Grpc => &mut self.grpc_routes,
        }
    }

    /// Every route of every kind: HTTPRoutes, then GRPCRoutes, each by
    /// namespace and name.
    pub fn all_routes(&self) -> impl Iterator<Item = &HttpRoute> {
        self.routes
            .values()
            .chain(self.grpc_routes.values())
            .map(|route| &**route)
    }

    /// Labels of a namespace as a selector sees them: the manifest's labels
    /// plus `kubernetes.io/metadata.name`, which Kubernetes always sets.
    pub fn namespace_labels(&self, name: &str) -> BTreeMap<String, String> {
        let mut labels = self
            .namespaces
            .get(name)
            .map(|n| n.meta.labels.clone())
            .unwrap_or_default();
        labels.insert("kubernetes.io/metadata.name".into(), name.to_string());
        labels
    }
}
