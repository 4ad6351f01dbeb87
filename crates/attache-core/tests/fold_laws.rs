//! Property tests of the fold's laws over random hierarchies: policies at
//! six levels (GatewayClass, Namespace, Gateway, listener, HTTPRoute, rule)
//! with defaults, overrides or plain settings, random weights and ages,
//! and the rule's own values.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use attache_core::contract::Document;
use attache_core::source::SourceDoc;
use attache_core::{parse, resolve};
use common::*;
use proptest::prelude::*;

const LEVELS: [At; 6] = [
    At::Class,
    At::Namespace,
    At::Gateway,
    At::Listener,
    At::Route,
    At::Rule,
];

#[derive(Debug, Clone)]
struct Pol {
    level: usize,
    /// 0 defaults, 1 overrides, 2 plain, 3 an Envoy Gateway
    /// BackendTrafficPolicy (with mergeType when `created` is even).
    stanza: u8,
    request: Option<u16>,
    attempts: Option<u8>,
    header: Option<(u8, u8)>,
    created: Option<u8>,
    weight: Option<i8>,
}

#[derive(Debug, Clone)]
struct World {
    policies: Vec<Pol>,
    inline_request: Option<u16>,
    inline_header: Option<(u8, u8)>,
    /// Priority annotation on the Gateway (plain policies there follow it).
    gateway_priority: Option<&'static str>,
}

fn pol(peers: bool) -> impl Strategy<Value = Pol> {
    (
        0..6usize,
        0..if peers { 4u8 } else { 3u8 },
        proptest::option::of(1..50u16),
        proptest::option::of(0..5u8),
        proptest::option::of((0..3u8, 0..3u8)),
        proptest::option::of(0..4u8),
        proptest::option::of(-1..2i8),
    )
        .prop_map(
            |(level, stanza, request, attempts, header, created, weight)| Pol {
                level,
                stanza,
                request,
                attempts,
                header,
                created,
                weight,
            },
        )
}

/// Never ShallowMergePreferParent: a shallow replace may drop a sibling
/// field and then lose its own, which the third law excludes by design.
fn world(priorities: bool) -> impl Strategy<Value = World> {
    world_of(priorities, false)
}

/// `peers`: BackendTrafficPolicies among the policies. Only the
/// shared-versus-full laws take them: Envoy Gateway's precedence lets a
/// policy that supplies nothing still keep a less specific one out, so
/// the removal law does not hold for them by design.
fn world_of(priorities: bool, peers: bool) -> impl Strategy<Value = World> {
    let prio = if priorities {
        prop_oneof![
            Just(None),
            Just(Some("DeepMergePreferChild")),
            Just(Some("DeepMergePreferParent"))
        ]
        .boxed()
    } else {
        Just(None).boxed()
    };
    (
        proptest::collection::vec(pol(peers), 0..10),
        proptest::option::of(1..50u16),
        proptest::option::of((0..3u8, 0..3u8)),
        prio,
    )
        .prop_map(
            |(policies, inline_request, inline_header, gateway_priority)| World {
                policies,
                inline_request,
                inline_header,
                gateway_priority,
            },
        )
}

fn settings(request: Option<u16>, attempts: Option<u8>, header: Option<(u8, u8)>) -> Vec<String> {
    let mut parts = Vec::new();
    if let Some(r) = request {
        parts.push(format!("timeouts: {{request: {r}s}}"));
    }
    if let Some(a) = attempts {
        parts.push(format!("retry: {{attempts: {a}}}"));
    }
    if let Some((n, v)) = header {
        parts.push(format!(
            "requestHeaderModifier: {{set: [{{name: x-h{n}, value: v{v}}}]}}"
        ));
    }
    parts
}

/// A BackendTrafficPolicy at the level (a Gateway at least: it cannot
/// target a GatewayClass or Namespace); it has no header settings.
fn backend_traffic_policy(i: usize, p: &Pol) -> String {
    let mut spec = Vec::new();
    if let Some(r) = p.request {
        spec.push(format!("  timeout: {{http: {{requestTimeout: {r}s}}}}"));
    }
    if let Some(a) = p.attempts {
        spec.push(format!("  retry: {{numRetries: {a}}}"));
    }
    if p.created.is_some_and(|c| c % 2 == 0) {
        spec.push("  mergeType: StrategicMerge".into());
    }
    let created = p
        .created
        .map(|c| format!("\n  creationTimestamp: \"2024-01-0{}T00:00:00Z\"", c + 1))
        .unwrap_or_default();
    format!(
        "---\napiVersion: gateway.envoyproxy.io/v1alpha1\nkind: BackendTrafficPolicy\nmetadata:\n  name: p{i:02}\n  namespace: appns{created}\nspec:\n  targetRefs: [{}]\n{}\n",
        LEVELS[p.level.max(2)].target_ref(),
        spec.join("\n")
    )
}

