//! [`parse_each`] for a caller that hands in mostly the same documents
//! round after round (the controller, whose documents are shared between
//! rounds): each document is read once, alone, and what it gave is kept
//! while the caller keeps handing in that same document (the same `Arc`).
//! A round assembles what each document gave and then runs the passes that
//! relate objects to each other ([`super::relate`]), so its reading costs
//! what changed plus a copy. Pure: documents in, [`Inputs`] out.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::{parse_each, read_doc, relate, Inputs};
use crate::source::SourceDoc;

/// What each document read alone gave, by the document's address; the
/// entry holds the document, so the address cannot be reused while it is
/// remembered.
#[derive(Debug, Default)]
pub struct ParseCache {
    read: HashMap<usize, (Arc<SourceDoc>, Inputs)>,
}

/// [`parse_each`] of `docs`, reading only documents `cache` has not seen;
/// the cache then holds exactly these documents. The result is the one
/// [`parse_each`] gives: when two documents define the same object (which
/// reading alone cannot see, and whose "defined twice" diagnostic depends
/// on their order), every document is read again as [`parse_each`] does.
pub fn parse_cached<'a>(
    docs: impl IntoIterator<Item = &'a Arc<SourceDoc>>,
    cache: &mut ParseCache,
) -> Inputs {
    let mut seen = HashMap::with_capacity(cache.read.len());
    let mut inputs = Inputs::default();
    let mut order = Vec::new();
    let mut clash = false;
    for doc in docs {
        let id = Arc::as_ptr(doc) as usize;
        let entry = cache.read.remove(&id).unwrap_or_else(|| {
            let mut alone = Inputs::default();
            read_doc(doc, &mut alone);
            (doc.clone(), alone)
        });
        clash = clash || !add(&mut inputs, &entry.1);
        order.push(doc.clone());
        seen.insert(id, entry);
    }
    cache.read = seen;
    if clash {
        return parse_each(order.iter().map(|d| &**d));
    }
    relate(inputs)
}

/// Adds what one document gave; false when an object it defines is
/// already there.
fn add(inputs: &mut Inputs, alone: &Inputs) -> bool {
    inputs.diagnostics.extend(alone.diagnostics.iter().cloned());
    for (what, (count, first)) in &alone.skipped {
        let seen = inputs
            .skipped
            .entry(what.clone())
            .or_insert((0, first.clone()));
        seen.0 += count;
    }
    let mut fits = add_all(&mut inputs.classes, &alone.classes)
        && add_all(&mut inputs.namespaces, &alone.namespaces)
        && add_all(&mut inputs.gateways, &alone.gateways)
        && add_all(&mut inputs.routes, &alone.routes)
        && add_all(&mut inputs.grpc_routes, &alone.grpc_routes)
        && add_all(&mut inputs.listener_sets, &alone.listener_sets);
    for policy in &alone.policies {
        let id = (
            policy.kind,
            policy.meta.namespace.clone(),
            policy.meta.name.clone(),
        );
        if inputs.policy_ids.contains_key(&id) {
            fits = false;
            continue;
        }
        inputs.policy_ids.insert(id, inputs.policies.len());
        inputs.policies.push(policy.clone());
    }
    fits
}

fn add_all<K: Ord + Clone, V: Clone>(into: &mut BTreeMap<K, V>, from: &BTreeMap<K, V>) -> bool {
    for (key, value) in from {
        if into.contains_key(key) {
            return false;
        }
        into.insert(key.clone(), value.clone());
    }
    true
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{parse_cached, ParseCache};
    use crate::parse::parse_each;
    use crate::source::{Origin, SourceDoc};

    fn docs(texts: &[&str]) -> Vec<Arc<SourceDoc>> {
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
                Arc::new(SourceDoc { origin, value })
            })
            .collect()
    }

    const GATEWAY: &str = "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: edge, namespace: shop}\nspec: {gatewayClassName: c, listeners: [{name: http, protocol: HTTP, port: 80}]}";
    const ROUTE: &str = "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r, namespace: shop}\nspec: {parentRefs: [{name: edge}], rules: [{}]}";
    const POLICY: &str = "apiVersion: policy.attache.dev/v1alpha1\nkind: RoutePolicy\nmetadata: {name: p, namespace: shop}\nspec: {targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: r}], defaults: {timeouts: {request: 5s}}}";
    const BAD_POLICY: &str = "apiVersion: policy.attache.dev/v1alpha1\nkind: RoutePolicy\nmetadata: {name: q, namespace: shop}\nspec: {targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: r}], defaults: {timeouts: {request: soon}}}";
    const SERVICE: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s, namespace: shop}";

    /// Equal as far as Debug shows, but for the reading-time index of
    /// policies (a HashMap: its order is random; stale after reading).
    fn same(docs: &[Arc<SourceDoc>], cache: &mut ParseCache) {
        let shown = |mut inputs: crate::Inputs| {
            inputs.policy_ids.clear();
            format!("{inputs:?}")
        };
        let cached = shown(parse_cached(docs, cache));
        let fresh = shown(parse_each(docs.iter().map(|d| &**d)));
        assert_eq!(cached, fresh);
    }

    #[test]
    fn reading_from_the_cache_gives_what_reading_everything_gives() {
        let mut cache = ParseCache::default();
        let first = docs(&[GATEWAY, ROUTE, POLICY, BAD_POLICY, SERVICE, SERVICE]);
        same(&first, &mut cache);
        assert_eq!(cache.read.len(), 6);
        // The same documents again: nothing read, the same result.
        same(&first, &mut cache);
        // One document replaced, one gone: the cache follows.
        let mut next = first.clone();
        next[2] = docs(&[BAD_POLICY.replace("name: q", "name: p").as_str()])[0].clone();
        next.remove(5);
        same(&next, &mut cache);
        assert_eq!(cache.read.len(), 5);
        assert!(!cache.read.contains_key(&(Arc::as_ptr(&first[2]) as usize)));
    }

    #[test]
    fn an_object_defined_twice_is_reported_as_reading_everything_reports_it() {
        let mut cache = ParseCache::default();
        let twice = docs(&[ROUTE, GATEWAY, ROUTE, POLICY, POLICY]);
        same(&twice, &mut cache);
        let result = parse_cached(&twice, &mut cache);
        let defined_twice = result
            .diagnostics
            .iter()
            .filter(|d| d.to_string().contains("defined twice"))
            .count();
        assert_eq!(defined_twice, 2);
    }
}
