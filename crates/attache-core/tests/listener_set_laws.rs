//! Property tests over random Gateways with ListenerSets (docs/semantics.md,
//! "ListenerSet"): sets of either kind in a few namespaces with colliding
//! names, listeners that share names, ports and sometimes hostnames (so
//! some are Conflicted), a route through each set and a policy on each set
//! or one of its listeners. Whatever the world: entry names are unique and
//! taken apart into the parts they were built from, and a policy on a set
//! never reaches another set's routes or the Gateway's own.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeSet;

use attache_core::contract::EntryName;
use common::*;
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct Set {
    x: bool,
    namespace: u8,
    name: u8,
    created: u8,
    /// (name, port, hostname) per listener.
    listeners: Vec<(u8, u8, Option<u8>)>,
    /// The policy's sectionName: none, or one of the listener names.
    section: Option<u8>,
}

fn set() -> impl Strategy<Value = Set> {
    (
        any::<bool>(),
        0..3u8,
        0..2u8,
        0..3u8,
        proptest::collection::vec((0..2u8, 0..3u8, proptest::option::of(0..3u8)), 1..3),
        proptest::option::of(0..2u8),
    )
        .prop_map(|(x, namespace, name, created, listeners, section)| Set {
            x,
            namespace,
            name,
            created,
            listeners,
            section,
        })
}

const NAMESPACES: [&str; 3] = ["team-a", "team-b", "infra"];
const LISTENERS: [&str; 2] = ["http", "web"];

fn kind(s: &Set) -> (&'static str, &'static str) {
    if s.x {
        ("gateway.networking.x-k8s.io", "XListenerSet")
    } else {
        ("gateway.networking.k8s.io", "ListenerSet")
    }
}

