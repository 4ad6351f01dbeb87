//! The Kubernetes adapter: watchers and reflector stores per kind
//! ([`watch`]), the writes ([`api`]), the Lease ([`lease`]), probes and
//! metrics ([`serve`], [`metrics`]), and the loop that ties them: every
//! change wakes it, changes are coalesced (a burst of edits is one round),
//! and each round is [`crate::reconcile`] plus the writes it decides.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::jiff::Timestamp;
use kube::Client;
use tracing::Instrument;

use crate::kinds::WATCHED_KINDS;
use crate::reconcile::Config;

pub mod api;
pub mod cluster;
pub mod confirm;
pub mod events;
pub mod lease;
pub mod memory;
pub mod metrics;
pub mod round;
pub mod scrape;
pub mod serve;
pub mod watch;
pub mod watched;

pub use round::{Reconciler, Round};
pub use watch::Caches;

/// How the controller runs (the `attache controller` flags).
#[derive(Debug, Clone)]
pub struct Options {
    /// What is served and how; its `written` kind is replaced by what
    /// `plugin_kind` (the flag, then discovery) decides.
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
    /// WasmPlugin or TrafficExtension (`--plugin-kind`; discovery when auto).
    pub plugin_kind: crate::plugin_kind::Choice,
    /// How the Gateways' proxies are read to confirm what they serve;
    /// `None` (`--confirm-served=false`): `Programmed` once applied.
    pub served: Option<scrape::ScrapeOptions>,
}

const CLUSTER_HINT: &str =
    "hint: run inside a pod with a ServiceAccount, or pass --kubeconfig / set KUBECONFIG";

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot find the cluster: {}: {source}\n  {CLUSTER_HINT}", path.display())]
    Kubeconfig {
        path: PathBuf,
        #[source]
        source: kube::config::KubeconfigError,
    },
    #[error("cannot find the cluster: {source}\n  {CLUSTER_HINT}")]
    Infer {
        #[source]
        source: kube::config::InferConfigError,
    },
    #[error("cannot find the cluster: {source}\n  {CLUSTER_HINT}")]
    Client {
        #[source]
        source: kube::Error,
    },
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
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
            let kubeconfig_error = |source| RunError::Kubeconfig {
                path: path.clone(),
                source,
            };
            let kc = kube::config::Kubeconfig::read_from(path).map_err(kubeconfig_error)?;
            kube::Config::from_custom_kubeconfig(kc, &Default::default())
                .await
                .map_err(kubeconfig_error)?
        }
        None => kube::Config::infer()
            .await
            .map_err(|source| RunError::Infer { source })?,
    };
    Client::try_from(config).map_err(|source| RunError::Client { source })
}

impl serve::Probe for watch::CacheSync {
    fn ready(&self) -> bool {
        self.all_ready()
    }
}

/// Starts a watcher per kind, or, for a namespaced kind under a
/// namespace-scoped install (`--namespace`), one per namespace: the
/// controller then lists and watches only those namespaces (and needs
/// only Roles there; `attache deploy -n`).
pub fn start_watchers(
    client: &Client,
    metrics: Arc<metrics::Metrics>,
    namespaces: &BTreeSet<String>,
    delivery: crate::plugin_kind::Delivery,
    tasks: &mut Tasks,
) -> Caches {
    let kinds = WATCHED_KINDS.iter().filter(|kind| delivery.watches(kind));
    let scopes = scopes(kinds, namespaces);
    let shared = Arc::new(watch::CacheSync::new(metrics, scopes.len()));
    let stores = spawn_watchers(client, scopes, &shared, tasks);
    Caches { stores, shared }
}

