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
use tokio::sync::{Notify, Semaphore};

use super::metrics::Metrics;
use super::scrape::{ready_pods, scrape_gateway, ScrapeOptions};
use crate::reconcile::{plugin_key, Config, Outcome, Plan};
use crate::served::condition::{Confirmation, Served};
use crate::served::{document, AppliedDoc, Contributions, GatewayServed, Scrape};
use crate::snapshot::Snapshot;
use crate::status::{Applied, StatusMemo};

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
    /// Woken when the set of Gateways changed: their tasks follow.
    wake: Notify,
    /// Woken when a published verdict changed: the controller's loop runs
    /// a round at once, without the debounce meant for bursts of edits.
    pub verdicts: Notify,
}

#[derive(Default)]
struct Tracked {
    gateways: BTreeMap<ObjectKey, GatewayServed>,
    /// Each Gateway's task is woken by its own: a new document applied.
    wakes: BTreeMap<ObjectKey, Arc<Notify>>,
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
            verdicts: Notify::new(),
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
    /// each Gateway, with each policy's part in it from `statuses` (which
    /// it folds first), forgets Gateways no longer served, and returns
    /// what status is to say of each.
    pub fn after_round(
        &self,
        config: &Config,
        (plan, snapshot): (&Plan, &Snapshot),
        applied: &Applied,
        statuses: &mut StatusMemo,
        stamp: &str,
    ) -> Served {
        let now = Instant::now();
        // Outside the lock: the scrape tasks wait on it.
        statuses.refresh(plan);
        let parts: BTreeMap<&ObjectKey, Arc<Contributions>> = applied
            .iter()
            .filter(|(_, outcome)| outcome.is_ok())
            .filter_map(|(key, _)| Some((key, statuses.contributions(key, plan)?)))
            .collect();
        let mut tracked = self.lock();
        let before = tracked.gateways.len();
        tracked
            .gateways
            .retain(|key, _| plan.gateways.contains_key(key));
        tracked
            .live
            .retain(|key, _| plan.gateways.contains_key(key));
        tracked
            .wakes
            .retain(|key, _| plan.gateways.contains_key(key));
        let mut changed_set = tracked.gateways.len() != before;
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
            changed_set |= before.is_none();
            let fresh = before.is_none_or(|b| b.applied.id != id);
            let parts = parts.get(key).cloned().unwrap_or_default();
            let next = GatewayServed::applied_with(before, doc, parts);
            tracked.gateways.insert(key.clone(), next);
            if fresh {
                tracked.wakes.entry(key.clone()).or_default().notify_one();
            }
        }
        if changed_set {
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
        .map(|(key, state)| (key.clone(), Confirmation::of_state(state)))
        .collect()
}

impl Confirmer {
    /// One Gateway's scrape taken into its state; whether the published
    /// verdict changed.
    fn take(&self, key: &ObjectKey, scrapes: BTreeMap<String, Scrape>, metrics: &Metrics) -> bool {
        let mut tracked = self.lock();
        let Some(state) = tracked.gateways.get(key) else {
            return false;
        };
        let (next, took) = state.scraped(scrapes, Instant::now());
        let changed = next.published() != state.published();
        if changed {
            tracing::info!(gateway = %key, verdict = ?next.published(), "what the replicas serve changed");
        }
        if let Some(took) = took {
            metrics.served_after(took.as_secs_f64());
        }
        metrics.replicas(key, next.counts());
        tracked.gateways.insert(key.clone(), next);
        changed
    }

    /// Whether `key` is settled (`GatewayServed::settled`); `None` once it
    /// is no longer tracked.
    fn settled(&self, key: &ObjectKey) -> Option<bool> {
        self.lock().gateways.get(key).map(GatewayServed::settled)
    }

    fn wake_of(&self, key: &ObjectKey) -> Arc<Notify> {
        self.lock().wakes.entry(key.clone()).or_default().clone()
    }
}

/// The per-Gateway tasks, aborted with the loop that holds them.
#[derive(Default)]
struct GatewayTasks(BTreeMap<ObjectKey, tokio::task::JoinHandle<()>>);

impl Drop for GatewayTasks {
    fn drop(&mut self) {
        for task in self.0.values() {
            task.abort();
        }
    }
}

/// One task per tracked Gateway, started and stopped as rounds add and
/// drop Gateways: a Gateway whose pods hang waits for its own timeouts and
/// never holds back another's readings.
pub async fn run(confirmer: Arc<Confirmer>, metrics: Arc<Metrics>) {
    let permits = Arc::new(Semaphore::new(confirmer.options.concurrency.max(1)));
    let mut tasks = GatewayTasks::default();
    loop {
        let keys: Vec<ObjectKey> = confirmer.lock().gateways.keys().cloned().collect();
        tasks.0.retain(|key, task| {
            let tracked = keys.contains(key);
            if !tracked {
                // Its last reading may have come after the round forgot
                // the Gateway's series: they go now, with its task.
                metrics.forget_gateway(key);
            }
            let keep = tracked && !task.is_finished();
            if !keep {
                task.abort();
            }
            keep
        });
        for key in keys {
            tasks.0.entry(key.clone()).or_insert_with(|| {
                let gateway = Gateway {
                    key,
                    confirmer: confirmer.clone(),
                    metrics: metrics.clone(),
                    permits: permits.clone(),
                };
                tokio::spawn(gateway.run())
            });
        }
        confirmer.wake.notified().await;
    }
}

/// What one Gateway's task needs.
struct Gateway {
    key: ObjectKey,
    confirmer: Arc<Confirmer>,
    metrics: Arc<Metrics>,
    permits: Arc<Semaphore>,
}

impl Gateway {
    /// Scrapes at once, then every [`BUSY`] until settled, every [`IDLE`]
    /// after, and at once again when a new document is applied; a changed
    /// verdict wakes a round. Ends when the Gateway is no longer tracked.
    async fn run(self) {
        let wake = self.confirmer.wake_of(&self.key);
        let options = &self.confirmer.options;
        loop {
            let mut pods = ready_pods(&self.confirmer.pods, &options.label, [self.key.clone()]);
            let pods = pods.remove(&self.key).unwrap_or_default();
            let scrapes = scrape_gateway(pods, options, &self.permits).await;
            if self.confirmer.take(&self.key, scrapes, &self.metrics) {
                self.confirmer.verdicts.notify_one();
            }
            let wait = match self.confirmer.settled(&self.key) {
                None => return,
                Some(true) => IDLE,
                Some(false) => BUSY,
            };
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = wake.notified() => {}
            }
        }
    }
}
