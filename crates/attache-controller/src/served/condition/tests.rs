use attache_core::status::Condition;
use attache_core::topology::ObjectKey;

use super::{column, confirm, gateway_cell, served_cell, Confirmation, Served, PENDING, REJECTED};
use crate::served::Verdict;

fn programmed() -> Condition {
    Condition {
        kind: "Programmed".into(),
        status: "True".into(),
        reason: "Programmed".into(),
        message: "every value is in effect (applied to Gateway infra/edge)".into(),
        observed_generation: Some(3),
    }
}

fn edge() -> ObjectKey {
    ObjectKey {
        namespace: "infra".into(),
        name: "edge".into(),
    }
}

fn served(verdict: Verdict) -> Served {
    [(
        edge(),
        Confirmation {
            verdict,
            applied_at: "2026-11-28T14:00:00Z".into(),
            kept: None,
        },
    )]
    .into()
}

#[test]
fn served_by_every_replica_keeps_true_and_says_how_many() {
    let c = confirm(
        programmed(),
        0,
        &[&edge()],
        &served(Verdict::Served { replicas: 3 }),
    )
    .unwrap();
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("True", "Programmed")
    );
    assert!(
        c.message.ends_with("; served by 3 of 3 replicas"),
        "{}",
        c.message
    );
    assert_eq!(column(&c.reason, &c.message, Some(4)), "3/3");
}

#[test]
fn lagging_replicas_make_it_pending_with_counts_and_times() {
    let verdict = Verdict::Pending {
        serving: 2,
        replicas: 3,
        unknown: 0,
        oldest: Some("2026-11-28T13:59:00Z".into()),
    };
    let c = confirm(programmed(), 0, &[&edge()], &served(verdict)).unwrap();
    assert_eq!((c.status.as_str(), c.reason.as_str()), ("False", PENDING));
    assert_eq!(
        c.message,
        "served by 2 of 3 replicas of Gateway infra/edge; the document applied at 2026-11-28T14:00:00Z is not served yet by 1, the oldest still served was applied at 2026-11-28T13:59:00Z"
    );
    assert_eq!(c.observed_generation, Some(3));
    assert_eq!(column(&c.reason, &c.message, Some(40)), "2/3 since 40s");
}

#[test]
fn a_refusal_wins_over_lagging_and_names_the_class() {
    let verdict = Verdict::Rejected {
        refused: 1,
        replicas: 3,
        classes: vec!["invalid"],
    };
    let c = confirm(programmed(), 0, &[&edge()], &served(verdict)).unwrap();
    assert_eq!((c.status.as_str(), c.reason.as_str()), ("False", REJECTED));
    assert!(
        c.message
            .starts_with("refused by 1 of 3 replicas of Gateway infra/edge (invalid"),
        "{}",
        c.message
    );
    assert_eq!(column(&c.reason, &c.message, None), "rejected");
}

#[test]
fn not_yet_scraped_waits_and_confirmation_off_changes_nothing() {
    assert_eq!(
        confirm(programmed(), 0, &[&edge()], &served(Verdict::Unread)),
        None
    );
    assert_eq!(
        confirm(programmed(), 0, &[&edge()], &Served::new()),
        Some(programmed())
    );
    let mut reconciling = programmed();
    reconciling.status = "False".into();
    reconciling.reason = "Reconciling".into();
    let pending = served(Verdict::NoReplicas);
    assert_eq!(
        confirm(reconciling.clone(), 0, &[&edge()], &pending),
        Some(reconciling)
    );
    let none = confirm(programmed(), 0, &[&edge()], &pending).unwrap();
    assert_eq!(none.reason, PENDING);
    assert!(none
        .message
        .contains("no ready proxy pod of Gateway infra/edge"));
    assert_eq!(column(&none.reason, &none.message, Some(1)), "0/0");
    assert_eq!(column("Programmed", "every value is in effect", None), "-");
}

#[test]
fn the_served_cell_names_the_worst_of_a_policys_ancestors() {
    let now: k8s_openapi::jiff::Timestamp = "2026-11-28T14:00:40Z".parse().unwrap();
    let ancestor = |controller: &str, reason: &str, message: &str| {
        serde_json::json!({"controllerName": controller, "conditions": [
            {"type": "Accepted", "status": "True", "reason": "Accepted", "message": "",
             "lastTransitionTime": "2026-11-28T13:00:00Z"},
            {"type": "Programmed", "status": "False", "reason": reason, "message": message,
             "lastTransitionTime": "2026-11-28T14:00:00Z"}]})
    };
    let ours = "policy.attache.dev/attache";
    let served = ancestor(ours, "Programmed", "x; served by 3 of 3 replicas");
    let lagging = ancestor(
        ours,
        PENDING,
        "served by 2 of 3 replicas of Gateway infra/edge; ...",
    );
    let refused = ancestor(ours, REJECTED, "refused by 1 of 3 replicas ...");
    let theirs = ancestor(
        "example.com/other",
        REJECTED,
        "refused by 1 of 3 replicas ...",
    );
    let cell = |ancestors: Vec<serde_json::Value>| {
        served_cell(&serde_json::json!({"ancestors": ancestors}), now)
    };
    assert_eq!(cell(vec![served.clone()]), "3/3");
    assert_eq!(cell(vec![served.clone(), lagging.clone()]), "2/3 since 40s");
    assert_eq!(cell(vec![lagging, refused, served.clone()]), "rejected");
    assert_eq!(cell(vec![theirs, served.clone(), served]), "3/3");
    assert_eq!(cell(vec![]), "-");
    let applied_only = ancestor(ours, "Programmed", "every value is in effect");
    assert_eq!(cell(vec![applied_only]), "-");
}

#[test]
fn a_gateways_cell_reads_the_conditions_that_name_it() {
    let now: k8s_openapi::jiff::Timestamp = "2026-11-28T14:00:10Z".parse().unwrap();
    let policy = |reason: &str, message: &str| {
        serde_json::json!({"status": {"ancestors": [{"controllerName": "policy.attache.dev/attache",
            "conditions": [{"type": "Programmed", "status": "True", "reason": reason,
                "message": message, "lastTransitionTime": "2026-11-28T14:00:00Z"}]}]}})
    };
    let on_edge = policy(
        "Programmed",
        "x (applied to Gateway infra/edge); served by 3 of 3 replicas",
    );
    let other = policy(
        REJECTED,
        "refused by 1 of 2 replicas of Gateway infra/other (schema ...)",
    );
    let lag = policy(
        PENDING,
        "served by 1 of 3 replicas of Gateway infra/edge; ...",
    );
    let cell =
        |policies: &[&serde_json::Value]| gateway_cell(policies.iter().copied(), &edge(), now);
    assert_eq!(cell(&[&on_edge, &other]), "3/3");
    assert_eq!(cell(&[&on_edge, &other, &lag]), "1/3 since 10s");
    assert_eq!(cell(&[&other]), "-");
}
