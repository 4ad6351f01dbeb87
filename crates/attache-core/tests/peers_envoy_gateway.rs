//! Envoy Gateway's BackendTrafficPolicy (docs/peers.md): its mapping and
//! its own precedence (most specific replaces whole, mergeType merges, one
//! per target), with the route's own values first.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use attache_core::contract::RouteEntry;
use attache_core::policy_status;
use common::peers::*;
use common::*;

#[test]
fn every_backend_traffic_policy_field_maps_to_its_setting() {
    let yaml = world(None, "")
        + &peer(
            "BackendTrafficPolicy",
            "btp",
            "",
            &format!(
                "{ON_GATEWAY}  timeout: {{http: {{requestTimeout: 12s}}}}\n  retry:\n    numRetries: 4\n    retryOn: {{triggers: [reset, 5xx], httpStatusCodes: [504]}}\n    perRetry: {{timeout: 3s, backOff: {{baseInterval: 25ms}}}}\n"
            ),
        );
    let e = entry(&resolved(&yaml), OTHER).clone();
    assert_eq!(request_ms(&e), Some(12000));
    assert_eq!(backend_ms(&e), Some(3000));
    assert_eq!(attempts(&e), Some(4));
    assert_eq!(codes(&e), Some(vec![504]));
    assert_eq!(e.settings.retry.as_ref().unwrap().backoff_ms, Some(25));
    assert_eq!(retry_on(&e).unwrap()[..2], ["reset", "5xx"]);
    assert!(e.sources["retry.attempts"].starts_with("BackendTrafficPolicy apps/btp (plain"));
}

/// Envoy Gateway: a Gateway BackendTrafficPolicy and a route one with the
/// given mergeType line.
fn eg_case(
    merge: &str,
) -> (
    RouteEntry,
    RouteEntry,
    Vec<attache_core::status::PolicyStatus>,
) {
    let yaml = world(None, "")
        + &peer(
            "BackendTrafficPolicy",
            "gw-wide",
            "",
            &format!("{ON_GATEWAY}  timeout: {{http: {{requestTimeout: 15s}}}}\n  retry: {{numRetries: 3, retryOn: {{httpStatusCodes: [503]}}}}\n"),
        )
        + &peer(
            "BackendTrafficPolicy",
            "route",
            "",
            &format!("{ON_ROUTE}{merge}  retry: {{retryOn: {{httpStatusCodes: [502]}}, perRetry: {{timeout: 1s}}}}\n"),
        );
    let r = resolved(&yaml);
    (
        entry(&r, B).clone(),
        entry(&r, OTHER).clone(),
        policy_status(&inputs(&yaml)).policies,
    )
}

#[test]
fn without_merge_type_the_most_specific_backend_traffic_policy_replaces_the_others_whole() {
    let (on_route, other, status) = eg_case("");
    // Nothing of gw-wide reaches the route: no request timeout, and the
    // route policy's own retry count (its stored default, 2), not gw-wide's 3.
    assert_eq!(request_ms(&on_route), None);
    assert_eq!(attempts(&on_route), Some(2));
    assert_eq!(codes(&on_route), Some(vec![502]));
    assert_eq!(backend_ms(&on_route), Some(1000));
    // A route without its own policy keeps the Gateway's.
    assert_eq!(
        (request_ms(&other), attempts(&other)),
        (Some(15000), Some(3))
    );
    let gw = status
        .iter()
        .find(|p| p.metadata.name == "gw-wide")
        .unwrap();
    let attached = &gw.status.ancestors[0].conditions[1];
    assert_eq!(attached.reason, "Merged");
    assert!(
        attached
            .message
            .contains("BackendTrafficPolicy apps/route (Envoy Gateway precedence"),
        "{}",
        attached.message
    );
}

