//! Starting the stand-in ([`StandIn::start`]) and what a test holds while
//! it runs ([`Handle`]): its URL and a kubeconfig, the objects, the request
//! log, and the faults.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::net::TcpListener;

use crate::error::{LoadError, StartError};
use crate::faults::Faults;
use crate::kinds::{self, KindSpec, Kinds};
use crate::log::RequestLog;
use crate::server::{self, ServerState};
use crate::state::State;

/// How the stand-in starts.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where it listens; `127.0.0.1:0` (the default) is an ephemeral port.
    pub address: SocketAddr,
    /// The kinds served (default: [`kinds::builtin`]). CRDs among the
    /// seeded objects add theirs.
    pub kinds: Vec<KindSpec>,
    /// Objects stored at start, in order (see [`Handle::seed`]).
    pub objects: Vec<Value>,
    /// How many change events the history keeps; older ones are compacted
    /// (a watch from before them gets 410 Gone).
    pub history: usize,
    /// How often a watch with `allowWatchBookmarks=true` gets a BOOKMARK
    /// (a real API server sends one about every minute).
    pub bookmark_interval: Duration,
    /// Whether creating an object in a missing namespace is a 404, as the
    /// NamespaceLifecycle admission plugin makes it.
    pub require_namespaces: bool,
    /// The largest object stored (etcd's limit, 1.5 MiB by default).
    pub max_object_bytes: usize,
    /// How many request records the log keeps (counters are not trimmed).
    pub log_capacity: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            address: SocketAddr::from(([127, 0, 0, 1], 0)),
            kinds: kinds::builtin(),
            objects: Vec::new(),
            history: 10_000,
            bookmark_interval: Duration::from_secs(1),
            require_namespaces: true,
            max_object_bytes: 1_572_864,
            log_capacity: 100_000,
        }
    }
}

impl Config {
    /// Also serves the Gateway API kinds, Istio's WasmPlugin and the peers'
    /// policy kinds ([`kinds::gateway_api`]).
    pub fn with_gateway_api(mut self) -> Self {
        self.kinds.extend(kinds::gateway_api());
        self
    }

    pub fn with_kind(mut self, kind: KindSpec) -> Self {
        self.kinds.push(kind);
        self
    }

    pub fn with_objects(mut self, objects: impl IntoIterator<Item = Value>) -> Self {
        self.objects.extend(objects);
        self
    }

    /// Seeds the objects of YAML files or directories (CRDs register kinds).
    pub fn with_manifests<P: AsRef<Path>>(mut self, paths: &[P]) -> Result<Self, LoadError> {
        for path in paths {
            self.objects.extend(crate::manifests::read(path.as_ref())?);
        }
        Ok(self)
    }
}

/// The stand-in API server.
pub struct StandIn;

impl StandIn {
    /// Listens, seeds the namespaces `default` and `kube-system` and the
    /// configured objects, and serves on the runtime it is called from.
    pub async fn start(config: Config) -> Result<Handle, StartError> {
        let listener =
            TcpListener::bind(config.address)
                .await
                .map_err(|source| StartError::Listen {
                    address: config.address,
                    source,
                })?;
        let address = listener.local_addr().map_err(|source| StartError::Listen {
            address: config.address,
            source,
        })?;
        let mut registry = Kinds::default();
        for kind in config.kinds {
            registry.upsert(kind);
        }
        let mut state = State::new(config.history, registry);
        state.require_namespaces = config.require_namespaces;
        state.max_object_bytes = config.max_object_bytes;
        let defaults = ["default", "kube-system"]
            .map(|n| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}));
        for object in defaults.into_iter().chain(config.objects) {
            state.seed(object)?;
        }
        let log = RequestLog::new(config.log_capacity);
        let shared = Arc::new(ServerState::new(
            state,
            log,
            config.bookmark_interval,
            address,
        ));
        tokio::spawn(server::serve(listener, shared.clone()));
        Ok(Handle { shared, address })
    }
}

/// A running stand-in; dropping it stops the server.
pub struct Handle {
    shared: Arc<ServerState>,
    address: SocketAddr,
}

impl Handle {
    /// `http://127.0.0.1:<port>`
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// A kubeconfig naming this server (context `attache-standin`, no
    /// credentials), for kube-rs or kubectl.
    pub fn kubeconfig(&self) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: attache-standin\n  cluster:\n    server: {}\ncontexts:\n- name: attache-standin\n  context:\n    cluster: attache-standin\n    user: attache-standin\n    namespace: default\ncurrent-context: attache-standin\nusers:\n- name: attache-standin\n  user: {{}}\n",
            self.url()
        )
    }

    pub fn write_kubeconfig(&self, path: &Path) -> std::io::Result<()> {
        std::fs::write(path, self.kubeconfig())
    }

    /// Creates or replaces objects as a client would see them written
    /// (status kept; a missing namespace is created; a CRD registers its
    /// kind), waking the watches.
    pub fn seed(&self, objects: impl IntoIterator<Item = Value>) -> Result<(), LoadError> {
        let result = objects
            .into_iter()
            .try_for_each(|o| self.shared.state().seed(o).map(|_| ()));
        self.shared.notify();
        result
    }

    /// The stored objects of one resource (`group` `""` for core, `plural`
    /// as in the URL), in namespace and name order.
    pub fn objects(&self, group: &str, plural: &str) -> Vec<Value> {
        let resource = format!("{group}/{plural}");
        let state = self.shared.state();
        state
            .store
            .list(&resource, None)
            .iter()
            .map(|o| (**o).clone())
            .collect()
    }

    /// One stored object (`namespace` `""` for a cluster-scoped kind).
    pub fn object(&self, group: &str, plural: &str, namespace: &str, name: &str) -> Option<Value> {
        let resource = format!("{group}/{plural}");
        self.shared
            .state()
            .store
            .get(&resource, namespace, name)
            .map(|o| (*o).clone())
    }

    /// Every stored object.
    pub fn all_objects(&self) -> Vec<Value> {
        self.shared
            .state()
            .store
            .all()
            .map(|(_, o)| (**o).clone())
            .collect()
    }

    /// The current resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.shared.state().store.rv()
    }

    pub fn log(&self) -> &RequestLog {
        &self.shared.log
    }

    pub fn faults(&self) -> &Faults {
        &self.shared.faults
    }

    /// Ends every open watch (clients resume from their last
    /// resourceVersion).
    pub fn drop_watches(&self) {
        self.shared.drop_watches();
    }

    /// Forgets the event history: a watch or continue token from before
    /// now gets 410 Gone.
    pub fn compact(&self) {
        self.shared.state().store.compact();
    }

    /// An API-server restart as clients see it: every watch ends and, with
    /// `lose_history`, the history is compacted (as a new watch cache
    /// starts empty), so a client resuming from before it gets 410 and
    /// lists again.
    pub fn restart(&self, lose_history: bool) {
        if lose_history {
            self.compact();
        }
        self.drop_watches();
    }

    /// Serves a kind from now on (as installing its CRD).
    pub fn serve_kind(&self, kind: KindSpec) {
        self.shared.state().kinds.upsert(kind);
    }

    /// Stops serving a kind: requests for it get 404 (its objects stay).
    pub fn unserve_kind(&self, group: &str, plural: &str) {
        self.shared.state().kinds.remove(group, plural);
    }

    /// Stops the server: the listener and every connection close.
    pub fn shutdown(&self) {
        self.shared.shutdown.send_replace(true);
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.shutdown();
    }
}
