//! The Kubernetes adapter: watchers and reflector stores per kind
//! ([`watch`]), the writes ([`api`]), the Lease ([`lease`]), probes and
//! metrics ([`serve`], [`metrics`]), and the loop that ties them: every
//! change wakes it, changes are coalesced (a burst of edits is one round),
//! and each round is [`crate::reconcile`] plus the writes it decides.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use attache_core::topology::ObjectKey;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::jiff::Timestamp;
use kube::api::DynamicObject;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::Store;
use kube::Client;
use serde_json::Value;

use crate::kinds::KINDS;
use crate::reconcile::{reconcile, Config, Outcome, Plan};
use crate::serving::{self, NotServed};
use crate::snapshot::{ReadCache, Snapshot};
use crate::status::{self, Applied};

pub mod api;
pub mod lease;
pub mod metrics;
pub mod serve;
pub mod watch;

/// How the controller runs (the `attache controller` flags).
#[derive(Debug, Clone)]
pub struct Options {
    pub config: Config,
    /// A kubeconfig file; else as kubectl: `KUBECONFIG`, `~/.kube/config`,
    /// then the in-cluster service account.
    pub kubeconfig: Option<PathBuf>,
    pub probe_address: SocketAddr,
    /// Leader election: the Lease's namespace and name, and who we are.
    pub lease: Option<(String, String)>,
    pub identity: String,
    /// Quiet time that ends a burst of changes.
    pub debounce: Duration,
    /// The longest a burst may delay a round.
    pub max_delay: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot find the cluster: {0}\n  hint: run inside a pod with a ServiceAccount, or pass --kubeconfig / set KUBECONFIG")]
    Config(String),
    #[error("cannot listen on {address}: {source}")]
    Listen {
        address: SocketAddr,
        source: std::io::Error,
    },
}

/// Finds the cluster the way kubectl does.
pub async fn client(kubeconfig: Option<&PathBuf>) -> Result<Client, RunError> {
    let config = match kubeconfig {
        Some(path) => {
            let kc = kube::config::Kubeconfig::read_from(path)
                .map_err(|e| RunError::Config(format!("{}: {e}", path.display())))?;
            kube::Config::from_custom_kubeconfig(kc, &Default::default())
                .await
                .map_err(|e| RunError::Config(e.to_string()))?
        }
        None => kube::Config::infer()
            .await
            .map_err(|e| RunError::Config(e.to_string()))?,
    };
    Client::try_from(config).map_err(|e| RunError::Config(e.to_string()))
}

/// The reflector stores, one per kind, and the watchers' shared state.
pub struct Caches {
    pub stores: Vec<(&'static crate::kinds::WatchedKind, Store<DynamicObject>)>,
    pub shared: Arc<watch::Shared>,
}

impl serve::Probe for watch::Shared {
    fn ready(&self) -> bool {
        watch::Shared::ready(self, KINDS.len())
    }
}

/// Starts a watcher per kind.
pub fn start_watchers(client: &Client) -> Caches {
    let shared = Arc::new(watch::Shared::default());
    let stores = KINDS
        .iter()
        .map(|kind| {
            let (reader, writer) = watch::store(kind);
            tokio::spawn(watch::run(client.clone(), kind, writer, shared.clone()));
            (kind, reader)
        })
        .collect();
    Caches { stores, shared }
}

/// What the loop remembers between rounds.
pub struct Reconciler {
    pub client: Client,
    pub config: Config,
    pub metrics: Arc<metrics::Metrics>,
    pub recorder: Recorder,
    cache: ReadCache,
    /// The last failure reported per Gateway, so that an Event is sent once
    /// per new failure, not once per round.
    failures: BTreeMap<ObjectKey, String>,
    /// Why each Gateway not served was last reported so (reported once).
    not_served: BTreeMap<ObjectKey, NotServed>,
    /// Whether "serving no Gateway" was said since something was served.
    said_serving_nothing: bool,
}

/// What one round did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Round {
    pub applied: usize,
    pub unchanged: usize,
    pub kept: usize,
    pub deleted: usize,
    pub statuses: usize,
    /// Writes that failed: the round is tried again after a back-off.
    pub errors: usize,
}

