//! The loop of "Programmed means served" (docs/controller.md): what each
//! round applied goes in ([`Confirmer::after_round`]), each Gateway's
//! ready proxy pods are read ([`super::scrape`]), the pure verdict
//! (`crate::served::GatewayServed`) comes out, and a round is woken when a
//! published verdict changes, so that status says it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use attache_core::topology::ObjectKey;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::reflector::Store;
use tokio::sync::Notify;

use super::metrics::Metrics;
use super::scrape::{ready_pods, scrape_all, ScrapeOptions};
use super::watch::CacheSync;
use crate::reconcile::{plugin_key, Config, Outcome, Plan};
use crate::served::condition::{Confirmation, Served};
use crate::served::{document, AppliedDoc, GatewayServed};
use crate::snapshot::Snapshot;
use crate::status::Applied;

/// Between scrapes while a Gateway is not (yet) served by every replica:
/// what the edit-to-served time waits at most for a reading.
const BUSY: Duration = Duration::from_millis(250);
/// Between scrapes when every Gateway is served: a replica that restarts
/// or refuses a push on its own is noticed within this.
const IDLE: Duration = Duration::from_secs(5);

/// What the round and the scrape loop share.
pub struct Confirmer {
    pub options: ScrapeOptions,
    pods: Vec<Store<Pod>>,
    state: Mutex<Tracked>,
    /// Woken when a round applied something new: scrape at once.
    wake: Notify,
}

#[derive(Default)]
struct Tracked {
    gateways: BTreeMap<ObjectKey, GatewayServed>,
    /// The live plugin's resourceVersion each identity was computed from,
    /// so that a Gateway left unchanged is not inflated every round.
    live: BTreeMap<ObjectKey, (String, u64)>,
}

impl Confirmer {
    pub fn new(options: ScrapeOptions, pods: Vec<Store<Pod>>) -> Self {
        Confirmer {
            options,
            pods,
            state: Mutex::new(Tracked::default()),
            wake: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Tracked> {
        // A panic while holding it cannot leave the map half-written in a
        // way that matters: each entry is replaced whole.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records what this round applied (or found live and current) for
    /// each Gateway, forgets Gateways no longer served, and returns what
    /// status is to say of each.
    pub fn after_round(
        &self,
        config: &Config,
        plan: &Plan,
        snapshot: &Snapshot,
        applied: &Applied,
        stamp: &str,
    ) -> Served {
        let now = Instant::now();
        let mut tracked = self.lock();
        tracked
            .gateways
            .retain(|key, _| plan.gateways.contains_key(key));
        tracked
            .live
            .retain(|key, _| plan.gateways.contains_key(key));
        let mut fresh = false;
        for (key, outcome) in &plan.gateways {
            if !matches!(applied.get(key), Some(Ok(()))) {
                continue;
            }
            let id = match outcome {
                Outcome::Apply(plugin) => document::of_plugin(plugin).ok(),
                Outcome::Unchanged => {
                    let live = snapshot.live_plugin(config.written, &plugin_key(key));
                    live.and_then(|live| live_id(&mut tracked.live, key, live))
                }
                Outcome::Keep(_) => None,
            };
            let Some(id) = id else {
                continue;
            };
            let doc = AppliedDoc {
                id,
                at: now,
                stamp: stamp.to_string(),
            };
            let before = tracked.gateways.get(key);
            fresh |= before.is_none_or(|b| b.applied.id != id);
            let next = GatewayServed::applied(before, doc);
            tracked.gateways.insert(key.clone(), next);
        }
        if fresh {
            self.wake.notify_one();
        }
        served(&tracked.gateways)
    }
}

/// The identity of a live plugin, computed once per resourceVersion.
fn live_id(
    cache: &mut BTreeMap<ObjectKey, (String, u64)>,
    key: &ObjectKey,
    live: &serde_json::Value,
) -> Option<u64> {
    let version = live["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default();
    if let Some((v, id)) = cache.get(key) {
        if v == version {
            return Some(*id);
        }
    }
    let id = document::of_plugin(live).ok()?;
    cache.insert(key.clone(), (version.to_string(), id));
    Some(id)
}

fn served(gateways: &BTreeMap<ObjectKey, GatewayServed>) -> Served {
    gateways
        .iter()
        .map(|(key, state)| {
            let confirmation = Confirmation {
                verdict: state.published().clone(),
                applied_at: state.applied.stamp.clone(),
            };
            (key.clone(), confirmation)
        })
        .collect()
}

/// Scrapes forever: at once after a round applied something, every
/// [`BUSY`] while a Gateway is not served by all its replicas, every
/// [`IDLE`] once every one is settled (`GatewayServed::settled`). A changed verdict wakes a round.
pub async fn run(confirmer: Arc<Confirmer>, shared: Arc<CacheSync>, metrics: Arc<Metrics>) {
    loop {
        let gateways: Vec<ObjectKey> = confirmer.lock().gateways.keys().cloned().collect();
        let pods = ready_pods(&confirmer.pods, &confirmer.options.label, gateways);
        let scrapes = scrape_all(pods, &confirmer.options).await;
        let now = Instant::now();
        let (changed, settled) = {
            let mut tracked = confirmer.lock();
            let mut changed = false;
            for (key, scrapes) in scrapes {
                let Some(state) = tracked.gateways.get(&key) else {
                    continue;
                };
                let (next, took) = state.scraped(scrapes, now);
                if next.published() != state.published() {
                    tracing::info!(gateway = %key, verdict = ?next.published(), "what the replicas serve changed");
                    changed = true;
                }
                if let Some(took) = took {
                    metrics.served_after(took.as_secs_f64());
                }
                metrics.replicas(&key, next.counts());
                tracked.gateways.insert(key, next);
            }
            let settled = tracked.gateways.values().all(GatewayServed::settled);
            (changed, settled)
        };
        if changed {
            shared.changed.notify_one();
        }
        let wait = if settled { IDLE } else { BUSY };
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = confirmer.wake.notified() => {}
        }
    }
}