type Scope = (&'static crate::kinds::WatchedKind, Option<String>);

/// Each kind over all namespaces, or a namespaced kind in each of
/// `namespaces` when some are given.
fn scopes<'a>(
    kinds: impl Iterator<Item = &'static crate::kinds::WatchedKind> + 'a,
    namespaces: &'a BTreeSet<String>,
) -> Vec<Scope> {
    kinds
        .flat_map(|kind| {
            if kind.namespaced && !namespaces.is_empty() {
                namespaces
                    .iter()
                    .map(|ns| (kind, Some(ns.clone())))
                    .collect()
            } else {
                vec![(kind, None)]
            }
        })
        .collect()
}

fn spawn_watchers(
    client: &Client,
    scopes: Vec<Scope>,
    shared: &Arc<watch::CacheSync>,
    tasks: &mut Tasks,
) -> Vec<(
    &'static crate::kinds::WatchedKind,
    kube::runtime::reflector::Store<watch::Watched>,
)> {
    scopes
        .into_iter()
        .map(|(kind, namespace)| {
            let (reader, writer) = watch::store(kind);
            tasks.0.push(tokio::spawn(watch::run_in(
                client.clone(),
                kind,
                namespace,
                writer,
                shared.clone(),
            )));
            (kind, reader)
        })
        .collect()
}

/// How often a controller that writes WasmPlugins because TrafficExtension
/// was not served (`--plugin-kind auto`) asks again: an Istio upgrade that
/// installs the CRD is followed within this and a round.
const REDISCOVER: Duration = Duration::from_secs(20);

/// Under `--plugin-kind auto` while writing WasmPlugins: whether
/// TrafficExtension is served now. If so, its watchers start, the loop
/// writes it from the next round on (the reconcile's switch: the new kind
/// applied, then the old one deleted) and `true` ends the asking.
async fn switched_to_traffic_extension(
    client: &Client,
    namespaces: &BTreeSet<String>,
    caches: &mut Caches,
    reconciler: &mut Reconciler,
    tasks: &mut Tasks,
) -> bool {
    use crate::plugin_kind::{choose, served, Choice};
    if !served(client, &crate::kinds::TRAFFIC_EXTENSION).await {
        return false;
    }
    let delivery = choose(Choice::Auto, true, true);
    tracing::info!(
        kind = delivery.kind.row().kind,
        "the TrafficExtension kind is served now; switching to it"
    );
    let scopes = scopes([delivery.kind.row()].into_iter(), namespaces);
    caches.shared.add_watchers(scopes.len());
    let stores = spawn_watchers(client, scopes, &caches.shared, tasks);
    caches.stores.extend(stores);
    reconciler.delivery = delivery;
    reconciler.config.written = delivery.kind.row();
    // What the memo kept was resolved for the other kind.
    reconciler.memo = Default::default();
    true
}

/// The tasks the loop starts (watchers, probes, the Lease's renewal): they
/// end when the loop does, however it ends. A replica stopped in the middle
/// of a round (its task aborted) stops renewing its Lease too, so that
/// another takes over when the Lease expires.
#[derive(Default)]
pub struct Tasks(Vec<tokio::task::JoinHandle<()>>);

