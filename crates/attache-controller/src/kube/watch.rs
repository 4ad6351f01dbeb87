//! One watcher per kind of `crate::kinds::WATCHED_KINDS`, each feeding a reflector
//! store (kube-runtime's `Writer`): the list-then-watch protocol, bookmarks,
//! a watch that ends (resumed from the last resourceVersion) and a 410 Gone
//! (a fresh list) are kube-runtime's. What is ours: a kind whose CRD is not
//! installed (404) is skipped with one log line and tried again later, a
//! 403 says which permission is missing, and every change wakes the
//! reconciler. The reflector keeps each object of an input kind in one
//! form ([`Watched`]): read as it arrives, its metadata beside it.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::reflector::store::Writer;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Client};
use tokio::sync::Notify;

use super::metrics::Metrics;
pub use super::watched::Watched;
use crate::kinds::{Role, WatchedKind, FIELD_MANAGER, MANAGED_BY};

/// How long a kind whose CRD is missing waits before it is looked for again
/// the first time; each probe that still finds it missing doubles the wait,
/// up to [`MISSING_RETRY_MAX`]. A probe is one list request; it wakes the
/// reconciler only when the kind turns up (an Istio-only cluster, without
/// kgateway's or Envoy Gateway's CRDs, is otherwise never disturbed).
pub const MISSING_RETRY: Duration = Duration::from_secs(30);
/// The longest wait between probes of a missing kind.
pub const MISSING_RETRY_MAX: Duration = Duration::from_secs(300);
/// The longest wait between tries after an API error (doubling from 1 s).
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// The reflector stores, one per kind, and the watchers' shared state.
pub struct Caches {
    pub stores: Vec<(&'static WatchedKind, Store<Watched>)>,
    pub shared: Arc<CacheSync>,
}

/// What the watchers share with the reconciler.
#[derive(Default)]
pub struct CacheSync {
    /// Woken on every change of any watched kind.
    pub changed: Notify,
    /// Where watch restarts are counted.
    pub metrics: Arc<Metrics>,
    /// How many watchers there are (one per kind, or per kind and
    /// namespace): the cache is whole when each has settled. More are
    /// added when a plugin kind turns up at run time.
    watchers: AtomicUsize,
    state: Mutex<WatchState>,
}

#[derive(Default)]
struct WatchState {
    /// Kinds not served (404 on list).
    missing: BTreeSet<&'static str>,
    /// Watchers (by [`watcher_id`]) whose first list is complete or whose
    /// kind is known not to be served.
    settled: BTreeSet<String>,
}

/// A watcher's name: its kind, and its namespace when it watches one.
pub fn watcher_id(kind: &WatchedKind, namespace: Option<&str>) -> String {
    match namespace {
        Some(ns) => format!("{}@{ns}", kind.kind),
        None => kind.kind.to_string(),
    }
}

impl CacheSync {
    /// Watch state for `watchers` watchers.
    pub fn new(metrics: Arc<Metrics>, watchers: usize) -> Self {
        CacheSync {
            metrics,
            watchers: AtomicUsize::new(watchers),
            ..CacheSync::default()
        }
    }

    /// Every watcher listed once or its kind known to be missing.
    pub fn all_ready(&self) -> bool {
        self.ready(self.watchers.load(Ordering::SeqCst))
    }

    /// `n` more watchers, started after the others: the cache is whole
    /// again once they have listed too.
    pub fn add_watchers(&self, n: usize) {
        self.watchers.fetch_add(n, Ordering::SeqCst);
    }

    pub fn missing(&self) -> BTreeSet<&'static str> {
        self.lock().missing.clone()
    }

