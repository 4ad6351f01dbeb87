//! Every mapped field of the peers' kinds survives YAML -> document, for
//! any value and together with every other mapped field: each case fills
//! every row of the kind's table in model/peers.rs at once.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, BTreeSet};

use attache_core::contract::{HeaderChanges, RouteEntry};
use attache_core::model::peers::{Mapping, BACKEND_TRAFFIC_POLICY, TRAFFIC_POLICY};
use common::peers::*;
use common::*;
use proptest::prelude::*;
use serde_json::{json, Value};

/// One header modifier: set, add and remove, each on its own names.
#[derive(Debug, Clone)]
struct Headers {
    set: BTreeMap<String, String>,
    add: BTreeMap<String, String>,
    remove: BTreeSet<String>,
}

/// A value for every setting a peer may map to.
#[derive(Debug, Clone)]
struct Case {
    request_ms: u64,
    backend_ms: u64,
    backoff_ms: u64,
    attempts: u32,
    codes: BTreeSet<u16>,
    retry_on: BTreeSet<&'static str>,
    request_headers: Headers,
    response_headers: Headers,
    /// Write durations in seconds where they are whole seconds.
    seconds: bool,
}

fn names(prefix: &'static str) -> impl Strategy<Value = String> {
    "[a-z][a-z0-9]{0,6}".prop_map(move |n| format!("{prefix}{n}"))
}

fn headers() -> impl Strategy<Value = Headers> {
    let value = "[a-zA-Z0-9._-]{1,12}";
    (
        prop::collection::btree_map(names("x-s-"), value, 0..3),
        prop::collection::btree_map(names("x-a-"), value, 0..3),
        prop::collection::btree_set(names("x-r-"), 0..3),
    )
        .prop_map(|(set, add, remove)| Headers { set, add, remove })
}

fn case() -> impl Strategy<Value = Case> {
    // Gateway API durations have at most 5 digits per unit; the per-try
    // timeout stays under the request timeout, as kgateway's CEL rule and
    // Gateway API require.
    (1_000u64..=99_999, 1u64..=999, 1u64..=99_999, 0u32..=10)
        .prop_flat_map(|(request_ms, backend_ms, backoff_ms, attempts)| {
            (
                Just((request_ms, backend_ms, backoff_ms, attempts)),
                prop::collection::btree_set(400u16..=599, 1..5),
                prop::collection::btree_set(
                    prop::sample::select(vec![
                        "5xx",
                        "gateway-error",
                        "reset",
                        "retriable-4xx",
                        "retriable-status-codes",
                        "connect-failure",
                    ]),
                    1..4,
                ),
                headers(),
                headers(),
                any::<bool>(),
            )
        })
        .prop_map(
            |(
                (request_ms, backend_ms, backoff_ms, attempts),
                codes,
                retry_on,
                req,
                res,
                seconds,
            )| {
                Case {
                    request_ms,
                    backend_ms,
                    backoff_ms,
                    attempts,
                    codes,
                    retry_on,
                    request_headers: req,
                    response_headers: res,
                    seconds,
                }
            },
        )
}

fn duration(ms: u64, seconds: bool) -> Value {
    if seconds && ms % 1000 == 0 {
        json!(format!("{}s", ms / 1000))
    } else {
        json!(format!("{ms}ms"))
    }
}

fn modifier(h: &Headers) -> Value {
    let pairs = |m: &BTreeMap<String, String>| {
        m.iter()
            .map(|(name, value)| json!({"name": name, "value": value}))
            .collect::<Vec<_>>()
    };
    json!({"set": pairs(&h.set), "add": pairs(&h.add), "remove": h.remove})
}

