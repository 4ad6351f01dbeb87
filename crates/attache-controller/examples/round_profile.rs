//! Where an incremental round's time and memory go (issue 30), in-process
//! and without an API server: the pure pieces of the controller's round
//! (each object read as the watcher reads it when it arrives and kept as
//! its reflector keeps it, plan, status) over `scripts/gen_distinct.py N
//! [G]`'s objects, which stand for the API server's (they are the
//! example's, not the controller's, memory). Settles as the controller would (statuses written back into
//! the objects with a new resourceVersion), then makes EDITS one-policy
//! edits, each followed by a timed round. Each phase's span prints its busy
//! time when it closes (parse, ancestors, fingerprints, resolve/encode per
//! Gateway, share per Gateway, fold, patches); RSS is printed after each
//! stage.
//!
//! cargo run --release -p attache-controller --example round_profile -- IN.json [EDITS]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a measuring tool

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use attache_controller::kinds::named;
use attache_controller::kube::watched::Watched;
use attache_controller::reconcile::{reconcile_with, Config, Memo};
use attache_controller::snapshot::{ReadCache, Snapshot};
use attache_controller::status::{round_patches_with, Applied, StatusMemo};
use serde_json::{json, Value};
use tracing_subscriber::fmt::format::FmtSpan;

/// VmRSS of this process, in MiB.
fn rss() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}

/// Bytes glibc's malloc has handed out and not had back, in MiB: what is
/// in use, as against RSS, which also counts freed pages malloc keeps.
fn heap_in_use() -> f64 {
    // SAFETY: mallinfo2 only reads malloc's own counters.
    let info = unsafe { libc::mallinfo2() };
    (info.uordblks + info.hblkhd) as f64 / 1024.0 / 1024.0
}

/// What the loop keeps between rounds.
#[derive(Default)]
struct Loop {
    /// What the reflector stores hold: each object (by its index in the
    /// API's objects) as it was read when it arrived.
    store: Vec<Option<Arc<Watched>>>,
    cache: ReadCache,
    memo: Memo,
    statuses: StatusMemo,
}

/// One round: read, plan, status. Returns the status writes, applied to
/// `objects` as the API server would (a new resourceVersion each), and the
/// time the round took.
fn round(state: &mut Loop, objects: &mut [Value], version: &mut u64) -> (usize, Duration) {
    let started = Instant::now();
    let rss_before = rss();
    let snapshot = tracing::info_span!("read").in_scope(|| {
        arrive(&mut state.store, objects);
        let rows = state
            .store
            .iter()
            .zip(objects.iter())
            .filter_map(|(w, o)| Some((named(o["kind"].as_str()?)?, &**w.as_ref()?)));
        Snapshot::read(rows, BTreeSet::new(), &mut state.cache)
    });
    let rss_read = rss();
    let config = Config::default();
    let plan = tracing::info_span!("plan")
        .in_scope(|| reconcile_with(&config, &snapshot, &mut state.memo));
    let rss_planned = rss();
    let heap_planned = heap_in_use();
    let applied: Applied = plan.gateways.keys().map(|k| (k.clone(), Ok(()))).collect();
    let patches = tracing::info_span!("status").in_scope(|| {
        round_patches_with(
            &plan,
            &snapshot,
            &applied,
            "2026-11-26T00:00:00Z",
            &mut state.statuses,
        )
    });
    let took = started.elapsed();
    let rss_status = rss();
    drop(plan);
    drop(snapshot);
    let dropped = rss();
    // As the controller's loop does after each round (NO_TRIM=1 to see
    // what glibc would keep without it).
    if std::env::var_os("NO_TRIM").is_none() {
        attache_controller::kube::memory::release_freed();
    }
    // What each stage added (the read cache and its documents, the plan with
    // its parse cache and memo, the status memo) and what the round's own
    // copies (the assembled input, the snapshot) held.
    println!(
        "  RSS MiB: before {rss_before:.0}, read +{:.0}, plan +{:.0}, status +{:.0}, round's copies dropped -{:.0}, freed pages released -{:.0}",
        rss_read - rss_before,
        rss_planned - rss_read,
        rss_status - rss_planned,
        rss_status - dropped,
        dropped - rss(),
    );
    println!(
        "  heap in use MiB: after plan {heap_planned:.0}, at the round's end {:.0}",
        heap_in_use()
    );
    let index: HashMap<(String, String), usize> = objects
        .iter()
        .enumerate()
        .filter(|(_, o)| o["kind"] == "RoutePolicy")
        .map(|(i, o)| {
            let meta = &o["metadata"];
            let key = (
                meta["namespace"].as_str().unwrap_or_default().to_string(),
                meta["name"].as_str().unwrap_or_default().to_string(),
            );
            (key, i)
        })
        .collect();
    let writes = patches.len();
    for patch in patches {
        let i = index[&(patch.key.namespace.clone(), patch.key.name.clone())];
        *version += 1;
        objects[i]["status"] = patch.status;
        objects[i]["metadata"]["resourceVersion"] = json!(version.to_string());
    }
    (writes, took)
}

