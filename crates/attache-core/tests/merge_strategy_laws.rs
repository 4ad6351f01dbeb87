//! GEP-713 (2025) merge strategies (docs/semantics.md, "Merge strategies"):
//! for every strategy, mixed with the seeds' stanzas at every level, any
//! order of arrival folds to the same result.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use attache_core::contract::Document;
use attache_core::{parse, resolve};
use common::*;
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct Pol {
    level: usize,
    /// 0-3 the four GEP strategies, 4 a Custom name, 5 seeds defaults,
    /// 6 seeds overrides.
    strategy: u8,
    request: Option<u8>,
    backend: Option<u8>,
    header: Option<(u8, u8)>,
    null_retry: bool,
    attempts: Option<u8>,
    created: Option<u8>,
}

const LEVELS: [At; 6] = [
    At::Class,
    At::Namespace,
    At::Gateway,
    At::Listener,
    At::Route,
    At::Rule,
];
const STRATEGIES: [&str; 5] = [
    "AtomicDefaults",
    "AtomicOverrides",
    "PatchDefaults",
    "PatchOverrides",
    "DeepMergePreferChild",
];

fn pol() -> impl Strategy<Value = Pol> {
    (
        0..6usize,
        0..7u8,
        proptest::option::of(1..9u8),
        proptest::option::of(1..9u8),
        proptest::option::of((0..3u8, 0..3u8)),
        any::<bool>(),
        proptest::option::of(0..4u8),
        proptest::option::of(0..3u8),
    )
        .prop_map(
            |(level, strategy, request, backend, header, null_retry, attempts, created)| Pol {
                level,
                strategy,
                request,
                backend,
                header,
                null_retry,
                attempts,
                created,
            },
        )
}

fn doc(i: usize, p: &Pol) -> String {
    let mut timeouts = Vec::new();
    timeouts.extend(p.request.map(|r| format!("request: {r}s")));
    timeouts.extend(p.backend.map(|r| format!("backendRequest: {r}s")));
    let mut parts = Vec::new();
    if !timeouts.is_empty() {
        parts.push(format!("timeouts: {{{}}}", timeouts.join(", ")));
    }
    if let Some((n, v)) = p.header {
        parts.push(format!(
            "requestHeaderModifier: {{set: [{{name: x-h{n}, value: v{v}}}]}}"
        ));
    }
    if p.strategy == 3 && p.null_retry {
        parts.push("retry: null".into());
    } else if let Some(a) = p.attempts {
        parts.push(format!("retry: {{attempts: {a}}}"));
    }
    let created = p.created.map(|c| format!("2024-01-0{}T00:00:00Z", c + 1));
    let name = format!("p{i:02}");
    match p.strategy {
        5 => policy(
            &name,
            LEVELS[p.level],
            &format!("defaults: {{{}}}", parts.join(", ")),
            created.as_deref(),
            None,
        ),
        6 => policy(
            &name,
            LEVELS[p.level],
            &format!("overrides: {{{}}}", parts.join(", ")),
            created.as_deref(),
            None,
        ),
        s => {
            let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
            opted(
                &name,
                LEVELS[p.level],
                STRATEGIES[usize::from(s)],
                &refs,
                created.as_deref(),
            )
        }
    }
}

fn world() -> impl Strategy<Value = (Vec<Pol>, Option<u8>, Option<(u8, u8)>)> {
    (
        proptest::collection::vec(pol(), 0..9),
        proptest::option::of(1..9u8),
        proptest::option::of((0..3u8, 0..3u8)),
    )
}

fn yaml_of(
    policies: &[Pol],
    inline_request: Option<u8>,
    inline_header: Option<(u8, u8)>,
    order: &[usize],
) -> String {
    let mut rule = Vec::new();
    if let Some(r) = inline_request {
        rule.push(format!("    timeouts: {{request: {r}s}}"));
    }
    if let Some((n, v)) = inline_header {
        rule.push(format!(
            "    filters:\n    - type: RequestHeaderModifier\n      requestHeaderModifier: {{set: [{{name: x-h{n}, value: inline{v}}}]}}"
        ));
    }
    let mut y = topology(&rule.join("\n"));
    for &i in order {
        y.push_str(&doc(i, &policies[i]));
    }
    y
}

fn document(yaml: &str) -> (Document, Document) {
    let inputs = parse(&docs(yaml));
    let shared = resolve(&inputs, &key("appns/gw"))
        .unwrap()
        .resolution
        .document;
    let full = attache_core::resolve::resolve_unshared(&inputs, &key("appns/gw")).unwrap();
    (shared, full)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    /// For every strategy, mixed with the seeds' stanzas at every level:
    /// any order of arrival folds to the same document (ties broken only by
    /// the conflict order), the shared upper fold equals the full fold, and
    /// so do status's counts.
    #[test]
    fn any_order_of_arrival_folds_the_same((policies, inline_request, inline_header) in world(), seed in any::<u64>()) {
        let order: Vec<usize> = (0..policies.len()).collect();
        let mut shuffled = order.clone();
        let mut state = seed | 1;
        for i in (1..shuffled.len()).rev() {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let j = (state >> 33) as usize % (i + 1);
            shuffled.swap(i, j);
        }
        let (a, a_full) = document(&yaml_of(&policies, inline_request, inline_header, &order));
        let (b, b_full) = document(&yaml_of(&policies, inline_request, inline_header, &shuffled));
        prop_assert_eq!(&a, &b);
        prop_assert_eq!(&a, &a_full);
        prop_assert_eq!(&b, &b_full);
        let inputs = parse(&docs(&yaml_of(&policies, inline_request, inline_header, &order)));
        let shared = attache_core::resolve::contributions_shared(&inputs, &key("appns/gw")).unwrap();
        let full = attache_core::resolve::contributions_full(&inputs, &key("appns/gw")).unwrap();
        prop_assert_eq!(shared, full);
    }
}
