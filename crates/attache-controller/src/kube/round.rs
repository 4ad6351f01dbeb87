//! One reconcile round: the pure plan ([`crate::reconcile`]), then the
//! writes it decides. Gateways are isolated from each other: their applies
//! run concurrently, and a Gateway whose apply failed waits out its own
//! back-off (or the server's `Retry-After`) while every other Gateway goes
//! on (docs/controller.md, "Failure behaviour").

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use attache_core::topology::ObjectKey;
use futures::StreamExt;
use k8s_openapi::jiff::Timestamp;
use kube::api::DynamicObject;
use kube::runtime::events::{EventType, Recorder, Reporter};
use kube::Client;
use serde_json::Value;
use tracing::Instrument;

use super::api::{self, WriteError};
use super::metrics::{self, Metrics};
use super::watch::Caches;
use crate::kinds::WatchedKind;
use crate::reconcile::{reconcile_with, Config, Memo, Outcome, Plan};
use crate::serving::{self, NotServed};
use crate::snapshot::{ApiObject, ReadCache, Snapshot};
use crate::status::{self, Applied, NotApplied, StatusMemo};

/// At most this many applies in flight at once (a slow answer for one
/// Gateway never holds the others back).
const CONCURRENT_APPLIES: usize = 8;
/// At most this many status writes in flight at once (client-go's default
/// QPS is 5 with bursts of 10; an API server's max-mutating-requests-inflight
/// is 200 by default, so 16 is a modest share of it).
const CONCURRENT_STATUS_WRITES: usize = 16;
/// The first wait after a failed apply, doubling to [`MAX_RETRY`].
const FIRST_RETRY: Duration = Duration::from_secs(1);
pub const MAX_RETRY: Duration = Duration::from_secs(60);

/// A Gateway whose last apply failed: when it may be tried again, the wait
/// that got it there, and why it failed.
#[derive(Debug, Clone)]
struct Retry {
    at: Instant,
    wait: Duration,
    why: NotApplied,
}

/// A Gateway whose apply is held back until its retry time.
#[derive(Debug, thiserror::Error)]
#[error("{why}; tried again in {seconds} s")]
struct Deferred {
    seconds: u64,
    #[source]
    why: NotApplied,
}

/// What the loop remembers between rounds.
pub struct Reconciler {
    pub client: Client,
    pub config: Config,
    pub metrics: Arc<Metrics>,
    pub recorder: Recorder,
    /// Objects read, kept between rounds by uid and resourceVersion. The
    /// watchers read each object as it arrives (`super::watch::Watched`),
    /// so this holds only what a snapshot had to read itself.
    cache: ReadCache,
    /// What each Gateway resolved to, kept while its scope is unchanged
    /// (for one written kind: the loop starts it afresh on a switch).
    pub(super) memo: Memo,
    /// Each Gateway's share of the status fold, kept alike.
    statuses: StatusMemo,
    /// The last failure reported per Gateway, so that an Event is sent once
    /// per new failure, not once per round.
    failures: BTreeMap<ObjectKey, String>,
    retries: BTreeMap<ObjectKey, Retry>,
    /// The findings published as Events, each once while it holds.
    warnings: crate::warnings::Reported,
    /// Why each Gateway not served was last reported so (reported once).
    not_served: BTreeMap<ObjectKey, NotServed>,
    /// Whether "serving no Gateway" was said since something was served.
    said_serving_nothing: bool,
    /// The Gateways served last round, whose metric series go when they go.
    served: BTreeSet<ObjectKey>,
    /// The kind the configuration is written as (`crate::plugin_kind`).
    pub delivery: crate::plugin_kind::Delivery,
    /// What the replicas serve; `None` with `--confirm-served=false`.
    pub confirmer: Option<Arc<super::confirm::Confirmer>>,
}

/// A watcher's object as the read cache sees it: converted to JSON only
/// when its resourceVersion is new to the cache.
impl ApiObject for DynamicObject {
    fn uid(&self) -> Option<&str> {
        self.metadata.uid.as_deref()
    }
    fn resource_version(&self) -> Option<&str> {
        self.metadata.resource_version.as_deref()
    }
    fn namespace_and_name(&self) -> (&str, &str) {
        (
            self.metadata.namespace.as_deref().unwrap_or_default(),
            self.metadata.name.as_deref().unwrap_or_default(),
        )
    }
    fn to_json(&self) -> Result<Value, serde_json::Error> {
        serde_json::to_value(self)
    }
}

