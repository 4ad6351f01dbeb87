//! GEP-1731 after the fold (docs/semantics.md, "Retries as Gateway API
//! specifies them"): which retry stanzas get the connection errors.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use attache_core::retries::CONNECTION_ERRORS;
use common::*;

/// retryOn of the rule when the Gateway's policy sets `retry` to `stanza`.
fn retry_on_with(stanza: &str) -> Option<Vec<String>> {
    let yaml = topology("")
        + &policy(
            "p",
            At::Gateway,
            &format!("defaults: {{retry: {stanza}}}"),
            None,
            None,
        );
    retry_on(entry(&resolve_yaml(&yaml, "appns/gw"), ENTRY))
}

fn words(list: &[&str]) -> Option<Vec<String>> {
    Some(list.iter().map(|w| w.to_string()).collect())
}

#[test]
fn attempts_above_zero_retry_connection_errors() {
    assert_eq!(retry_on_with("{attempts: 2}"), words(&CONNECTION_ERRORS));
}

#[test]
fn codes_or_triggers_without_attempts_retry_them_too() {
    assert_eq!(retry_on_with("{codes: [503]}"), words(&CONNECTION_ERRORS));
    // Union: the policy's own first, nothing twice.
    assert_eq!(
        retry_on_with("{retryOn: [5xx, reset]}"),
        words(&["5xx", "reset", "connect-failure", "refused-stream"])
    );
}

#[test]
fn attempts_zero_and_a_backoff_alone_retry_nothing() {
    assert_eq!(retry_on_with("{attempts: 0, codes: [503]}"), None);
    assert_eq!(retry_on_with("{backoff: 100ms}"), None);
}

#[test]
fn the_rules_own_stanza_counts_and_sources_say_why() {
    let yaml = topology("    retry: {attempts: 3}");
    let resolved = resolve_yaml(&yaml, "appns/gw");
    let e = entry(&resolved, ENTRY);
    assert_eq!(retry_on(e), words(&CONNECTION_ERRORS));
    let source = &e.sources["retry.retryOn"];
    assert!(source.contains("(inline)"), "{source}");
    assert!(
        source.ends_with("+ connection errors (GEP-1731)"),
        "{source}"
    );
}

#[test]
fn no_retry_stanza_no_triggers() {
    let resolved = resolve_yaml(&topology(""), "appns/gw");
    assert_eq!(entry(&resolved, ENTRY).settings.retry, None);
}