impl Drop for Tasks {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// A full round this often even when nothing changed: what a missed watch
/// event would otherwise leave stale (it writes nothing when all is current).
const RESYNC: Duration = Duration::from_secs(300);

/// Runs until SIGTERM or Ctrl-C.
pub async fn run(options: Options) -> Result<(), RunError> {
    let client = client(options.kubeconfig.as_ref()).await?;
    let metrics = Arc::new(metrics::Metrics::default());
    let mut tasks = Tasks::default();
    // Which plugin kinds are served decides which are watched.
    let delivery = crate::plugin_kind::discover(&client, options.plugin_kind).await;
    let mut caches = start_watchers(
        &client,
        metrics.clone(),
        &options.config.namespaces,
        delivery,
        &mut tasks,
    );
    let listener = tokio::net::TcpListener::bind(options.probe_address)
        .await
        .map_err(|source| RunError::Listen {
            address: options.probe_address,
            source,
        })?;
    tasks.0.push(tokio::spawn(serve::serve(
        listener,
        caches.shared.clone(),
        metrics.clone(),
    )));
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
        tasks.0.push(tokio::spawn(elect(
            lock,
            leader.clone(),
            caches.shared.clone(),
            metrics.clone(),
        )));
    }
    let config = Config {
        written: delivery.kind.row(),
        ..options.config.clone()
    };
    let confirmer = options.served.clone().map(|scraping| {
        let pods = scrape::watch_pods(&client, &scraping.label, &config.namespaces, &mut tasks.0);
        Arc::new(confirm::Confirmer::new(scraping, pods))
    });
    if let Some(confirmer) = confirmer.clone() {
        let metrics = metrics.clone();
        tasks.0.push(tokio::spawn(confirm::run(confirmer, metrics)));
    }
    let discovery = client.clone();
    let mut rediscover = (options.plugin_kind == crate::plugin_kind::Choice::Auto
        && delivery.kind == crate::plugin_kind::PluginKind::WasmPlugin)
        .then(|| Instant::now() + REDISCOVER);
    let mut reconciler = Reconciler::new(client, config, metrics, &options.identity);
    reconciler.delivery = delivery;
    reconciler.confirmer = confirmer.clone();
    let shutdown = shutdown_signal();
    tokio::pin!(shutdown);
    let mut backoff: Option<Duration> = None;
    tracing::info!(controller_name = %options.config.controller_name, "attache controller started");
    loop {
        // Woken by a change, by the earliest Gateway whose apply back-off
        // ends, by the loop's own back-off after a failed status write, or
        // by the periodic resync.
        let mut round_due = Instant::now() + backoff.unwrap_or(RESYNC);
        if let Some(retry) = reconciler.next_retry() {
            round_due = round_due.min(retry);
        }
        let wake = rediscover.map_or(round_due, |at| round_due.min(at));
        // A changed verdict is what the replicas now serve, not an edit
        // that more may follow: its round skips the debounce.
        let (changed, verdict) = tokio::select! {
            _ = &mut shutdown => break,
            _ = caches.shared.changed.notified() => (true, false),
            _ = verdict_changed(confirmer.as_deref()) => (true, true),
            _ = tokio::time::sleep_until(wake.into()) => (false, false),
        };
        if rediscover.is_some_and(|at| at <= Instant::now()) {
            let namespaces = &options.config.namespaces;
            let done = switched_to_traffic_extension(
                &discovery,
                namespaces,
                &mut caches,
                &mut reconciler,
                &mut tasks,
            )
            .await;
            rediscover = (!done).then(|| Instant::now() + REDISCOVER);
            // Asking found nothing new and nothing else is due: no round
            // (an idle controller runs none).
            if !done && !changed && Instant::now() < round_due {
                continue;
            }
        }
        // Coalesce: wait for a quiet `debounce`, at most `max_delay`.
        let burst = Instant::now();
        while !verdict && burst.elapsed() < options.max_delay {
            tokio::select! {
                _ = tokio::time::sleep(options.debounce) => break,
                _ = caches.shared.changed.notified() => {}
            }
        }
        if !leader.load(Ordering::SeqCst) || !caches.shared.all_ready() {
            continue;
        }
        // From the wake to the round's start: the debounce, and nothing else
        // (an edit's timeline, docs/controller.md "Edit to write").
        let waited = burst.elapsed();
        let round = reconciler
            .round(&caches, Timestamp::now())
            .instrument(tracing::info_span!("round"))
            .await;
        tracing::info!(?round, waited_ms = waited.as_millis() as u64, "reconciled");
        backoff = round
            .retry_round
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
    shared: Arc<watch::CacheSync>,
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

/// Until a published verdict changes (never without confirmation).
async fn verdict_changed(confirmer: Option<&confirm::Confirmer>) {
    match confirmer {
        Some(c) => c.verdicts.notified().await,
        None => std::future::pending().await,
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
        .map_err(RunError::Runtime)?;
    runtime.block_on(run(options))
}