/// What one round did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Round {
    pub applied: usize,
    pub unchanged: usize,
    pub kept: usize,
    /// Applies held back by their Gateway's back-off.
    pub deferred: usize,
    pub deleted: usize,
    pub statuses: usize,
    /// Writes that failed.
    pub errors: usize,
    /// Status writes or deletes that failed: the round is tried again after
    /// the loop's back-off (a failed apply has its own, per Gateway).
    pub retry_round: bool,
}

impl Reconciler {
    pub fn new(client: Client, config: Config, metrics: Arc<Metrics>, identity: &str) -> Self {
        let reporter = Reporter {
            controller: "attache".into(),
            instance: Some(identity.into()),
        };
        Reconciler {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            config,
            metrics,
            cache: ReadCache::default(),
            memo: Memo::default(),
            statuses: StatusMemo::default(),
            failures: BTreeMap::new(),
            retries: BTreeMap::new(),
            not_served: BTreeMap::new(),
            warnings: Default::default(),
            said_serving_nothing: false,
            served: BTreeSet::new(),
            delivery: Default::default(),
            confirmer: None,
        }
    }

    /// When the earliest held-back Gateway may be tried again.
    pub fn next_retry(&self) -> Option<Instant> {
        self.retries.values().map(|r| r.at).min()
    }