/// What the watcher does with each event: an object whose resourceVersion
/// is new to the store arrives and is read (`Watched::arrived`).
fn arrive(store: &mut Vec<Option<Arc<Watched>>>, objects: &[Value]) {
    store.resize(objects.len(), None);
    for (stored, object) in store.iter_mut().zip(objects) {
        let Some(kind) = object["kind"].as_str().and_then(named) else {
            continue;
        };
        let version = object["metadata"]["resourceVersion"].as_str();
        let current = stored
            .as_ref()
            .is_some_and(|w| w.object.metadata.resource_version.as_deref() == version);
        if !current {
            let mut arrived: kube::api::DynamicObject =
                serde_json::from_value(object.clone()).unwrap();
            arrived.metadata.managed_fields = None;
            *stored = Some(Arc::new(Watched::arrived(kind, arrived, stored.take())));
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let input = args.next().expect("usage: round_profile IN.json [EDITS]");
    let edits: usize = args.next().map_or(10, |a| a.parse().unwrap());
    tracing_subscriber::fmt()
        .with_span_events(FmtSpan::CLOSE)
        .with_target(false)
        .with_env_filter("info")
        .with_writer(std::io::stderr)
        .init();
    let before = rss();
    let text = std::fs::read_to_string(&input).unwrap();
    let mut objects: Vec<Value> = text
        .split("\n---\n")
        .enumerate()
        .map(|(i, doc)| {
            let mut o: Value = serde_json::from_str(doc).unwrap();
            o["metadata"]["uid"] = format!("uid-{i}").into();
            o["metadata"]["resourceVersion"] = "1".into();
            o
        })
        .collect();
    drop(text);
    let mut version = 1;
    let loaded = rss();
    println!(
        "{} objects as JSON values: RSS {before:.0} -> {loaded:.0} MiB",
        objects.len()
    );
    let mut state = Loop::default();
    let (writes, took) = round(&mut state, &mut objects, &mut version);
    println!(
        "cold round: {took:?}, {writes} status writes; RSS {:.0} MiB",
        rss()
    );
    let (writes, took) = round(&mut state, &mut objects, &mut version);
    println!(
        "round after the statuses came back: {took:?}, {writes} status writes; RSS {:.0} MiB",
        rss()
    );
    let (writes, took) = round(&mut state, &mut objects, &mut version);
    println!("settled round: {took:?}, {writes} status writes");
    let policies: BTreeMap<String, usize> = objects
        .iter()
        .enumerate()
        .filter(|(_, o)| o["kind"] == "RoutePolicy")
        .map(|(i, o)| (o["metadata"]["name"].as_str().unwrap().to_string(), i))
        .collect();
    let mut times = Vec::new();
    for i in 0..edits {
        let name = format!("p{}", (i * 7919) % policies.len());
        let at = policies[&name];
        version += 1;
        objects[at]["spec"]["defaults"]["timeouts"]["request"] = json!(format!("{}ms", 20_000 + i));
        objects[at]["metadata"]["resourceVersion"] = json!(version.to_string());
        eprintln!("--- edit {i}: {name}");
        let (writes, took) = round(&mut state, &mut objects, &mut version);
        println!("edit {i} ({name}): round {took:?}, {writes} status writes");
        times.push(took.as_secs_f64() * 1000.0);
        // The status write coming back, as the watch would deliver it.
        round(&mut state, &mut objects, &mut version);
    }
    times.sort_by(f64::total_cmp);
    if !times.is_empty() {
        println!(
            "{edits} one-policy edit rounds: median {:.0} ms, max {:.0} ms; RSS {:.0} MiB",
            times[times.len() / 2],
            times[times.len() - 1],
            rss()
        );
    }
    // What each structure kept between rounds holds: forgotten one at a
    // time, glibc's heap in use before and after each.
    let mut heap = heap_in_use();
    let mut forgotten = |what: &str| {
        let now = heap_in_use();
        println!("forgetting {what}: heap in use -{:.0} MiB", heap - now);
        heap = now;
    };
    let Loop {
        store,
        cache,
        memo,
        statuses,
    } = state;
    drop(memo);
    forgotten("the reconcile memo (each Gateway's plugin)");
    drop(cache);
    forgotten("the read cache (objects the watcher did not read)");
    drop(statuses);
    forgotten("the status memo (shares, digests)");
    drop(store);
    forgotten("the reflector's objects (metadata, parsed pieces, slim document)");
    drop(objects);
    forgotten("the API server's objects (the example's, as JSON values)");
}
