//! GEP-713's (2025) `Programmed` condition per ancestor (docs/status.md):
//! the reasons section 12 maps `Attached` to, absent while Accepted is
//! False, and Reconciling from what the controller says it applied.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use attache_core::policy_status;
use attache_core::status::programmed::{programmed_conditions, with_programmed, Applied};
use attache_core::status::Condition;
use common::*;

fn programmed_of(report: &attache_core::StatusReport, name: &str) -> Vec<Option<Condition>> {
    let p = report
        .policies
        .iter()
        .find(|p| p.metadata.name == name)
        .unwrap();
    p.status
        .ancestors
        .iter()
        .map(|a| {
            a.conditions
                .iter()
                .find(|c| c.kind == "Programmed")
                .cloned()
        })
        .collect()
}

fn reason(c: &Option<Condition>) -> (String, String) {
    let c = c.as_ref().unwrap();
    (c.status.clone(), c.reason.clone())
}

#[test]
fn attached_merged_overridden_and_invalid_in_the_geps_words() {
    let yaml = [
        topology("    timeouts: {request: 9s}"),
        policy(
            "whole",
            At::Route,
            "defaults: {retry: {attempts: 2}}",
            None,
            None,
        ),
        policy(
            "part",
            At::Gateway,
            "defaults: {timeouts: {request: 1s, backendRequest: 1s}}",
            None,
            None,
        ),
        policy(
            "none",
            At::Class,
            "defaults: {timeouts: {request: 3s}}",
            None,
            None,
        ),
        opted(
            "opted",
            At::Namespace,
            "AtomicDefaults",
            &["retry: {attempts: 5}"],
            None,
        ),
        policy(
            "bad",
            At::Route,
            "defaults: {retry: {attempts: 99}}",
            None,
            None,
        ),
    ]
    .concat();
    let inputs = inputs(&yaml);
    let mut report = policy_status(&inputs);
    with_programmed(&inputs, &mut report);
    let whole = programmed_of(&report, "whole");
    assert_eq!(reason(&whole[0]), ("True".into(), "Programmed".into()));
    let part = programmed_of(&report, "part");
    assert_eq!(
        reason(&part[0]),
        ("True".into(), "PartiallyProgrammed".into())
    );
    let message = &part[0].as_ref().unwrap().message;
    assert!(
        message.contains("HTTPRoute appns/route rule main (inline)"),
        "{message}"
    );
    assert!(
        message.ends_with("; strategy: Custom (field defaults)"),
        "{message}"
    );
    let none = programmed_of(&report, "none");
    assert_eq!(reason(&none[0]), ("False".into(), "Overridden".into()));
    let opted = programmed_of(&report, "opted");
    assert_eq!(reason(&opted[0]), ("False".into(), "Overridden".into()));
    assert!(opted[0]
        .as_ref()
        .unwrap()
        .message
        .ends_with("; strategy: Atomic defaults"));
    // Invalid: no ancestors, so no Programmed.
    assert!(programmed_of(&report, "bad").is_empty());
}

#[test]
fn absent_while_accepted_is_false_and_reconciling_until_applied() {
    let yaml = [
        topology(""),
        policy(
            "ghost",
            At::Route,
            "defaults: {retry: {attempts: 2}}",
            None,
            None,
        )
        .replace("name: route}", "name: nope}"),
        policy(
            "live",
            At::Route,
            "defaults: {retry: {attempts: 2}}",
            None,
            None,
        ),
    ]
    .concat();
    let inputs = inputs(&yaml);
    let mut report = policy_status(&inputs);
    let pending = programmed_conditions(&inputs, &report, |_, _| Applied::Pending);
    assert_eq!(pending.len(), 1, "only the accepted ancestor: {pending:?}");
    assert_eq!(pending[0].2.reason, "Reconciling");
    let failed = programmed_conditions(&inputs, &report, |_, _| Applied::Failed("403".into()));
    assert_eq!(
        failed[0].2.message,
        "applying the configuration failed, retried: 403"
    );
    with_programmed(&inputs, &mut report);
    assert_eq!(programmed_of(&report, "ghost"), [None]);
}
