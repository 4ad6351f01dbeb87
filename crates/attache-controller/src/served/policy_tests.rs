//! Per-policy verdicts, driven directly: a document that changes one
//! policy's part leaves every other policy's `Programmed` as it was (the
//! same condition, so no status write), and only that policy goes
//! `Pending` (or `Rejected`) until the replicas serve it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use attache_core::status::Condition;
use attache_core::topology::ObjectKey;

use super::condition::{confirm, Confirmation, Served, PENDING, REJECTED};
use super::{AppliedDoc, Contributions, GatewayServed, ProxyStats, Scrape, CONFIRM};

const POLICIES: u64 = 50;
/// The policy the edit changes.
const EDITED: u64 = 7;

fn edge() -> ObjectKey {
    ObjectKey {
        namespace: "infra".into(),
        name: "edge".into(),
    }
}

fn doc(id: u64, at: Instant, stamp: &str) -> AppliedDoc {
    AppliedDoc {
        id,
        at,
        stamp: stamp.into(),
    }
}

/// Every policy's part, with `EDITED`'s set to `edited`.
fn parts(edited: u64) -> Arc<Contributions> {
    Arc::new(
        (0..POLICIES)
            .map(|p| (p, if p == EDITED { edited } else { 1000 + p }))
            .collect(),
    )
}

fn scrape(state: &GatewayServed, serve: [(u64, u64); 3], times: u8) -> GatewayServed {
    let pods: BTreeMap<String, Scrape> = serve
        .iter()
        .enumerate()
        .map(|(i, (id, invalid))| {
            let stats = ProxyStats {
                document: Some(*id),
                refused: [0, 0, 0, *invalid],
            };
            (format!("edge-{i}"), Scrape::Read(stats))
        })
        .collect();
    let mut state = state.clone();
    for _ in 0..times {
        state = state.scraped(pods.clone(), Instant::now()).0;
    }
    state
}

/// Every policy's `Programmed` condition with the Gateway in `state`.
fn conditions(state: &GatewayServed) -> Vec<Condition> {
    let served: Served = [(edge(), Confirmation::of_state(state))].into();
    (0..POLICIES)
        .map(|policy| confirm(programmed(), policy, &[&edge()], &served).unwrap())
        .collect()
}

/// `Programmed` as the core gives it once the document is applied.
fn programmed() -> Condition {
    Condition {
        kind: "Programmed".into(),
        status: "True".into(),
        reason: "Programmed".into(),
        message: "every value is in effect (applied to Gateway infra/edge)".into(),
        observed_generation: Some(1),
    }
}

/// The policies whose condition differs: those a round writes.
fn written(before: &[Condition], after: &[Condition]) -> Vec<u64> {
    (0..POLICIES)
        .filter(|p| before[*p as usize] != after[*p as usize])
        .collect()
}

/// Document 1 served by all three replicas.
fn served_one() -> GatewayServed {
    let t0 = Instant::now();
    let state = GatewayServed::applied_with(None, doc(1, t0, "T0"), parts(1));
    scrape(&state, [(1, 0), (1, 0), (1, 0)], 1)
}

#[test]
fn a_document_changing_one_policy_writes_only_that_policy() {
    let served = served_one();
    let programmed = conditions(&served);
    assert!(programmed
        .iter()
        .all(|c| c.status == "True" && c.message.ends_with("served by 3 of 3 replicas")));

    let t1 = Instant::now() + Duration::from_secs(10);
    let applied = GatewayServed::applied_with(Some(&served), doc(2, t1, "T1"), parts(2));
    let pending = conditions(&applied);
    assert_eq!(written(&programmed, &pending), vec![EDITED]);
    let edited = &pending[EDITED as usize];
    assert_eq!(
        (edited.status.as_str(), edited.reason.as_str()),
        ("False", PENDING)
    );
    assert!(
        edited.message.contains("served by 0 of 3"),
        "{}",
        edited.message
    );

    // Two replicas serve it, one lags: the others are served by all three
    // (either document carries their values); nothing is written.
    let lagging = scrape(&applied, [(2, 0), (2, 0), (1, 0)], CONFIRM);
    assert_eq!(written(&pending, &conditions(&lagging)).len(), 1);
    assert!(conditions(&lagging)[EDITED as usize]
        .message
        .contains("served by 2 of 3"));
    assert_eq!(written(&programmed, &conditions(&lagging)), vec![EDITED]);

    // All serve it: the edited policy is Programmed again, as the others.
    let all = scrape(&lagging, [(2, 0), (2, 0), (2, 0)], CONFIRM);
    assert_eq!(conditions(&all), programmed);
}

#[test]
fn a_refused_document_rejects_only_the_policies_it_changes() {
    let served = served_one();
    let programmed = conditions(&served);
    let applied =
        GatewayServed::applied_with(Some(&served), doc(2, Instant::now(), "T1"), parts(2));
    let refused = scrape(&applied, [(2, 0), (2, 0), (1, 1)], CONFIRM);
    let after = conditions(&refused);
    assert_eq!(written(&programmed, &after), vec![EDITED]);
    assert_eq!(after[EDITED as usize].reason, REJECTED);
    // The others: still served by all three, the refusing one included
    // (it serves document 1, which carries their values).
    assert!(after[0].message.ends_with("served by 3 of 3 replicas"));
}

#[test]
fn a_policy_changed_and_changed_back_stays_pending_until_all_serve_the_last() {
    let served = served_one();
    let at = Instant::now();
    let two = GatewayServed::applied_with(Some(&served), doc(2, at, "T1"), parts(2));
    // Back to its first part, before any replica served document 2: a
    // replica may serve 2, which does not carry it.
    let three = GatewayServed::applied_with(Some(&two), doc(3, at, "T2"), parts(1));
    let lagging = scrape(&three, [(3, 0), (3, 0), (2, 0)], CONFIRM);
    let after = conditions(&lagging);
    assert_eq!(after[EDITED as usize].reason, PENDING);
    assert!(after[0].message.ends_with("served by 3 of 3 replicas"));
    let all = scrape(&lagging, [(3, 0), (3, 0), (3, 0)], CONFIRM);
    assert_eq!(conditions(&all), conditions(&served));
}

#[test]
fn a_replica_that_serves_no_document_of_the_epoch_holds_back_every_policy() {
    let served = served_one();
    let applied =
        GatewayServed::applied_with(Some(&served), doc(2, Instant::now(), "T1"), parts(2));
    // A replica on a document older than the last one all served (a pod
    // restored from an old push): no policy's values are known there.
    let stale = scrape(&applied, [(2, 0), (2, 0), (9, 0)], CONFIRM);
    assert!(conditions(&stale).iter().all(|c| c.reason == PENDING));
}

#[test]
fn a_policy_without_a_known_part_reads_the_applied_documents_verdict() {
    let served = served_one();
    let applied =
        GatewayServed::applied_with(Some(&served), doc(2, Instant::now(), "T1"), parts(2));
    let served_map: Served = [(edge(), Confirmation::of_state(&applied))].into();
    let c = confirm(programmed(), POLICIES + 1, &[&edge()], &served_map).unwrap();
    assert_eq!(c.reason, PENDING);
}