/// The peer's value for one of the project's settings (`Mapping::ours`).
fn value_of(c: &Case, ours: &str) -> Value {
    match ours {
        "timeouts.request" => duration(c.request_ms, c.seconds),
        "timeouts.backendRequest" => duration(c.backend_ms, c.seconds),
        "retry.backoff" => duration(c.backoff_ms, c.seconds),
        "retry.attempts" => json!(c.attempts),
        "retry.codes" => json!(c.codes),
        "retry.retryOn" => json!(c.retry_on),
        "requestHeaderModifier" => modifier(&c.request_headers),
        "responseHeaderModifier" => modifier(&c.response_headers),
        other => panic!("a new mapped setting {other}: give the property a value for it"),
    }
}

fn same_headers(changes: Option<&HeaderChanges>, h: &Headers) -> bool {
    let empty = HeaderChanges::default();
    let changes = changes.unwrap_or(&empty);
    let pairs = |list: &[attache_core::contract::Header]| {
        list.iter()
            .map(|x| (x.name.clone(), x.value.clone()))
            .collect::<BTreeMap<_, _>>()
    };
    pairs(&changes.set) == h.set
        && pairs(&changes.add) == h.add
        && changes.remove.iter().cloned().collect::<BTreeSet<_>>() == h.remove
}

/// Whether the entry holds the case's value for one setting.
fn holds(e: &RouteEntry, c: &Case, ours: &str) -> bool {
    let t = e.settings.timeouts.clone().unwrap_or_default();
    let r = e.settings.retry.clone().unwrap_or_default();
    match ours {
        "timeouts.request" => t.request_ms == Some(c.request_ms),
        "timeouts.backendRequest" => t.backend_request_ms == Some(c.backend_ms),
        "retry.backoff" => r.backoff_ms == Some(c.backoff_ms),
        "retry.attempts" => r.attempts == Some(c.attempts),
        "retry.codes" => {
            r.codes.map(|v| v.into_iter().collect::<BTreeSet<_>>()) == Some(c.codes.clone())
        }
        // GEP-1731 may add connection-error triggers; the written ones stay.
        "retry.retryOn" => r
            .retry_on
            .is_some_and(|w| c.retry_on.iter().all(|t| w.iter().any(|x| x == t))),
        "requestHeaderModifier" => {
            same_headers(e.settings.request_headers.as_ref(), &c.request_headers)
        }
        "responseHeaderModifier" => {
            same_headers(e.settings.response_headers.as_ref(), &c.response_headers)
        }
        other => panic!("a new mapped setting {other}: say how the entry shows it"),
    }
}

fn set_path(root: &mut Value, path: &str, value: Value) {
    let mut at = root;
    for part in path.split('.') {
        at = at.as_object_mut().unwrap().entry(part).or_insert(json!({}));
    }
    *at = value;
}

/// One policy with every row of `table` filled from `c`, resolved; each
/// row must reach the entry.
fn round_trip(kind: &str, table: &[Mapping], c: &Case) -> Result<(), TestCaseError> {
    let mut spec = json!({"targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "r"}]});
    for m in table {
        set_path(&mut spec, m.theirs, value_of(c, m.ours));
    }
    let group = if kind == "TrafficPolicy" {
        "gateway.kgateway.dev"
    } else {
        "gateway.envoyproxy.io"
    };
    let doc = json!({"apiVersion": format!("{group}/v1alpha1"), "kind": kind, "metadata": {"name": "p", "namespace": "apps"}, "spec": spec});
    let yaml = world(None, "") + "---\n" + &doc.to_string() + "\n";
    let r = resolved(&yaml);
    prop_assert!(r.diagnostics.is_empty(), "{:?}", r.diagnostics);
    let e = entry(&r, A);
    for m in table {
        prop_assert!(holds(e, c, m.ours), "{} {}: {:?}", kind, m.theirs, e);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn every_mapped_traffic_policy_field_reaches_the_document(c in case()) {
        round_trip("TrafficPolicy", TRAFFIC_POLICY, &c)?;
    }

    #[test]
    fn every_mapped_backend_traffic_policy_field_reaches_the_document(c in case()) {
        round_trip("BackendTrafficPolicy", BACKEND_TRAFFIC_POLICY, &c)?;
    }
}