impl Reconciler {
    pub fn new(
        client: Client,
        config: Config,
        metrics: Arc<metrics::Metrics>,
        identity: &str,
    ) -> Self {
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
            failures: BTreeMap::new(),
            not_served: BTreeMap::new(),
            said_serving_nothing: false,
        }
    }

    /// One round over the objects the caches hold.
    pub async fn round(&mut self, caches: &Caches, now: Timestamp) -> Round {
        let started = Instant::now();
        let values: Vec<(&'static crate::kinds::WatchedKind, Value)> = caches
            .stores
            .iter()
            .flat_map(|(kind, store)| {
                let objects = store.state();
                self.metrics.watched(kind.kind, objects.len());
                objects
                    .into_iter()
                    .map(|o| {
                        (
                            *kind,
                            serde_json::to_value(o.as_ref()).unwrap_or(Value::Null),
                        )
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        let snapshot = Snapshot::read(
            values.iter().map(|(k, v)| (*k, v)),
            caches.shared.missing(),
            &mut self.cache,
        );
        let round = self.apply(&snapshot, now).await;
        self.metrics.reconciled(started.elapsed().as_secs_f64());
        round
    }

    /// Applies what [`reconcile`] decides for `snapshot`.
    pub async fn apply(&mut self, snapshot: &Snapshot, now: Timestamp) -> Round {
        let plan = reconcile(&self.config, snapshot);
        for line in &plan.diagnostics {
            tracing::warn!(diagnostic = %line, "input");
        }
        self.report_not_served(&plan, snapshot).await;
        let mut round = Round::default();
        let mut applied: Applied = BTreeMap::new();
        let unix = now.as_second() as f64;
        for (key, outcome) in &plan.gateways {
            let result = match outcome {
                Outcome::Unchanged => {
                    round.unchanged += 1;
                    Ok(())
                }
                Outcome::Apply(plugin) => {
                    let started = Instant::now();
                    self.metrics.wrote(metrics::Write::PluginApply);
                    match api::apply_plugin(&self.client, plugin).await {
                        Ok(()) => {
                            let took = started.elapsed().as_secs_f64();
                            tracing::info!(gateway = %key, seconds = took, "WasmPlugin applied");
                            self.metrics.applied(&key.to_string(), unix, took);
                            round.applied += 1;
                            Ok(())
                        }
                        Err(e) => {
                            round.errors += 1;
                            Err(e.to_string())
                        }
                    }
                }
                Outcome::Keep(why) => {
                    round.kept += 1;
                    Err(format!("{why}; its last applied WasmPlugin is kept"))
                }
            };
            if result.is_ok() && matches!(outcome, Outcome::Unchanged) {
                self.metrics.applied(&key.to_string(), unix, 0.0);
            }
            match &result {
                Ok(()) => {
                    self.failures.remove(key);
                }
                Err(why) => {
                    self.metrics.error();
                    tracing::error!(gateway = %key, error = %why, "Gateway not configured");
                    if self.failures.get(key) != Some(why) {
                        self.kept(key, snapshot, why).await;
                        self.failures.insert(key.clone(), why.clone());
                    }
                }
            }
            applied.insert(key.clone(), result);
        }
        for orphan in &plan.orphans {
            self.metrics.wrote(metrics::Write::PluginDelete);
            match api::delete_plugin(&self.client, orphan).await {
                Ok(()) => round.deleted += 1,
                Err(e) => {
                    round.errors += 1;
                    tracing::error!(error = %e, "cannot delete a WasmPlugin whose Gateway left our class");
                }
            }
        }
        let reach = status::reach(&plan.inputs, plan.gateways.keys().cloned());
        let stamp = Timestamp::from_second(now.as_second())
            .unwrap_or(now)
            .to_string();
        for patch in status::patches(&plan.inputs, snapshot, &reach, &applied, &stamp) {
            let version = resource_version(snapshot, &patch);
            match api::write_status(
                &self.client,
                &self.metrics,
                patch.kind,
                &patch.key,
                &version,
                &patch.status,
            )
            .await
            {
                Ok(()) => round.statuses += 1,
                Err(e) => {
                    round.errors += 1;
                    self.metrics.error();
                    tracing::error!(error = %e, "status not written");
                }
            }
        }
        round
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

    /// A Warning Event on the Gateway: its configuration was not applied.
    async fn kept(&self, key: &ObjectKey, snapshot: &Snapshot, why: &str) {
        self.event(key, snapshot, EventType::Warning, "ConfigurationKept", why)
            .await;
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
        let uid = snapshot
            .docs
            .iter()
            .find(|d| d.value["kind"] == "Gateway" && crate::snapshot::key_of(&d.value) == *key)
            .and_then(|d| d.value["metadata"]["uid"].as_str().map(str::to_string));
        let reference = ObjectReference {
            api_version: Some("gateway.networking.k8s.io/v1".into()),
            kind: Some("Gateway".into()),
            name: Some(key.name.clone()),
            namespace: Some(key.namespace.clone()),
            uid,
            ..ObjectReference::default()
        };
        let note: String = why.chars().take(1000).collect();
        let event = Event {
            type_,
            reason: reason.into(),
            note: Some(note),
            action: "Reconcile".into(),
            secondary: None,
        };
        if let Err(e) = self.recorder.publish(&event, &reference).await {
            tracing::warn!(error = %e, "cannot publish an Event");
        }
    }
}

fn resource_version(snapshot: &Snapshot, patch: &status::StatusPatch) -> String {
    snapshot
        .docs
        .iter()
        .find(|d| {
            d.value["kind"] == patch.kind.kind && crate::snapshot::key_of(&d.value) == patch.key
        })
        .and_then(|d| d.value["metadata"]["resourceVersion"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// Runs until SIGTERM or Ctrl-C.
pub async fn run(options: Options) -> Result<(), RunError> {
    let client = client(options.kubeconfig.as_ref()).await?;
    let metrics = Arc::new(metrics::Metrics::default());
    let caches = start_watchers(&client);
    let listener = tokio::net::TcpListener::bind(options.probe_address)
        .await
        .map_err(|source| RunError::Listen {
            address: options.probe_address,
            source,
        })?;
    tokio::spawn(serve::serve(
        listener,
        caches.shared.clone(),
        metrics.clone(),
    ));
    let leader = Arc::new(AtomicBool::new(options.lease.is_none()));
    metrics.leader(leader.load(Ordering::SeqCst));
    let lock = options.lease.as_ref().map(|(ns, name)| {
        Arc::new(lease::LeaseLock::new(
            client.clone(),
            ns,
            name,
            &options.identity,
        ))
    });
    if let Some(lock) = lock.clone() {
        tokio::spawn(elect(
            lock,
            leader.clone(),
            caches.shared.clone(),
            metrics.clone(),
        ));
    }
    let mut reconciler =
        Reconciler::new(client, options.config.clone(), metrics, &options.identity);
    let shutdown = shutdown_signal();
    tokio::pin!(shutdown);
    let mut backoff: Option<Duration> = None;
    tracing::info!(controller_name = %options.config.controller_name, "attache controller started");
    loop {
        let resync = backoff.unwrap_or(Duration::from_secs(300));
        tokio::select! {
            _ = &mut shutdown => break,
            _ = caches.shared.changed.notified() => {}
            _ = tokio::time::sleep(resync) => {}
        }
        // Coalesce: wait for a quiet `debounce`, at most `max_delay`.
        let burst = Instant::now();
        while burst.elapsed() < options.max_delay {
            tokio::select! {
                _ = tokio::time::sleep(options.debounce) => break,
                _ = caches.shared.changed.notified() => {}
            }
        }
        if !leader.load(Ordering::SeqCst) || !caches.shared.ready(KINDS.len()) {
            continue;
        }
        let round = reconciler.round(&caches, Timestamp::now()).await;
        tracing::info!(?round, "reconciled");
        backoff = (round.errors > 0)
            .then(|| backoff.map_or(Duration::from_secs(1), |b| (b * 2).min(watch::MAX_BACKOFF)));
    }
    tracing::info!("shutting down");
    if let Some(lock) = lock {
        if leader.load(Ordering::SeqCst) {
            if let Err(e) = lock.release().await {
                tracing::warn!(error = %e, "cannot release the Lease; the other replica takes it when it expires");
            }
        }
    }
    Ok(())
}

/// Renews or acquires the Lease every few seconds; a replica that cannot
/// renew within the lease duration stops writing (a lost Lease).
async fn elect(
    lock: Arc<lease::LeaseLock>,
    leader: Arc<AtomicBool>,
    shared: Arc<watch::Shared>,
    metrics: Arc<metrics::Metrics>,
) {
    let mut last_renewed = Instant::now();
    loop {
        let now = Timestamp::now();
        let held = match lock.try_acquire(now).await {
            Ok(held) => {
                if held {
                    last_renewed = Instant::now();
                }
                held
            }
            Err(e) => {
                tracing::warn!(error = %e, "Lease not renewed");
                leader.load(Ordering::SeqCst)
                    && last_renewed.elapsed() < Duration::from_secs(lock.duration_seconds as u64)
            }
        };
        let was = leader.swap(held, Ordering::SeqCst);
        if held != was {
            tracing::info!(leader = held, identity = %lock.identity, "leadership changed");
            metrics.leader(held);
            if held {
                // A new leader reconciles at once.
                shared.changed.notify_one();
            }
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
}

async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}

/// Structured logs on standard error: JSON lines (for the cluster's log
/// pipeline) or text; `RUST_LOG` filters (default `info`).
pub fn init_logging(json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}

/// Runs [`run`] on a runtime of its own (one thread: the work is one
/// reconcile loop and a few watch streams).
pub fn block_on(options: Options) -> Result<(), RunError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| RunError::Config(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(run(options))
}
