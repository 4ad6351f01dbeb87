//! The controller through API-server faults, against the stand-in (issue
//! 30, item 6): a restart in the middle of a watch, 60 s of 500s, a leader
//! hand-over. Each ends with the state a resolve from scratch gives (a
//! round over the stored objects would write nothing), no edit lost, and
//! no write storm (the writes are counted and bounded).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail by panicking

use std::time::{Duration, Instant};

use attache_apiserver::{Scope, Verb};

mod common;
use common::standin::{
    edit_policy, free_port, shop_server, start_controller, until_converged, writes_since,
};

/// The storefront policy's request timeout as the applied plugin carries
/// it: the edit reached the data plane.
fn plugin_mentions(server: &attache_apiserver::Handle, needle: &str) -> bool {
    server
        .objects("extensions.istio.io", "wasmplugins")
        .iter()
        .any(|p| p.to_string().contains(needle))
}

#[tokio::test]
async fn a_restart_in_the_middle_of_a_watch_loses_nothing() {
    let server = shop_server().await;
    let controller = start_controller(&server, "restart", free_port());
    until_converged(&server, Duration::from_secs(60)).await;
    let since = Instant::now();
    // Every watch ends and the history is gone: resuming gets 410 Gone,
    // and each watcher lists again (kube-runtime's watcher).
    server.restart(true);
    assert!(
        !plugin_mentions(&server, "7000"),
        "not there before the edit"
    );
    edit_policy(&server, "shop", "storefront", "7s");
    until_converged(&server, Duration::from_secs(60)).await;
    assert!(plugin_mentions(&server, "7000"), "the edit is applied");
    let writes = writes_since(&server, since);
    // One apply of the edited Gateway and the statuses the edit changes,
    // with room for one retry each; never a rewrite of everything.
    assert!(writes.len() <= 6, "{writes:#?}");
    controller.abort();
}

#[tokio::test]
async fn sixty_seconds_of_500s_then_recovery() {
    let server = shop_server().await;
    let controller = start_controller(&server, "errors", free_port());
    until_converged(&server, Duration::from_secs(60)).await;
    let since = Instant::now();
    server
        .faults()
        .fail_for(Scope::All, 500, Duration::from_secs(60));
    // Dropped watches come back to a failing server.
    server.drop_watches();
    assert!(
        !plugin_mentions(&server, "9000"),
        "not there before the edit"
    );
    edit_policy(&server, "shop", "storefront", "9s");
    tokio::time::sleep(Duration::from_secs(61)).await;
    until_converged(&server, Duration::from_secs(90)).await;
    assert!(plugin_mentions(&server, "9000"), "the edit made it through");
    let during: Vec<_> = server
        .log()
        .records()
        .into_iter()
        .filter(|r| r.received >= since && r.verb.is_write() && r.resource != "leases")
        .collect();
    // Back-off, not a storm: a failing Gateway's applies and the round
    // that retries failed status writes double their wait (1 s, 2 s, ...
    // 60 s), so each object is tried at most log2(60) + 2 = 8 times in the
    // window, whatever the rate of failures (a loop without back-off sends
    // thousands).
    let objects: std::collections::BTreeSet<&str> = during
        .iter()
        .filter(|r| r.resource != "events")
        .map(|r| r.path.as_str())
        .collect();
    let events = during.iter().filter(|r| r.resource == "events").count();
    assert!(
        events <= 4,
        "an Event per new failure, not per try: {events}"
    );
    for object in &objects {
        let tries = during.iter().filter(|r| r.path == *object).count();
        assert!(tries <= 8, "{object}: {tries} tries in the window");
    }
    assert!(
        objects.len() <= 11,
        "only the plugin and the 10 policies: {objects:#?}"
    );
    let ok_applies = server.log().count_ok(Verb::Apply, "wasmplugins", None);
    assert!(ok_applies >= 2, "the first apply and the edit's");
    controller.abort();
}

#[tokio::test]
async fn a_leader_hand_over_in_the_middle_of_a_round() {
    let server = shop_server().await;
    let first = start_controller(&server, "replica-a", free_port());
    until_converged(&server, Duration::from_secs(60)).await;
    let second = start_controller(&server, "replica-b", free_port());
    // An edit, and the leader gone before its round is done writing: its
    // status writes are slowed so that the stop lands mid-round.
    server.faults().delay(
        Scope::Subresource("routepolicies".into(), "status".into()),
        Duration::from_millis(500),
    );
    let since = Instant::now();
    assert!(
        !plugin_mentions(&server, "11000"),
        "not there before the edit"
    );
    edit_policy(&server, "shop", "storefront", "11s");
    tokio::time::sleep(Duration::from_millis(700)).await;
    first.abort();
    server.faults().clear();
    // replica-b takes the Lease when it expires (15 s) and finishes.
    until_converged(&server, Duration::from_secs(60)).await;
    assert!(plugin_mentions(&server, "11000"), "the edit is applied");
    let writes = writes_since(&server, since);
    assert!(writes.len() <= 10, "{writes:#?}");
    second.abort();
}
