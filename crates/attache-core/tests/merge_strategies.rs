//! GEP-713 as rewritten in 2025 (docs/semantics.md, "Merge strategies"):
//! `spec.mergeStrategy` on RoutePolicy and ClusterRoutePolicy, its
//! validation, the fold of each strategy, and that any order of arrival
//! folds to the same result.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use attache_core::contract::RouteEntry;
use attache_core::resolve;
use common::*;

fn resolved(yaml: &str) -> RouteEntry {
    let inputs = inputs(yaml);
    let errors: Vec<String> = inputs
        .diagnostics
        .iter()
        .filter(|d| d.severity != attache_core::Severity::Note)
        .map(ToString::to_string)
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let doc = resolve(&inputs, &key("appns/gw"))
        .unwrap()
        .resolution
        .document;
    let full = attache_core::resolve::resolve_unshared(&inputs, &key("appns/gw")).unwrap();
    assert_eq!(doc, full, "the shared fold and the full fold differ");
    doc.routes[0].clone()
}

fn ms(e: &RouteEntry) -> (Option<u64>, Option<u64>) {
    let t = e.settings.timeouts.clone().unwrap_or_default();
    (t.request_ms, t.backend_request_ms)
}

fn attempts(e: &RouteEntry) -> Option<u32> {
    e.settings.retry.as_ref().and_then(|r| r.attempts)
}

fn invalid_because(yaml: &str) -> Vec<String> {
    let inputs = inputs(yaml);
    inputs
        .policies
        .iter()
        .flat_map(|p| p.invalid.clone())
        .collect()
}

#[test]
fn a_stanza_beside_the_strategy_none_and_nulls_outside_patch_overrides_are_invalid() {
    let base = topology("");
    let beside = format!(
        "{base}{}",
        policy(
            "p",
            At::Gateway,
            "mergeStrategy: AtomicDefaults\n  defaults: {timeouts: {request: 1s}}",
            None,
            None
        )
    );
    let why = invalid_because(&beside);
    assert_eq!(why.len(), 1, "{why:?}");
    assert!(why[0].starts_with("spec.defaults: a stanza beside spec.mergeStrategy: AtomicDefaults"));
    let inputs = inputs(&beside);
    let d = inputs
        .diagnostics
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(d.contains("RoutePolicy appns/p"), "{d}");
    assert!(d.contains("move them there"), "{d}");

    let none = format!(
        "{base}{}",
        opted("p", At::Gateway, "None", &["timeouts: {request: 1s}"], None)
    );
    assert_eq!(
        invalid_because(&none),
        ["spec.mergeStrategy: None is not a strategy a RoutePolicy may take: GEP-713 does not let a kind \
          combine None with another strategy"]
    );

    let null = format!(
        "{base}{}",
        opted(
            "p",
            At::Gateway,
            "PatchDefaults",
            &["timeouts: {request: null}"],
            None
        )
    );
    assert_eq!(
        invalid_because(&null),
        ["spec.timeouts.request: null removes a field only under mergeStrategy: PatchOverrides, not PatchDefaults"]
    );
    let fine = format!(
        "{base}{}",
        opted("p", At::Gateway, "PatchOverrides", &["retry: null"], None)
    );
    assert!(invalid_because(&fine).is_empty());

    let unknown = format!("{base}{}", opted("p", At::Gateway, "Atomic", &[], None));
    assert_eq!(
        invalid_because(&unknown),
        ["spec.mergeStrategy: \"Atomic\" is not a merge strategy"]
    );
}

#[test]
fn weight_is_ignored_on_an_opted_in_policy_with_a_note() {
    let yaml = format!(
        "{}{}",
        topology(""),
        policy(
            "p",
            At::Gateway,
            "mergeStrategy: AtomicDefaults",
            None,
            Some(5)
        )
    );
    let inputs = inputs(&yaml);
    let notes: Vec<String> = inputs.diagnostics.iter().map(ToString::to_string).collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("policy-weight is ignored"), "{notes:?}");
}