    /// One round over the objects the caches hold.
    pub async fn round(&mut self, caches: &Caches, now: Timestamp) -> Round {
        let started = Instant::now();
        let objects: Vec<(&'static WatchedKind, Arc<super::watch::Watched>)> = caches
            .stores
            .iter()
            .flat_map(|(kind, store)| store.state().into_iter().map(|o| (*kind, o)))
            .collect();
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for (kind, _) in &objects {
            *counts.entry(kind.kind).or_default() += 1;
        }
        for (kind, count) in counts {
            self.metrics.watched(kind, count);
        }
        let snapshot = Snapshot::read(
            objects.iter().map(|(kind, object)| (*kind, &**object)),
            caches.shared.missing(),
            &mut self.cache,
        );
        drop(objects);
        let read = started.elapsed();
        let round = self.apply(&snapshot, now).await;
        drop(snapshot);
        super::memory::release_freed();
        // Where a round's time goes, for the operator and the benchmark.
        tracing::debug!(
            snapshot_ms = read.as_millis() as u64,
            apply_ms = (started.elapsed() - read).as_millis() as u64,
            "round phases"
        );
        self.metrics.reconciled(started.elapsed().as_secs_f64());
        round
    }

    /// Applies what [`reconcile`] decides for `snapshot`.
    pub async fn apply(&mut self, snapshot: &Snapshot, now: Timestamp) -> Round {
        let planning = Instant::now();
        let plan = tracing::info_span!("plan")
            .in_scope(|| reconcile_with(&self.config, snapshot, &mut self.memo));
        tracing::debug!(
            plan_ms = planning.elapsed().as_millis() as u64,
            resolved = plan.resolved.len(),
            "planned"
        );
        for line in &plan.diagnostics {
            tracing::warn!(diagnostic = %line, "input");
        }
        super::events::publish_warnings(
            &self.recorder,
            snapshot,
            &mut self.warnings,
            &plan.warnings,
        )
        .await;
        self.report_not_served(&plan, snapshot).await;
        self.forget_gone(&plan);
        let mut round = Round::default();
        let mut applied: Applied = BTreeMap::new();
        let unix = now.as_second() as f64;
        let mut queue = Vec::new();
        let mut deferred = BTreeSet::new();
        for key in &plan.resolved {
            self.metrics.gateway_reconciled(key);
        }
        for (key, outcome) in &plan.gateways {
            match outcome {
                Outcome::Unchanged => {
                    round.unchanged += 1;
                    self.retries.remove(key);
                    self.metrics.applied(key, unix, 0.0);
                    applied.insert(key.clone(), Ok(()));
                }
                Outcome::Keep(kept) => {
                    round.kept += 1;
                    self.metrics.error(kept.reason());
                    let why: NotApplied = Arc::new(kept.clone());
                    applied.insert(key.clone(), Err(why));
                }
                Outcome::Apply(plugin) => match self.retries.get(key) {
                    Some(retry) if retry.at > Instant::now() => {
                        // Reported when it failed; not again each round.
                        deferred.insert(key.clone());
                        round.deferred += 1;
                        let seconds = retry.at.saturating_duration_since(Instant::now()).as_secs();
                        let why: NotApplied = Arc::new(Deferred {
                            seconds,
                            why: retry.why.clone(),
                        });
                        applied.insert(key.clone(), Err(why));
                    }
                    _ => queue.push((key.clone(), plugin, plan.switching.contains(key))),
                },
            }
        }
        for (key, result) in self.apply_all(queue).await {
            match result {
                Ok(took) => {
                    let kind = self.config.written.kind;
                    tracing::info!(gateway = %key, seconds = took, kind, "plugin applied");
                    self.metrics.applied(&key, unix, took);
                    self.retries.remove(&key);
                    round.applied += 1;
                    applied.insert(key, Ok(()));
                }
                Err(e) => {
                    round.errors += 1;
                    self.metrics.error(e.reason());
                    let wait = e.retry_after().unwrap_or_else(|| {
                        self.retries
                            .get(&key)
                            .map_or(FIRST_RETRY, |r| (r.wait * 2).min(MAX_RETRY))
                    });
                    let why: NotApplied = Arc::new(e);
                    self.retries.insert(
                        key.clone(),
                        Retry {
                            at: Instant::now() + wait,
                            wait,
                            why: why.clone(),
                        },
                    );
                    applied.insert(key, Err(why));
                }
            }
        }
        self.report_failures(&applied, &deferred, snapshot).await;
        self.delete_orphans(&plan, &mut round).await;
        self.write_statuses(&plan, snapshot, &applied, now, &mut round)
            .await;
        round
    }

    /// Every queued apply, at most [`CONCURRENT_APPLIES`] at once, each in
    /// its Gateway's span; the time each took, or its error.
    async fn apply_all(
        &self,
        queue: Vec<(ObjectKey, &Value, bool)>,
    ) -> Vec<(ObjectKey, Result<f64, WriteError>)> {
        // Each future owns what it needs: a stream of futures borrowing
        // `self` through a closure is not `Send` (rust-lang/rust#102211),
        // and the loop runs on a spawned task.
        let applies: Vec<_> = queue
            .into_iter()
            .map(|(key, plugin, switching)| {
                let span = tracing::info_span!("gateway", gateway = %key);
                let (client, counters, plugin, delivery) = (
                    self.client.clone(),
                    self.metrics.clone(),
                    plugin.clone(),
                    self.delivery,
                );
                async move {
                    let started = Instant::now();
                    counters.wrote(metrics::Write::PluginApply);
                    let result = crate::plugin_kind::apply(&client, delivery, &plugin, switching)
                        .await
                        .map(|()| started.elapsed().as_secs_f64());
                    (key, result)
                }
                .instrument(span)
            })
            .collect();
        futures::stream::iter(applies)
            .buffer_unordered(CONCURRENT_APPLIES)
            .collect()
            .await
    }

    /// A Gateway that is no longer served takes its metric series and its
    /// back-off along.
    fn forget_gone(&mut self, plan: &Plan) {
        let now: BTreeSet<ObjectKey> = plan.gateways.keys().cloned().collect();
        for gone in self.served.difference(&now) {
            self.metrics.forget_gateway(gone);
            self.retries.remove(gone);
            self.failures.remove(gone);
        }
        self.served = now;
    }

    /// Each failure logged; a Warning Event once per new failure.
    async fn report_failures(
        &mut self,
        applied: &Applied,
        deferred: &BTreeSet<ObjectKey>,
        snapshot: &Snapshot,
    ) {
        for (key, result) in applied.iter().filter(|(k, _)| !deferred.contains(*k)) {
            match result {
                Ok(()) => {
                    self.failures.remove(key);
                }
                Err(why) => {
                    let why = why.to_string();
                    tracing::error!(gateway = %key, error = %why, "Gateway not configured");
                    if self.failures.get(key) != Some(&why) {
                        let note = format!("{why}; its last applied WasmPlugin is kept");
                        self.event(
                            key,
                            snapshot,
                            EventType::Warning,
                            "ConfigurationKept",
                            &note,
                        )
                        .await;
                        self.failures.insert(key.clone(), why);
                    }
                }
            }
        }
    }

    async fn delete_orphans(&self, plan: &Plan, round: &mut Round) {
        for orphan in &plan.orphans {
            self.metrics.wrote(metrics::Write::PluginDelete);
            match api::delete_plugin(&self.client, orphan.kind, &orphan.key).await {
                Ok(()) => round.deleted += 1,
                Err(e) => {
                    round.errors += 1;
                    round.retry_round = true;
                    self.metrics.error(e.reason());
                    tracing::error!(error = %e, "cannot delete a plugin whose Gateway left our class or whose kind is no longer written");
                }
            }
        }
    }

    async fn write_statuses(
        &mut self,
        plan: &Plan,
        snapshot: &Snapshot,
        applied: &Applied,
        now: Timestamp,
        round: &mut Round,
    ) {
        let stamp = Timestamp::from_second(now.as_second())
            .unwrap_or(now)
            .to_string();
        let computing = Instant::now();
        let statuses = &mut self.statuses;
        let served = self.confirmer.as_ref().map_or_else(Default::default, |c| {
            c.after_round(&self.config, (plan, snapshot), applied, statuses, &stamp)
        });
        let patches = tracing::info_span!("status").in_scope(|| {
            let outcomes = (applied, &served);
            status::round_patches_served(plan, snapshot, outcomes, &stamp, &mut self.statuses)
        });
        tracing::debug!(
            status_ms = computing.elapsed().as_millis() as u64,
            writes = patches.len(),
            "status computed"
        );
        // Concurrent, as the applies: a cold start writes one status per
        // policy, and one round trip at a time made 10,000 of them 40 s.
        let writes: Vec<_> = patches
            .into_iter()
            .map(|patch| {
                let (client, metrics) = (self.client.clone(), self.metrics.clone());
                async move {
                    api::write_status(
                        &client,
                        &metrics,
                        patch.kind,
                        &patch.key,
                        &patch.resource_version,
                        &patch.status,
                    )
                    .await
                }
            })
            .collect();
        let results: Vec<Result<(), WriteError>> = futures::stream::iter(writes)
            .buffer_unordered(CONCURRENT_STATUS_WRITES)
            .collect()
            .await;
        for result in results {
            match result {
                Ok(()) => round.statuses += 1,
                Err(e) => {
                    round.errors += 1;
                    round.retry_round = true;
                    self.metrics.error(e.reason());
                    tracing::error!(error = %e, "status not written");
                }
            }
        }
    }

    /// Each Gateway not served, once per reason: a log line, an Event on
    /// the Gateway; the gauges every round; and one line when nothing at
    /// all is served (docs/controller.md, "Gateways not served").
    async fn report_not_served(&mut self, plan: &Plan, snapshot: &Snapshot) {
        self.metrics.gateways(plan.gateways.len(), &plan.not_served);
        for (key, why) in &plan.not_served {
            if self.not_served.get(key) == Some(why) {
                continue;
            }
            tracing::warn!(gateway = %key, reason = why.reason(), "{why}");
            let note = why.to_string();
            self.event(key, snapshot, EventType::Normal, why.reason(), &note)
                .await;
        }
        self.not_served = plan.not_served.clone();
        if plan.gateways.is_empty() {
            if !self.said_serving_nothing {
                let line = serving::serving_nothing(&self.config.controller_name, snapshot);
                tracing::warn!(not_served = plan.not_served.len(), "{line}");
                self.said_serving_nothing = true;
            }
        } else {
            self.said_serving_nothing = false;
        }
    }

    /// An Event on a Gateway.
    async fn event(
        &self,
        key: &ObjectKey,
        snapshot: &Snapshot,
        type_: EventType,
        reason: &str,
        why: &str,
    ) {
        let said = super::events::Said {
            kind: "Gateway",
            api_version: "gateway.networking.k8s.io/v1",
            key,
            type_,
            reason,
            note: why,
            action: "Reconcile",
        };
        super::events::publish(&self.recorder, snapshot, said).await;
    }
}
