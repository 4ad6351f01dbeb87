//! [`parse_each`] in two halves, for a caller that keeps what each document
//! gave between rounds (the controller, which reads an object once per
//! resourceVersion): [`Pieces::read`] reads one document alone, and
//! [`assemble`] puts the pieces of every document together in document
//! order and runs the passes that relate objects to each other
//! ([`super::relate`]). The caller then keeps the pieces, not the document:
//! what reading needed of it is in them. Pure: documents in, [`Inputs`] out.
//!
//! [`parse_each`]: super::parse_each

use std::collections::BTreeMap;

use super::{duplicate, read_doc, relate, Inputs};
use crate::model::Meta;
use crate::source::SourceDoc;

/// What one document gave when read alone: at most one object, the
/// diagnostics reading it raised, and the note that its kind is skipped.
#[derive(Debug, Clone, Default)]
pub struct Pieces {
    alone: Inputs,
}

impl Pieces {
    /// Reads one document, as [`super::parse_each`] reads each.
    pub fn read(doc: &SourceDoc) -> Pieces {
        let mut alone = Inputs::default();
        read_doc(doc, &mut alone);
        Pieces { alone }
    }
}

/// What [`super::parse_each`] gives for the documents whose pieces these
/// are, in the same order. Reading alone cannot see an object defined
/// twice; every reader checks that last, after every other diagnostic of
/// the document, and keeps the first: so does this, with the same
/// "defined twice" error in the same place.
pub fn assemble<'a>(pieces: impl IntoIterator<Item = &'a Pieces>) -> Inputs {
    let mut inputs = Inputs::default();
    for piece in pieces {
        add(&mut inputs, &piece.alone);
    }
    relate(inputs)
}

/// Adds what one document gave: its diagnostics, then each object it
/// defines unless one of the same kind and name is already there.
fn add(inputs: &mut Inputs, alone: &Inputs) {
    inputs.diagnostics.extend(alone.diagnostics.iter().cloned());
    for (what, (count, first)) in &alone.skipped {
        let seen = inputs
            .skipped
            .entry(what.clone())
            .or_insert((0, first.clone()));
        seen.0 += count;
    }
    let found = &mut inputs.diagnostics;
    add_all(&mut inputs.classes, &alone.classes, found, |c| {
        ("GatewayClass".into(), c.meta.name.clone(), &c.meta)
    });
    add_all(&mut inputs.namespaces, &alone.namespaces, found, |n| {
        ("Namespace".into(), n.meta.name.clone(), &n.meta)
    });
    add_all(&mut inputs.gateways, &alone.gateways, found, |g| {
        ("Gateway".into(), g.key.to_string(), &g.meta)
    });
    for routes in [
        (&mut inputs.routes, &alone.routes),
        (&mut inputs.grpc_routes, &alone.grpc_routes),
    ] {
        add_all(routes.0, routes.1, found, |r| {
            (r.kind.name().into(), r.key.to_string(), &r.meta)
        });
    }
    add_all(
        &mut inputs.listener_sets,
        &alone.listener_sets,
        found,
        |s| (s.id.kind.name().into(), s.id.key.to_string(), &s.meta),
    );
    for policy in &alone.policies {
        // The same rule as a whole parse: the first stays, a later one is
        // reported "defined twice".
        super::policy::push_policy(inputs, policy.clone());
    }
}