#[test]
fn atomic_defaults_the_more_specific_policy_wins_whole_the_rule_fills_around_it() {
    let yaml = [
        topology("    timeouts: {request: 9s}"),
        opted(
            "gw",
            At::Gateway,
            "AtomicDefaults",
            &[
                "timeouts: {request: 1s, backendRequest: 1s}",
                "retry: {attempts: 1}",
            ],
            None,
        ),
        opted(
            "rt",
            At::Route,
            "AtomicDefaults",
            &["timeouts: {backendRequest: 2s}"],
            None,
        ),
    ]
    .concat();
    let e = resolved(&yaml);
    // The Gateway's policy is dropped whole (its retry too); the rule's own
    // request timeout is no part of an atomic unit.
    assert_eq!(ms(&e), (Some(9000), Some(2000)));
    assert_eq!(attempts(&e), None);
}

#[test]
fn atomic_overrides_the_less_specific_policy_stands_whole_over_the_rules_own() {
    let yaml = [
        topology("    timeouts: {request: 9s}"),
        opted(
            "gw",
            At::Gateway,
            "AtomicOverrides",
            &["timeouts: {backendRequest: 1s}"],
            None,
        ),
        opted(
            "rt",
            At::Route,
            "AtomicOverrides",
            &["timeouts: {request: 5s}", "retry: {attempts: 3}"],
            None,
        ),
    ]
    .concat();
    let e = resolved(&yaml);
    // The route policy went whole; the rule's own 9s stays (not in A).
    assert_eq!(ms(&e), (Some(9000), Some(1000)));
    assert_eq!(attempts(&e), None);
}

#[test]
fn patch_defaults_merges_scalars_and_replaces_header_lists_whole() {
    let yaml = [
        topology(""),
        opted(
            "gw",
            At::Gateway,
            "PatchDefaults",
            &[
                "timeouts: {request: 1s, backendRequest: 1s}",
                "requestHeaderModifier: {set: [{name: x-a, value: gw}, {name: x-b, value: gw}]}",
            ],
            None,
        ),
        opted(
            "rt",
            At::Route,
            "PatchDefaults",
            &[
                "timeouts: {request: 5s}",
                "requestHeaderModifier: {set: [{name: x-a, value: rt}]}",
            ],
            None,
        ),
    ]
    .concat();
    let e = resolved(&yaml);
    assert_eq!(ms(&e), (Some(5000), Some(1000)));
    assert_eq!(set_header(&e, "x-a").as_deref(), Some("rt"));
    assert_eq!(
        set_header(&e, "x-b"),
        None,
        "the set list is replaced whole"
    );
}

#[test]
fn patch_overrides_null_removes_what_policies_supplied_never_the_rules_own() {
    let yaml = [
        topology("    timeouts: {request: 9s}"),
        opted(
            "gw",
            At::Gateway,
            "PatchOverrides",
            &[
                "timeouts: {request: null, backendRequest: null}",
                "retry: {attempts: 2}",
            ],
            None,
        ),
        opted(
            "rt",
            At::Route,
            "PatchOverrides",
            &[
                "timeouts: {backendRequest: 3s}",
                "retry: {attempts: 4, codes: [503]}",
            ],
            None,
        ),
    ]
    .concat();
    let e = resolved(&yaml);
    assert_eq!(ms(&e), (Some(9000), None));
    assert_eq!(attempts(&e), Some(2));
    assert_eq!(
        e.settings.retry.as_ref().and_then(|r| r.codes.clone()),
        Some(vec![503])
    );
}

#[test]
fn within_a_level_the_newest_default_wins_and_the_oldest_override() {
    let defaults = [
        topology(""),
        opted(
            "old",
            At::Gateway,
            "AtomicDefaults",
            &["timeouts: {request: 1s}"],
            Some("2024-01-01T00:00:00Z"),
        ),
        opted(
            "new",
            At::Gateway,
            "AtomicDefaults",
            &["timeouts: {request: 2s}"],
            Some("2024-02-01T00:00:00Z"),
        ),
    ]
    .concat();
    assert_eq!(ms(&resolved(&defaults)).0, Some(2000));
    let overrides = defaults.replace("AtomicDefaults", "AtomicOverrides");
    assert_eq!(ms(&resolved(&overrides)).0, Some(1000));
}

