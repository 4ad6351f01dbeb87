//! The served-state decisions, driven directly: applied documents,
//! scrapes and times in, the published verdict out.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::{AppliedDoc, GatewayServed, ProxyStats, Scrape, Verdict, CONFIRM, UNKNOWN_AFTER};

fn doc(id: u64, at: Instant, stamp: &str) -> AppliedDoc {
    AppliedDoc {
        id,
        at,
        stamp: stamp.into(),
    }
}

fn serving(id: u64) -> Scrape {
    Scrape::Read(ProxyStats {
        document: Some(id),
        refused: [0; 4],
    })
}

fn refusing(id: u64, invalid: u64) -> Scrape {
    Scrape::Read(ProxyStats {
        document: Some(id),
        refused: [0, 0, 0, invalid],
    })
}

fn pods(scrapes: &[Scrape]) -> BTreeMap<String, Scrape> {
    scrapes
        .iter()
        .enumerate()
        .map(|(i, s)| (format!("edge-{i}"), s.clone()))
        .collect()
}

/// `state` after the same scrape `times` times, a second apart.
fn scrape_n(
    state: &GatewayServed,
    scrapes: &[Scrape],
    times: u8,
    at: Instant,
) -> (GatewayServed, Option<Duration>) {
    let mut state = state.clone();
    let mut took = None;
    for i in 0..times {
        let (next, t) = state.scraped(pods(scrapes), at + Duration::from_secs(u64::from(i)));
        state = next;
        took = took.or(t);
    }
    (state, took)
}

/// A Gateway of three replicas that all serve document 1.
fn all_serve_one(t0: Instant) -> GatewayServed {
    let state = GatewayServed::applied(None, doc(1, t0, "T0"));
    scrape_n(&state, &[serving(1), serving(1), serving(1)], 1, t0).0
}

#[test]
fn nothing_is_published_before_the_first_scrape_and_the_first_is_taken_at_once() {
    let t0 = Instant::now();
    let state = GatewayServed::applied(None, doc(1, t0, "T0"));
    assert_eq!(state.published(), &Verdict::Unread);
    assert_eq!(
        all_serve_one(t0).published(),
        &Verdict::Served { replicas: 3 }
    );
}

#[test]
fn a_new_document_is_pending_at_once_then_served_after_confirmation() {
    let t0 = Instant::now();
    let t1 = t0 + Duration::from_secs(10);
    let state = GatewayServed::applied(Some(&all_serve_one(t0)), doc(2, t1, "T1"));
    assert_eq!(
        state.published(),
        &Verdict::Pending {
            serving: 0,
            replicas: 3,
            unknown: 0,
            oldest: Some("T0".into()),
        }
    );
    // One replica has it, two lag: the oldest still served is document 1's.
    let (state, took) = scrape_n(&state, &[serving(2), serving(1), serving(1)], CONFIRM, t1);
    assert_eq!(took, None);
    assert_eq!(
        state.published(),
        &Verdict::Pending {
            serving: 1,
            replicas: 3,
            unknown: 0,
            oldest: Some("T0".into()),
        }
    );
    assert_eq!(state.counts(), (1, 2, 0));
    // All serve it: published after CONFIRM scrapes, with the time it took.
    let at = t1 + Duration::from_secs(5);
    let (once, took) = state.scraped(pods(&[serving(2), serving(2), serving(2)]), at);
    assert!(matches!(once.published(), Verdict::Pending { .. }));
    assert_eq!(took, None);
    let (twice, took) = once.scraped(pods(&[serving(2), serving(2), serving(2)]), at);
    assert_eq!(twice.published(), &Verdict::Served { replicas: 3 });
    assert_eq!(took, Some(Duration::from_secs(5)));
    // Applying the same document again changes nothing.
    assert_eq!(
        GatewayServed::applied(Some(&twice), doc(2, at, "T2")),
        twice
    );
}