    /// `watchers` watchers listed once or known to be missing: the cache
    /// is whole.
    pub fn ready(&self, watchers: usize) -> bool {
        self.lock().settled.len() >= watchers
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, WatchState> {
        // A poisoned lock only means another task panicked mid-update of two
        // sets of names; they stay usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks a kind missing (its watcher `id` settled); true when the kind
    /// was not already (log once, however many namespaces watch it).
    fn set_missing(&self, kind: &'static str, id: &str, missing: bool) -> bool {
        let mut state = self.lock();
        if missing {
            state.settled.insert(id.to_string());
            state.missing.insert(kind)
        } else {
            state.missing.remove(kind)
        }
    }

    fn set_synced(&self, id: &str) {
        self.lock().settled.insert(id.to_string());
    }
}

pub fn api_resource(kind: &WatchedKind) -> ApiResource {
    ApiResource {
        group: kind.group.into(),
        version: kind.version.into(),
        api_version: kind.api_version(),
        kind: kind.kind.into(),
        plural: kind.plural.into(),
    }
}

/// The API of a kind, over all namespaces (namespace scoping is applied to
/// the snapshot, docs/controller.md).
pub fn api(client: &Client, kind: &WatchedKind) -> Api<DynamicObject> {
    Api::all_with(client.clone(), &api_resource(kind))
}

/// The API of a kind in one namespace when it is namespaced and one is
/// given; over the whole cluster otherwise (a watcher's or a list's scope).
pub fn api_in(client: &Client, kind: &WatchedKind, namespace: Option<&str>) -> Api<DynamicObject> {
    match namespace {
        Some(ns) if kind.namespaced => {
            Api::namespaced_with(client.clone(), ns, &api_resource(kind))
        }
        _ => api(client, kind),
    }
}

impl Failure {
    /// The metric's `reason` label.
    pub fn reason(&self) -> &'static str {
        match self {
            Failure::NotInstalled => "NotInstalled",
            Failure::Forbidden(_) => "Forbidden",
            Failure::Gone => "Gone",
            Failure::Other(_) => "Other",
        }
    }
}

/// What an API error means for a watcher.
#[derive(Debug, PartialEq, Eq)]
pub enum Failure {
    /// 404: the kind is not served (CRD not installed).
    NotInstalled,
    /// 403: RBAC does not allow list/watch.
    Forbidden(String),
    /// 410 Gone: the resourceVersion is too old; list again at once.
    Gone,
    /// Anything else: try again after a back-off.
    Other(String),
}

pub fn classify(err: &watcher::Error) -> Failure {
    let api = match err {
        watcher::Error::InitialListFailed(e)
        | watcher::Error::WatchStartFailed(e)
        | watcher::Error::WatchFailed(e) => match e {
            kube::Error::Api(status) => Some((status.code, status.message.clone())),
            _ => None,
        },
        watcher::Error::WatchError(status) => Some((status.code, status.message.clone())),
        watcher::Error::NoResourceVersion => None,
    };
    match api {
        Some((404, _)) => Failure::NotInstalled,
        Some((403, message)) => Failure::Forbidden(message),
        Some((410, _)) => Failure::Gone,
        _ => Failure::Other(err.to_string()),
    }
}

/// Watches one kind forever, keeping `store` current. One kube-runtime
/// `watcher` stream lives across errors, with its default back-off: after
/// a dropped watch or a 5xx it resumes from the last resourceVersion, and
/// only a 410 Gone makes it list again (the watcher's own state machine).
/// A 404 ends the stream: the kind is not served, so there is nothing to
/// resume, and it is looked for again at [`MISSING_RETRY`] intervals.
pub async fn run(
    client: Client,
    kind: &'static WatchedKind,
    store: Writer<Watched>,
    shared: Arc<CacheSync>,
) {
    run_in(client, kind, None, store, shared).await;
}

/// [`run`] over one namespace (a namespaced kind under a namespace-scoped
/// install), or over all of them with `None`.
pub async fn run_in(
    client: Client,
    kind: &'static WatchedKind,
    namespace: Option<String>,
    mut store: Writer<Watched>,
    shared: Arc<CacheSync>,
) {
    let id = watcher_id(kind, namespace.as_deref());
    let api = api_in(&client, kind, namespace.as_deref());
    // Whether this watcher last found its kind missing (its store cleared).
    let mut missing_here = false;
    let mut config = watcher::Config::default();
    if kind.role == Role::Output {
        // Only what we wrote: the label render wasmplugin sets.
        config = config.labels(&format!("{}={}", MANAGED_BY.0, MANAGED_BY.1));
    }
    let mut probe = MISSING_RETRY;
    loop {
        let stream = watcher(api.clone(), config.clone()).default_backoff();
        futures::pin_mut!(stream);
        while let Some(item) = stream.next().await {
            match item {
                Ok(event) => {
                    let echo =
                        matches!(&event, watcher::Event::Apply(o) if own_apply_echo(kind, o));
                    // The API server's bookkeeping of who set which field:
                    // nothing here reads it, and with server-side apply it
                    // is often the larger part of an object held in memory.
                    let event = event.modify(|o| o.metadata.managed_fields = None);
                    // kube-runtime's watcher says `Init` before its first
                    // list is even sent: only what follows it proves the
                    // kind is served.
                    if matches!(event, watcher::Event::Init) {
                        store.apply_watcher_event(&watcher::Event::Init);
                        continue;
                    }
                    probe = MISSING_RETRY;
                    missing_here = false;
                    if shared.set_missing(kind.kind, &id, false) {
                        tracing::info!(kind = kind.kind, "the kind is served now; watching it");
                    }
                    let done = matches!(event, watcher::Event::InitDone);
                    let news = match &event {
                        watcher::Event::InitApply(_) => false,
                        watcher::Event::Apply(object) => {
                            !echo && !status_only(kind, &store, object)
                        }
                        _ => true,
                    };
                    store.apply_watcher_event(&read_as_it_arrives(kind, &store, event));
                    if done {
                        shared.set_synced(&id);
                    }
                    if news {
                        shared.changed.notify_one();
                    }
                }
                Err(err) => {
                    let failure = classify(&err);
                    shared.metrics.watch_restarted(kind.kind, failure.reason());
                    if failure == Failure::NotInstalled {
                        if shared.set_missing(kind.kind, &id, true) {
                            tracing::warn!(
                                kind = kind.kind,
                                api_version = %kind.api_version(),
                                retry_seconds = probe.as_secs(),
                                "the API server does not serve this kind (CRD not installed); skipped, looked for again later"
                            );
                        }
                        if !missing_here {
                            // Objects of a kind that went away are gone.
                            missing_here = true;
                            store.apply_watcher_event(&watcher::Event::Init);
                            store.apply_watcher_event(&watcher::Event::InitDone);
                            shared.changed.notify_one();
                        }
                        break;
                    }
                    log_failure(kind, failure);
                }
            }
        }
        tokio::time::sleep(probe).await;
        probe = (probe * 2).min(MISSING_RETRY_MAX);
    }
}

/// Whether `object` differs from the stored one of our own policy kinds in
/// its status alone (same generation, labels and annotations): the
/// controller's own status write coming back. It updates the store but
/// wakes no round, which would find nothing to do at the cost of a full
/// one (a round per status write at a cold start of 10,000 policies).
/// Other kinds' status is read (a Gateway's `Accepted`), so it always wakes.
fn status_only(kind: &WatchedKind, store: &Writer<Watched>, object: &DynamicObject) -> bool {
    if kind.role != Role::InputWithStatus {
        return false;
    }
    stored(kind, store, object).is_some_and(|old| {
        let (was, now) = (&old.object.metadata, &object.metadata);
        was.generation.is_some()
            && was.generation == now.generation
            && was.labels == now.labels
            && was.annotations == now.annotations
            && was.deletion_timestamp == now.deletion_timestamp
    })
}

/// Whether `object`, one of the plugins we write, was last written by us
/// alone: every entry of its `managedFields` is our field manager's. That
/// is our own apply coming back (the round that made it already knows it),
/// so it updates the store but wakes no round, which would find nothing to
/// do at the cost of a full one after every edit (issue 30). Any other
/// writer of the object leaves an entry of its own (an API server records
/// the manager of every write, a user agent when none is given), and a
/// delete or a deletion mark always wakes: drift is still put right.
fn own_apply_echo(kind: &WatchedKind, object: &DynamicObject) -> bool {
    let metadata = &object.metadata;
    kind.role == Role::Output
        && metadata.deletion_timestamp.is_none()
        && metadata.managed_fields.as_ref().is_some_and(|entries| {
            !entries.is_empty()
                && entries
                    .iter()
                    .all(|e| e.manager.as_deref() == Some(FIELD_MANAGER))
        })
}

/// One log line per watch error other than a missing kind; the stream's
/// back-off decides when it is tried again.
fn log_failure(kind: &WatchedKind, failure: Failure) {
    match failure {
        Failure::Gone => {
            tracing::info!(kind = kind.kind, "watch expired (410 Gone); listing again");
        }
        Failure::Forbidden(message) => tracing::error!(
            kind = kind.kind,
            %message,
            "forbidden: the ServiceAccount may not list/watch {} (deploy/controller has the RBAC it needs)",
            kind.plural
        ),
        Failure::Other(message) => {
            tracing::warn!(kind = kind.kind, %message, "watch failed; resuming");
        }
        Failure::NotInstalled => {}
    }
}

/// The object the store holds under `object`'s name.
fn stored(
    kind: &WatchedKind,
    store: &Writer<Watched>,
    object: &DynamicObject,
) -> Option<Arc<Watched>> {
    let name = object.metadata.name.as_deref()?;
    let mut key = ObjectRef::new_with(name, api_resource(kind));
    if let Some(namespace) = &object.metadata.namespace {
        key = key.within(namespace);
    }
    store.as_reader().get(&key)
}

/// A watch event with each object read as it arrives ([`Watched::arrived`]);
/// a deleted object is not read, only its name matters.
fn read_as_it_arrives(
    kind: &WatchedKind,
    store: &Writer<Watched>,
    event: watcher::Event<DynamicObject>,
) -> watcher::Event<Watched> {
    let arrived = |object: DynamicObject| {
        let before = stored(kind, store, &object);
        Watched::arrived(kind, object, before)
    };
    match event {
        watcher::Event::Apply(object) => watcher::Event::Apply(arrived(object)),
        watcher::Event::InitApply(object) => watcher::Event::InitApply(arrived(object)),
        watcher::Event::Delete(object) => watcher::Event::Delete(Watched { object, read: None }),
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitDone => watcher::Event::InitDone,
    }
}

/// A reflector store for a kind, and the reader the snapshot takes.
pub fn store(kind: &WatchedKind) -> (Store<Watched>, Writer<Watched>) {
    let writer = Writer::new(api_resource(kind));
    (writer.as_reader(), writer)
}