#[test]
fn a_level_holding_both_folds_seeds_fills_then_opted_in_then_seeds_replaces() {
    let yaml = [
        topology(""),
        policy(
            "seed-d",
            At::Gateway,
            "defaults: {timeouts: {request: 1s}}",
            None,
            None,
        ),
        opted(
            "opt",
            At::Gateway,
            "PatchOverrides",
            &["timeouts: {request: 5s, backendRequest: 2s}"],
            None,
        ),
        policy(
            "seed-o",
            At::Gateway,
            "overrides: {timeouts: {backendRequest: 3s}}",
            None,
            None,
        ),
    ]
    .concat();
    // The seeds' default fills first, the opted-in override replaces it,
    // the seeds' override replaces last.
    assert_eq!(ms(&resolved(&yaml)), (Some(5000), Some(3000)));
}

#[test]
fn custom_is_the_seeds_fold_chosen_by_the_policy() {
    let yaml = [
        topology("    filters:\n    - type: RequestHeaderModifier\n      requestHeaderModifier: {set: [{name: x-season, value: winter}]}"),
        opted("gw", At::Gateway, "DeepMergePreferParent", &["requestHeaderModifier: {set: [{name: x-season, value: summer}]}"], None),
    ]
    .concat();
    assert_eq!(
        set_header(&resolved(&yaml), "x-season").as_deref(),
        Some("summer,winter")
    );
}

/// `attache diff` reports a change of strategy as a change of every field
/// it moves, each with its new supplier.
#[test]
fn a_change_of_strategy_is_a_change_of_every_field_it_moves() {
    let world = |strategy: &str| {
        [
            topology(""),
            opted(
                "gw",
                At::Gateway,
                strategy,
                &["timeouts: {request: 10s}", "retry: {attempts: 2}"],
                None,
            ),
            opted(
                "rt",
                At::Route,
                strategy,
                &["timeouts: {request: 5s, backendRequest: 1s}"],
                None,
            ),
        ]
        .concat()
    };
    let (old, new) = (
        inputs(&world("PatchDefaults")),
        inputs(&world("AtomicOverrides")),
    );
    let gw = key("appns/gw");
    let (a, b) = (resolve(&old, &gw).unwrap(), resolve(&new, &gw).unwrap());
    let diff = attache_core::diff::diff(
        "appns/gw",
        Some(&a.resolution.document),
        Some(&b.resolution.document),
        &attache_core::policy_status(&old),
        &attache_core::policy_status(&new),
    );
    let fields: Vec<(String, Option<String>)> = diff.entries_changed[0]
        .fields
        .iter()
        .map(|f| (f.field.clone(), f.new.as_ref().map(ToString::to_string)))
        .collect();
    assert_eq!(
        fields,
        [
            ("timeouts.backendRequestMs".to_string(), None),
            (
                "timeouts.requestMs".to_string(),
                Some("10000ms".to_string())
            ),
        ]
    );
}

/// Among opted-in overrides the 2025 order has no weight: the oldest wins,
/// and explain says the seeds would have ranked by weight.
#[test]
fn explain_says_where_the_orders_differ() {
    let yaml = [
        topology(""),
        opted(
            "old",
            At::Gateway,
            "AtomicOverrides",
            &["timeouts: {request: 1s}"],
            Some("2024-01-01T00:00:00Z"),
        ),
        policy(
            "heavy",
            At::Gateway,
            "mergeStrategy: AtomicOverrides\n  timeouts: {request: 2s}",
            Some("2024-02-01T00:00:00Z"),
            Some(5),
        ),
    ]
    .concat();
    assert_eq!(ms(&resolved(&yaml)).0, Some(1000));
    let inputs = inputs(&yaml);
    let explained =
        attache_core::explain_route(&inputs, &key("appns/gw"), &key("appns/route")).unwrap();
    let notes = &explained[0].notes;
    assert!(
        notes.contains(
            &"2025 order: the older override wins here (RoutePolicy appns/old over RoutePolicy appns/heavy at \
              Gateway appns/gw); the seeds: the higher policy-weight"
                .to_string()
        ),
        "{notes:#?}"
    );
}