#[test]
fn with_strategic_merge_or_json_merge_the_route_policy_merges_onto_the_gateways() {
    for merge in ["  mergeType: StrategicMerge\n", "  mergeType: JSONMerge\n"] {
        let (on_route, _, _) = eg_case(merge);
        assert_eq!(request_ms(&on_route), Some(15000), "{merge}");
        // The route policy's retry holds numRetries 2 as stored: a set field.
        assert_eq!(attempts(&on_route), Some(2), "{merge}");
        // Its set fields win; the status-code list is replaced, not joined
        // (neither merge joins a list without a merge key).
        assert_eq!(codes(&on_route), Some(vec![502]), "{merge}");
        assert_eq!(backend_ms(&on_route), Some(1000), "{merge}");
        assert!(on_route.sources["timeouts.requestMs"]
            .contains("merged under a more specific mergeType @ Gateway apps/gw"));
    }
}

#[test]
fn a_retry_without_num_retries_is_read_as_stored_with_envoy_gateways_default_of_two() {
    let policy = |retry: &str| {
        world(None, "")
            + &peer(
                "BackendTrafficPolicy",
                "btp",
                "",
                &format!("{ON_GATEWAY}  retry: {retry}\n"),
            )
    };
    let defaulted = policy("{retryOn: {httpStatusCodes: [503]}}");
    assert_eq!(attempts(entry(&resolved(&defaulted), OTHER)), Some(2));
    let notes = inputs(&defaulted)
        .diagnostics
        .iter()
        .filter(|d| d.field.as_deref() == Some("spec.retry.numRetries"))
        .map(|d| d.message.clone())
        .collect::<Vec<_>>();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("stores its default, 2"), "{notes:?}");
    // A count written, 0 included (no retries), is the policy's own.
    for (retry, expected) in [("{numRetries: 0}", 0), ("{numRetries: 5}", 5)] {
        assert_eq!(
            attempts(entry(&resolved(&policy(retry)), OTHER)),
            Some(expected)
        );
    }
    // No retry stanza: nothing is defaulted.
    let none = world(None, "")
        + &peer(
            "BackendTrafficPolicy",
            "btp",
            "",
            &format!("{ON_GATEWAY}  timeout: {{http: {{requestTimeout: 2s}}}}\n"),
        );
    assert_eq!(attempts(entry(&resolved(&none), OTHER)), None);
}

#[test]
fn at_one_level_the_top_ranked_backend_traffic_policy_alone_applies() {
    let yaml = world(None, "")
        + &peer(
            "BackendTrafficPolicy",
            "older",
            "  creationTimestamp: \"2024-01-01T00:00:00Z\"\n",
            &format!("{ON_LISTENER}  timeout: {{http: {{requestTimeout: 1s}}}}\n"),
        )
        + &peer(
            "BackendTrafficPolicy",
            "newer",
            "  creationTimestamp: \"2024-06-01T00:00:00Z\"\n",
            &format!("{ON_LISTENER}  retry: {{numRetries: 3}}\n"),
        )
        + &peer(
            "BackendTrafficPolicy",
            "gateway",
            "",
            &format!("{ON_GATEWAY}  retry: {{numRetries: 1}}\n"),
        );
    let r = resolved(&yaml);
    let e = entry(&r, OTHER);
    // The oldest on the listener applies; the newer one and the Gateway's
    // (less specific) do not, although they set fields it leaves unset.
    assert_eq!((request_ms(e), attempts(e)), (Some(1000), None));
    let on_alt = entry(&r, "alt/apps/other/0");
    assert_eq!((request_ms(on_alt), attempts(on_alt)), (None, Some(1)));
    let status = policy_status(&inputs(&yaml)).policies;
    let newer = status.iter().find(|p| p.metadata.name == "newer").unwrap();
    assert_eq!(newer.status.ancestors[0].conditions[1].reason, "Overridden");
}

#[test]
fn the_routes_own_values_beat_backend_traffic_policies() {
    let yaml = world(None, "      timeouts: {request: 2s}")
        + &peer(
            "BackendTrafficPolicy",
            "btp",
            "",
            &format!("{ON_RULE}  timeout: {{http: {{requestTimeout: 9s}}}}\n"),
        );
    assert_eq!(request_ms(entry(&resolved(&yaml), A)), Some(2000));
}
