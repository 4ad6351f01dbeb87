//! GEP-713's RetryOn tables (seed 001, "Interactions between defaults,
//! overrides, and field values"), mapped onto `retry.retryOn`, for a route
//! with no value ("empty list") and with its own value. Levels: Namespace
//! of the Gateway, Gateway, HTTPRoute.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;

const LEVELS: [Option<At>; 4] = [
    None,
    Some(At::Namespace),
    Some(At::Gateway),
    Some(At::Route),
];

/// Distinct trigger lists so a result says who won. None of them is one of
/// the connection errors GEP-1731 adds after the fold, so the winner's list
/// is what comes before them.
fn triggers(who: &str) -> &'static str {
    match who {
        "route" => "[retriable-4xx]",
        "A" => "[5xx]",
        "B" => "[envoy-ratelimited]",
        "default" => "[gateway-error]",
        "override" => "[retriable-headers]",
        other => unreachable!("no trigger list for {other}"),
    }
}

fn list(who: &str) -> Option<Vec<String>> {
    let t = triggers(who).trim_matches(['[', ']']);
    Some(vec![t.to_string()])
}

fn rule_value(with_value: bool) -> String {
    if with_value {
        format!("    retry: {{retryOn: {}}}", triggers("route"))
    } else {
        String::new()
    }
}

/// One cell: `a` and `b` are (policy name, level, stanza); returns retryOn.
fn cell(
    with_value: bool,
    policies: &[(&str, Option<At>, &str, Option<&str>)],
) -> Option<Vec<String>> {
    let mut yaml = topology(&rule_value(with_value));
    for (name, at, stanza, created) in policies {
        if let Some(at) = at {
            let body = format!("{stanza}: {{retry: {{retryOn: {}}}}}", triggers(name));
            yaml.push_str(&policy(&name.to_lowercase(), *at, &body, *created, None));
        }
    }
    let r = resolve_yaml(&yaml, "appns/gw");
    // The fold's winner, then the connection errors a retry stanza in effect
    // always retries (docs/semantics.md, GEP-1731).
    retry_on(entry(&r, ENTRY)).map(|mut words| {
        let added = words.split_off(words.len().saturating_sub(3));
        assert_eq!(added, attache_core::retries::CONNECTION_ERRORS);
        words
    })
}

fn rank(at: Option<At>) -> usize {
    LEVELS.iter().position(|l| *l == at).unwrap_or(0)
}

/// "Overrides interacting with defaults": any override wins (the least
/// specific one); otherwise the default; otherwise the route's own value.
fn overrides_with_defaults(with_value: bool) {
    for default_at in LEVELS {
        for override_at in LEVELS {
            let got = cell(
                with_value,
                &[
                    ("default", default_at, "defaults", None),
                    ("override", override_at, "overrides", None),
                ],
            );
            let want = if override_at.is_some() {
                list("override")
            } else if with_value {
                list("route")
            } else if default_at.is_some() {
                list("default")
            } else {
                None
            };
            assert_eq!(
                got, want,
                "default at {default_at:?}, override at {override_at:?}, route value: {with_value}"
            );
        }
    }
}

#[test]
fn overrides_with_defaults_empty_route() {
    overrides_with_defaults(false);
}

#[test]
fn overrides_with_defaults_value_in_route() {
    overrides_with_defaults(true);
}

/// "Overrides interacting with other overrides": the less specific wins;
/// at the same level, first created wins, otherwise first alphabetically.
fn overrides_with_overrides(with_value: bool, b_created_first: bool) {
    let (a_ts, b_ts) = if b_created_first {
        (Some("2024-01-02T00:00:00Z"), Some("2024-01-01T00:00:00Z"))
    } else {
        (None, None)
    };
    for b_at in LEVELS {
        for a_at in LEVELS {
            let got = cell(
                with_value,
                &[
                    ("A", a_at, "overrides", a_ts),
                    ("B", b_at, "overrides", b_ts),
                ],
            );
            let want = match (a_at, b_at) {
                (None, None) => {
                    if with_value {
                        list("route")
                    } else {
                        None
                    }
                }
                (Some(_), None) => list("A"),
                (None, Some(_)) => list("B"),
                (Some(a), Some(b)) if a == b => {
                    if b_created_first {
                        list("B")
                    } else {
                        list("A")
                    }
                }
                (a, b) => {
                    if rank(a) < rank(b) {
                        list("A")
                    } else {
                        list("B")
                    }
                }
            };
            assert_eq!(got, want, "A at {a_at:?}, B at {b_at:?}, route value: {with_value}, B older: {b_created_first}");
        }
    }
}

#[test]
fn overrides_with_overrides_empty_route_alphabetical() {
    overrides_with_overrides(false, false);
}

#[test]
fn overrides_with_overrides_empty_route_first_created() {
    overrides_with_overrides(false, true);
}

#[test]
fn overrides_with_overrides_value_in_route() {
    overrides_with_overrides(true, false);
    overrides_with_overrides(true, true);
}

/// "Defaults interacting with other defaults": the more specific wins; at
/// the same level first created, otherwise alphabetical; a value in the
/// route beats every default.
fn defaults_with_defaults(with_value: bool, b_created_first: bool) {
    let (a_ts, b_ts) = if b_created_first {
        (Some("2024-01-02T00:00:00Z"), Some("2024-01-01T00:00:00Z"))
    } else {
        (None, None)
    };
    for b_at in LEVELS {
        for a_at in LEVELS {
            let got = cell(
                with_value,
                &[("A", a_at, "defaults", a_ts), ("B", b_at, "defaults", b_ts)],
            );
            let want = if with_value {
                list("route")
            } else {
                match (a_at, b_at) {
                    (None, None) => None,
                    (Some(_), None) => list("A"),
                    (None, Some(_)) => list("B"),
                    (Some(a), Some(b)) if a == b => {
                        if b_created_first {
                            list("B")
                        } else {
                            list("A")
                        }
                    }
                    (a, b) => {
                        if rank(a) > rank(b) {
                            list("A")
                        } else {
                            list("B")
                        }
                    }
                }
            };
            assert_eq!(got, want, "A at {a_at:?}, B at {b_at:?}, route value: {with_value}, B older: {b_created_first}");
        }
    }
}

#[test]
fn defaults_with_defaults_empty_route() {
    defaults_with_defaults(false, false);
    defaults_with_defaults(false, true);
}

#[test]
fn defaults_with_defaults_value_in_route() {
    defaults_with_defaults(true, false);
    defaults_with_defaults(true, true);
}

/// The seed's first example: a default on the Gateway sets retryOn only
/// where the route leaves it empty; an override sets it regardless.
#[test]
fn gateway_default_applies_only_where_route_is_silent() {
    assert_eq!(
        cell(false, &[("default", Some(At::Gateway), "defaults", None)]),
        list("default")
    );
    assert_eq!(
        cell(true, &[("default", Some(At::Gateway), "defaults", None)]),
        list("route")
    );
    assert_eq!(
        cell(true, &[("override", Some(At::Gateway), "overrides", None)]),
        list("override")
    );
}