fn policy_doc(i: usize, p: &Pol) -> String {
    if p.stanza == 3 {
        return backend_traffic_policy(i, p);
    }
    let parts = settings(p.request, p.attempts, p.header);
    let body = match p.stanza {
        0 => format!("defaults: {{{}}}", parts.join(", ")),
        1 => format!("overrides: {{{}}}", parts.join(", ")),
        _ if parts.is_empty() => "defaults: {}".to_string(),
        _ => parts.join("\n  "),
    };
    let created = p.created.map(|c| format!("2024-01-0{}T00:00:00Z", c + 1));
    policy(
        &format!("p{i:02}"),
        LEVELS[p.level],
        &body,
        created.as_deref(),
        p.weight.map(i64::from),
    )
}

fn yaml(w: &World, skip: Option<usize>) -> String {
    let mut rule = Vec::new();
    if let Some(r) = w.inline_request {
        rule.push(format!("    timeouts: {{request: {r}s}}"));
    }
    if let Some((n, v)) = w.inline_header {
        rule.push(format!(
            "    filters:\n    - type: RequestHeaderModifier\n      requestHeaderModifier: {{set: [{{name: x-h{n}, value: inline{v}}}]}}"
        ));
    }
    let mut y = topology(&rule.join("\n"));
    if let Some(p) = w.gateway_priority {
        y = y.replace(
            "metadata: {name: gw, namespace: appns}",
            &format!("metadata: {{name: gw, namespace: appns, annotations: {{kgateway.dev/inherited-policy-priority: {p}}}}}"),
        );
    }
    for (i, p) in w.policies.iter().enumerate() {
        if Some(i) != skip {
            y.push_str(&policy_doc(i, p));
        }
    }
    y
}

fn document_of(docs: &[SourceDoc]) -> Document {
    let inputs = parse(docs);
    assert!(inputs.diagnostics.is_empty(), "{:?}", inputs.diagnostics);
    resolve(&inputs, &key("appns/gw"))
        .unwrap()
        .resolution
        .document
}

fn request_of(d: &Document) -> Option<u64> {
    d.routes[0]
        .settings
        .timeouts
        .as_ref()
        .and_then(|t| t.request_ms)
}