fn yaml(sets: &[Set]) -> String {
    let mut out = String::from(
        r#"
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: edge, namespace: infra}
spec:
  gatewayClassName: gc
  allowedListeners: {namespaces: {from: All}}
  listeners:
  - {name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: home, namespace: infra}
spec:
  parentRefs: [{name: edge}]
  rules: [{backendRefs: [{name: svc, port: 80}]}]
---
apiVersion: policy.attache.dev/v1alpha1
kind: RoutePolicy
metadata: {name: gw, namespace: infra}
spec:
  targetRef: {group: gateway.networking.k8s.io, kind: Gateway, name: edge}
  defaults: {timeouts: {request: 99s}}
"#,
    );
    for (i, s) in sets.iter().enumerate() {
        let (group, kind) = kind(s);
        let ns = NAMESPACES[s.namespace as usize];
        let name = format!("ls-{}", s.name);
        let version = if s.x { "v1alpha1" } else { "v1" };
        let listeners: Vec<String> = s
            .listeners
            .iter()
            .map(|(n, port, host)| {
                let host = host
                    .map(|h| format!(", hostname: h{h}.example.com"))
                    .unwrap_or_default();
                format!(
                    "{{name: {}, port: {}, protocol: HTTP{host}, allowedRoutes: {{namespaces: {{from: All}}}}}}",
                    LISTENERS[*n as usize],
                    8080 + u16::from(*port)
                )
            })
            .collect();
        let section = s
            .section
            .map(|n| format!(", sectionName: {}", LISTENERS[n as usize]))
            .unwrap_or_default();
        out.push_str(&format!(
            r#"---
apiVersion: {group}/{version}
kind: {kind}
metadata: {{name: {name}, namespace: {ns}, creationTimestamp: "2026-01-0{}T00:00:00Z"}}
spec:
  parentRef: {{name: edge, namespace: infra}}
  listeners: [{}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: app-{i}, namespace: {ns}}}
spec:
  parentRefs: [{{group: {group}, kind: {kind}, name: {name}}}]
  rules: [{{backendRefs: [{{name: svc, port: 80}}]}}]
---
apiVersion: policy.attache.dev/v1alpha1
kind: RoutePolicy
metadata: {{name: p-{i}, namespace: {ns}}}
spec:
  targetRef: {{group: {group}, kind: {kind}, name: {name}{section}}}
  defaults: {{timeouts: {{request: {}s}}}}
"#,
            s.created + 1,
            listeners.join(", "),
            i + 1,
        ));
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Entry names are unique, and each splits back into the entry's own
    /// listener, set, route and rule.
    #[test]
    fn entry_names_are_unique_across_sets(sets in proptest::collection::vec(set(), 0..5)) {
        let r = resolve_yaml(&yaml(&sets), "infra/edge");
        let routes = &r.resolution.document.routes;
        let unique: BTreeSet<&str> = routes.iter().map(|e| e.name.as_str()).collect();
        prop_assert_eq!(unique.len(), routes.len(), "{:?}", names(&r));
        for e in routes {
            let parts = EntryName::split(&e.name);
            prop_assert_eq!(parts.listener, e.listener.as_str());
            prop_assert_eq!(parts.namespace, e.route_namespace.as_str());
            prop_assert_eq!(parts.route, e.route_name.as_str());
            prop_assert_eq!(parts.rule, e.rule.as_str());
            let set = parts.set.map(|s| format!("{}/{}", s.namespace, s.name));
            prop_assert_eq!(set, e.listener_set.clone());
            prop_assert_eq!(parts.to_string(), e.name.clone());
        }
    }

    /// A set's policy supplies a rule only through that set's own
    /// listeners: every other rule's timeout comes from the Gateway's
    /// policy or from its own set's.
    #[test]
    fn a_policy_on_a_set_never_reaches_another_sets_routes(sets in proptest::collection::vec(set(), 0..5)) {
        let r = resolve_yaml(&yaml(&sets), "infra/edge");
        for e in &r.resolution.document.routes {
            let source = e.sources.get("timeouts.requestMs").cloned().unwrap_or_default();
            match &e.listener_set {
                None => prop_assert!(source.contains("@ Gateway infra/edge"), "{}: {}", e.name, source),
                Some(set) => {
                    let kind = e.listener_set_kind.as_deref().unwrap_or("ListenerSet");
                    let own = format!("@ {kind} {set}");
                    let ok = source.contains("@ Gateway infra/edge)")
                        || source.contains(&format!("{own})"))
                        || source.contains(&format!("{own} listener {})", e.listener));
                    prop_assert!(ok, "{}: {}", e.name, source);
                    // The policy of that name lives in the set's namespace.
                    if !source.contains("@ Gateway") {
                        let ns = set.split('/').next().unwrap_or_default();
                        prop_assert!(source.starts_with(&format!("RoutePolicy {ns}/")), "{}", source);
                    }
                }
            }
        }
    }

    /// The shared upper fold (memoised per listener key) equals folding
    /// every level per rule, values and provenance alike, with sets.
    #[test]
    fn shared_upper_fold_equals_the_full_fold_with_sets(sets in proptest::collection::vec(set(), 0..5)) {
        let inputs = attache_core::parse(&docs(&yaml(&sets)));
        let gw = key("infra/edge");
        let shared = attache_core::resolve(&inputs, &gw).unwrap().resolution.document;
        let full = attache_core::resolve::resolve_unshared(&inputs, &gw).unwrap();
        prop_assert_eq!(shared, full);
    }

    /// Listener precedence (and so which of two conflicting listeners keeps
    /// its routes) comes from the objects, not from the order they are read
    /// in.
    #[test]
    fn the_order_of_documents_does_not_matter(sets in proptest::collection::vec(set(), 0..5)) {
        // Two objects of one kind and name: the first read is kept, the one
        // case where order matters (docs/semantics.md, "Duplicates").
        let ids: BTreeSet<(bool, u8, u8)> = sets.iter().map(|s| (s.x, s.namespace, s.name)).collect();
        prop_assume!(ids.len() == sets.len());
        let original = docs(&yaml(&sets));
        let mut reversed = original.clone();
        reversed.reverse();
        let gw = key("infra/edge");
        let a = attache_core::resolve(&attache_core::parse(&original), &gw).unwrap().resolution.document;
        let b = attache_core::resolve(&attache_core::parse(&reversed), &gw).unwrap().resolution.document;
        prop_assert_eq!(a, b);
    }
}