#[test]
fn a_replica_that_flaps_never_moves_the_published_verdict() {
    let t0 = Instant::now();
    let mut state = all_serve_one(t0);
    let good = [serving(1), serving(1), serving(1)];
    let flapped = [serving(1), serving(1), Scrape::Read(ProxyStats::default())];
    for i in 0..20 {
        let scrapes = if i % 2 == 0 { &flapped } else { &good };
        state = state.scraped(pods(scrapes), t0).0;
        assert_eq!(
            state.published(),
            &Verdict::Served { replicas: 3 },
            "scrape {i}"
        );
    }
}

#[test]
fn a_replica_that_cannot_be_read_keeps_its_reading_then_is_unknown() {
    let t0 = Instant::now();
    let failing = [
        serving(1),
        serving(1),
        Scrape::Failed("timed out after 2 s".into()),
    ];
    assert!(all_serve_one(t0).settled());
    let (state, _) = scrape_n(&all_serve_one(t0), &failing, UNKNOWN_AFTER as u8 - 1, t0);
    assert_eq!(state.published(), &Verdict::Served { replicas: 3 });
    // Still served, but read often until the failure is decided.
    assert!(!state.settled());
    let (state, _) = scrape_n(&state, &failing, CONFIRM + 1, t0);
    assert_eq!(
        state.published(),
        &Verdict::Pending {
            serving: 2,
            replicas: 3,
            unknown: 1,
            oldest: None,
        }
    );
    assert_eq!(
        state.replicas["edge-2"].why.as_deref(),
        Some("timed out after 2 s")
    );
}

#[test]
fn a_replica_whose_refusals_rose_under_a_new_document_refused_it() {
    let t0 = Instant::now();
    // It had refused one document before: that one does not count.
    let state = GatewayServed::applied(None, doc(1, t0, "T0"));
    let before = [serving(1), serving(1), refusing(1, 1)];
    let (state, _) = scrape_n(&state, &before, 1, t0);
    assert_eq!(state.published(), &Verdict::Served { replicas: 3 });
    let state = GatewayServed::applied(Some(&state), doc(2, t0, "T1"));
    let after = [serving(2), serving(2), refusing(1, 3)];
    let (state, _) = scrape_n(&state, &after, CONFIRM, t0);
    assert_eq!(
        state.published(),
        &Verdict::Rejected {
            refused: 1,
            replicas: 3,
            classes: vec!["invalid"],
        }
    );
    assert_eq!(state.counts(), (2, 0, 1));
    // A fixed document: pending, then served by all.
    let state = GatewayServed::applied(Some(&state), doc(3, t0, "T2"));
    assert!(matches!(state.published(), Verdict::Pending { .. }));
    let fixed = [serving(3), serving(3), refusing(3, 3)];
    let (state, _) = scrape_n(&state, &fixed, CONFIRM, t0);
    assert_eq!(state.published(), &Verdict::Served { replicas: 3 });
}

#[test]
fn a_replica_gone_from_the_ready_set_is_forgotten_and_none_left_says_so() {
    let t0 = Instant::now();
    let (state, _) = scrape_n(&all_serve_one(t0), &[serving(1), serving(1)], CONFIRM, t0);
    assert_eq!(state.published(), &Verdict::Served { replicas: 2 });
    assert_eq!(state.replicas.len(), 2);
    let (state, _) = scrape_n(&state, &[], CONFIRM, t0);
    assert_eq!(state.published(), &Verdict::NoReplicas);
    // Nothing to read: no reason to read often.
    assert!(state.settled());
}

#[test]
fn a_document_older_than_the_history_is_named_as_older() {
    let t0 = Instant::now();
    let mut state = all_serve_one(t0);
    for id in 2..20 {
        state = GatewayServed::applied(Some(&state), doc(id, t0, &format!("T{id}")));
    }
    assert_eq!(state.history.len(), 8);
    assert_eq!(
        state.published(),
        &Verdict::Pending {
            serving: 0,
            replicas: 3,
            unknown: 0,
            oldest: None,
        }
    );
}