/// Precedence inside a level: higher weight, older (absent first), name.
fn rank(i: usize, p: &Pol) -> (i64, Option<u8>, bool, usize) {
    (
        -i64::from(p.weight.unwrap_or(0)),
        p.created,
        p.created.is_some(),
        i,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// An override at the least specific level wins its field (the
    /// top-ranked one when several overrides sit at that level).
    #[test]
    fn least_specific_override_wins(w in world(false)) {
        let overrides: Vec<(usize, &Pol)> =
            w.policies.iter().enumerate().filter(|(_, p)| p.stanza == 1 && p.request.is_some()).collect();
        let doc = document_of(&docs(&yaml(&w, None)));
        if let Some(top_level) = overrides.iter().map(|(_, p)| p.level).min() {
            let winner = overrides
                .iter()
                .filter(|(_, p)| p.level == top_level)
                .min_by_key(|(i, p)| {
                    let (w, c, has, i) = rank(*i, p);
                    (w, has, c, i)
                })
                .map(|(_, p)| p.request);
            prop_assert_eq!(request_of(&doc), winner.flatten().map(|s| u64::from(s) * 1000));
        }
    }

    /// A default (or a plain setting that prefers the child) never replaces
    /// a value set lower: with no override on the field, the rule's own
    /// value stands.
    #[test]
    fn defaults_never_replace_a_lower_value(mut w in world(false)) {
        // The rule sets the field and no override touches it.
        w.inline_request = Some(w.inline_request.unwrap_or(7));
        for p in &mut w.policies {
            if p.stanza == 1 {
                p.request = None;
            }
        }
        let doc = document_of(&docs(&yaml(&w, None)));
        prop_assert_eq!(request_of(&doc), w.inline_request.map(|s| u64::from(s) * 1000));
    }

    /// Removing a policy that supplied no field changes nothing.
    ///
    /// This holds for field and deep granularity. A shallow contribution
    /// occupies a whole top-level field (e.g. `requestHeaderModifier`): it
    /// can keep a less specific shallow fill out and later lose its leaves
    /// to an override, so it "supplied" the unit without supplying a leaf.
    /// Plain settings are therefore only generated where they merge deep
    /// (the Gateway with a DeepMerge* annotation); elsewhere they become
    /// defaults.
    #[test]
    fn removing_a_policy_that_supplied_nothing_changes_nothing(mut w in world(true)) {
        let deep_gateway = w.gateway_priority.is_some();
        for p in &mut w.policies {
            if p.stanza == 2 && !(deep_gateway && LEVELS[p.level] == At::Gateway) {
                p.stanza = 0;
            }
        }
        let full = document_of(&docs(&yaml(&w, None)));
        let sources: Vec<&String> = full.routes[0].sources.values().collect();
        for i in 0..w.policies.len() {
            let name = format!("appns/p{i:02} ");
            let cluster = format!("ClusterRoutePolicy p{i:02} ");
            if sources.iter().any(|s| s.contains(&name) || s.contains(&cluster)) {
                continue;
            }
            let without = document_of(&docs(&yaml(&w, Some(i))));
            prop_assert_eq!(&without, &full, "removing p{:02} changed the result", i);
        }
    }

    /// The result does not depend on input document order.
    #[test]
    fn order_of_documents_does_not_matter(w in world(true), seed in any::<u64>()) {
        let original = docs(&yaml(&w, None));
        let mut shuffled = original.clone();
        // Deterministic shuffle from the seed (Fisher-Yates with an LCG).
        let mut state = seed | 1;
        for i in (1..shuffled.len()).rev() {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let j = (state >> 33) as usize % (i + 1);
            shuffled.swap(i, j);
        }
        prop_assert_eq!(document_of(&shuffled), document_of(&original));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// `resolve` folds the listener-and-up levels once per shape of the
    /// lower result and substitutes; that must equal folding every level
    /// per rule, values and provenance alike, for every priority mode
    /// (shallow and deep, fill and replace).
    #[test]
    fn shared_upper_fold_equals_the_full_fold(w in world_of(true, true), prio in prop_oneof![
        Just(None), Just(Some("ShallowMergePreferParent")), Just(Some("DeepMergePreferParent")), Just(Some("DeepMergePreferChild"))
    ]) {
        let mut w = w;
        w.gateway_priority = prio;
        let inputs = parse(&docs(&yaml(&w, None)));
        let gw = key("appns/gw");
        let shared = resolve(&inputs, &gw).unwrap().resolution.document;
        let full = attache_core::resolve::resolve_unshared(&inputs, &gw).unwrap();
        prop_assert_eq!(shared, full);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Status counts (fields set and lost, winners, same-level conflicts)
    /// from the shared upper fold equal those of the full per-rule fold.
    #[test]
    fn shared_status_counts_equal_the_full_fold(w in world_of(true, true), prio in prop_oneof![
        Just(None), Just(Some("ShallowMergePreferParent")), Just(Some("DeepMergePreferParent")), Just(Some("DeepMergePreferChild"))
    ]) {
        let mut w = w;
        w.gateway_priority = prio;
        let inputs = parse(&docs(&yaml(&w, None)));
        let gw = key("appns/gw");
        let shared = attache_core::resolve::contributions_shared(&inputs, &gw).unwrap();
        let full = attache_core::resolve::contributions_full(&inputs, &gw).unwrap();
        prop_assert_eq!(shared, full);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// `resolve_for_data_plane` takes from its memo the entries whose
    /// inputs did not change: resolving one world, then the same world with
    /// one policy changed, removed or added, through the same memo, gives
    /// what `resolve_for` gives from scratch (the document as the data
    /// plane reads it, and the notes), on either data plane.
    #[test]
    fn a_memoised_resolve_equals_one_from_scratch(
        before in world_of(true, true),
        edit in (0..3u8, 0..10usize, pol(true)),
        istio in any::<bool>(),
    ) {
        let plane = if istio { attache_core::DataPlane::Istio } else { attache_core::DataPlane::Envoy };
        let mut after = before.clone();
        let (what, at, changed) = edit;
        match (what, after.policies.len()) {
            (_, 0) | (2, _) => after.policies.push(changed),
            (0, n) => after.policies[at % n] = changed,
            (_, n) => {
                after.policies.remove(at % n);
            }
        }
        let gw = key("appns/gw");
        let mut memo = attache_core::EntryMemo::default();
        let first = parse(&docs(&yaml(&before, None)));
        let remembered = attache_core::resolve_for_data_plane(&first, &gw, plane, &mut memo).unwrap();
        let fresh = attache_core::resolve_for(&first, &gw, plane).unwrap();
        prop_assert_eq!(&remembered.resolution.document, &as_data_plane_reads(fresh.resolution.document));
        prop_assert_eq!(memo.len(), remembered.resolution.document.routes.len());
        let second = parse(&docs(&yaml(&after, None)));
        let remembered = attache_core::resolve_for_data_plane(&second, &gw, plane, &mut memo).unwrap();
        let fresh = attache_core::resolve_for(&second, &gw, plane).unwrap();
        prop_assert_eq!(&remembered.resolution.document, &as_data_plane_reads(fresh.resolution.document));
        prop_assert!(remembered.resolution.backends.is_empty());
        prop_assert_eq!(&remembered.diagnostics, &fresh.diagnostics);
        // Nothing changed: every entry is taken from the memo.
        let again = attache_core::resolve_for_data_plane(&second, &gw, plane, &mut memo).unwrap();
        prop_assert_eq!(&again.resolution.document, &remembered.resolution.document);
        prop_assert_eq!(memo.reused(), again.resolution.document.routes.len());
    }
}

/// What the data plane reads of a document: each entry's name, hostnames,
/// matches and settings (no provenance, no parts of the name).
fn as_data_plane_reads(mut document: Document) -> Document {
    for entry in &mut document.routes {
        *entry = attache_core::contract::RouteEntry {
            name: std::mem::take(&mut entry.name),
            hostnames: std::mem::take(&mut entry.hostnames),
            matches: std::mem::take(&mut entry.matches),
            settings: std::mem::take(&mut entry.settings),
            ..Default::default()
        };
    }
    document
}