/// Adds each object of `from` to `into`; one already there stays, and the
/// later one is reported as its reader reports it (`named` gives the kind,
/// the name as the message shows it, and the metadata).
fn add_all<K: Ord + Clone, V: Clone>(
    into: &mut BTreeMap<K, V>,
    from: &BTreeMap<K, V>,
    found: &mut Vec<crate::diagnostic::Diagnostic>,
    named: impl Fn(&V) -> (String, String, &Meta),
) {
    for (key, value) in from {
        match into.get(key) {
            Some(first) => {
                let (kind, name, later) = named(value);
                let first = &named(first).2.origin;
                found.push(duplicate(&kind, &name, first, &later.origin));
            }
            None => {
                into.insert(key.clone(), value.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{assemble, Pieces};
    use crate::parse::parse_each;
    use crate::source::{Origin, SourceDoc};

    fn docs(texts: &[&str]) -> Vec<SourceDoc> {
        texts
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let value: serde_json::Value = serde_yaml_ng::from_str(text).unwrap_or_default();
                let origin = Origin {
                    file: format!("doc{i}"),
                    document: 1,
                    item: None,
                };
                SourceDoc { origin, value }
            })
            .collect()
    }

    const CLASS: &str = "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: c}\nspec: {controllerName: x/y}";
    const GATEWAY: &str = "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: edge, namespace: shop}\nspec: {gatewayClassName: c, listeners: [{name: http, protocol: HTTP, port: 80}]}";
    const ROUTE: &str = "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r, namespace: shop}\nspec: {parentRefs: [{name: edge}], rules: [{}]}";
    const GRPC_ROUTE: &str = "apiVersion: gateway.networking.k8s.io/v1\nkind: GRPCRoute\nmetadata: {name: r, namespace: shop}\nspec: {parentRefs: [{name: edge}], rules: [{}]}";
    const SET: &str = "apiVersion: gateway.networking.k8s.io/v1\nkind: ListenerSet\nmetadata: {name: s, namespace: shop}\nspec: {parentRef: {name: edge}, listeners: [{name: extra, protocol: HTTP, port: 81}]}";
    const POLICY: &str = "apiVersion: policy.attache.dev/v1alpha1\nkind: RoutePolicy\nmetadata: {name: p, namespace: shop}\nspec: {targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: r}], defaults: {timeouts: {request: 5s}}}";
    const BAD_POLICY: &str = "apiVersion: policy.attache.dev/v1alpha1\nkind: RoutePolicy\nmetadata: {name: q, namespace: shop}\nspec: {targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: r}], defaults: {timeouts: {request: soon}}}";
    const SERVICE: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s, namespace: shop}";

    /// Equal as far as Debug shows, but for the reading-time index of
    /// policies (a HashMap: its order is random; stale after reading).
    fn same(docs: &[SourceDoc]) -> crate::Inputs {
        let shown = |mut inputs: crate::Inputs| {
            inputs.policy_ids.clear();
            format!("{inputs:?}")
        };
        let pieces: Vec<Pieces> = docs.iter().map(Pieces::read).collect();
        let assembled = assemble(&pieces);
        let fresh = parse_each(docs);
        assert_eq!(shown(assembled.clone()), shown(fresh));
        assembled
    }

    #[test]
    fn assembling_pieces_gives_what_reading_everything_gives() {
        let all = docs(&[
            CLASS, GATEWAY, ROUTE, GRPC_ROUTE, SET, POLICY, BAD_POLICY, SERVICE, SERVICE,
        ]);
        let inputs = same(&all);
        assert_eq!(inputs.routes.len() + inputs.grpc_routes.len(), 2);
        assert_eq!(inputs.policies.len(), 2);
        // One document replaced by another of the same name, one gone.
        let mut next = all.clone();
        next[5] = docs(&[BAD_POLICY.replace("name: q", "name: p").as_str()]).remove(0);
        next.remove(8);
        same(&next);
    }

    #[test]
    fn an_object_defined_twice_is_reported_as_reading_everything_reports_it() {
        let twice = docs(&[
            ROUTE, CLASS, GATEWAY, ROUTE, POLICY, CLASS, POLICY, SET, GATEWAY, SET, BAD_POLICY,
            BAD_POLICY,
        ]);
        let inputs = same(&twice);
        let defined_twice: Vec<String> = inputs
            .diagnostics
            .iter()
            .map(ToString::to_string)
            .filter(|d| d.contains("defined twice"))
            .collect();
        assert_eq!(defined_twice.len(), 6, "{defined_twice:#?}");
        // The later one is named, the first kept.
        assert!(defined_twice[0].contains("doc3"), "{}", defined_twice[0]);
        assert!(defined_twice[0].contains("doc0"), "{}", defined_twice[0]);
    }

    #[test]
    fn assembling_shares_each_object_and_copies_only_what_relating_changes() {
        const ABSENT: &str = "apiVersion: policy.attache.dev/v1alpha1\nkind: RoutePolicy\nmetadata: {name: gone, namespace: shop}\nspec: {targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: nowhere}], defaults: {timeouts: {request: 5s}}}";
        let takes_sets = GATEWAY.replace(
            "listeners:",
            "allowedListeners: {namespaces: {from: Same}}, listeners:",
        );
        let all = docs(&[CLASS, &takes_sets, ROUTE, SET, POLICY, ABSENT]);
        let pieces: Vec<Pieces> = all.iter().map(Pieces::read).collect();
        let inputs = assemble(&pieces);
        let route = &inputs.routes.values().next().unwrap();
        assert!(Arc::ptr_eq(
            route,
            pieces[2].alone.routes.values().next().unwrap()
        ));
        let [found, absent] = ["p", "gone"].map(|name| {
            inputs
                .policies
                .iter()
                .find(|p| p.meta.name == name)
                .unwrap()
        });
        assert!(Arc::ptr_eq(found, &pieces[4].alone.policies[0]));
        // The target not found is cleared on a copy; the piece keeps what
        // reading gave, for the next round.
        assert!(!Arc::ptr_eq(absent, &pieces[5].alone.policies[0]));
        assert_eq!(absent.targets[0].resolved, None);
        assert!(pieces[5].alone.policies[0].targets[0].resolved.is_some());
        // The Gateway took the set's listener: a copy, the piece unchanged.
        let gateway = inputs.gateways.values().next().unwrap();
        assert_eq!(gateway.listeners.len(), 2);
        assert_eq!(
            pieces[1]
                .alone
                .gateways
                .values()
                .next()
                .unwrap()
                .listeners
                .len(),
            1
        );
    }
}
