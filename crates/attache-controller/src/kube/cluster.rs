//! One read of the live cluster for the CLI's read commands
//! (docs/semantics.md section 13): the kubeconfig found the way kubectl
//! finds it, then one paginated list per kind of [`crate::kinds::WATCHED_KINDS`]
//! the resolver reads. A kind the API server does not serve (404, its CRD
//! not installed) is skipped and named, as the controller's watchers skip
//! it; anything else that stops a list is an error, since a read that
//! silently lacks a kind would resolve to a different answer.
//!
//! Nothing here writes: the only requests are GETs (lists). The bytes read
//! are bounded as a file's are (`--max-input-bytes`): one kind's list, all
//! its pages together, may have at most [`Target::max_list_bytes`]; the
//! bodies are read as they stream in and the read stops past the bound.

use std::path::PathBuf;

use futures::AsyncReadExt;
use kube::api::{DynamicObject, ListParams, ObjectList};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Resource};
use serde_json::Value;

use super::watch::api_resource;
use crate::kinds::{Role, WatchedKind, WATCHED_KINDS};

/// Objects per list request: the page size kubectl uses (`--chunk-size`).
pub const PAGE_SIZE: u32 = 500;

/// Which cluster to read, as kubectl's flags name it.
#[derive(Debug, Clone)]
pub struct Target {
    /// A kubeconfig file; else `KUBECONFIG`, `~/.kube/config`, then the
    /// in-cluster service account.
    pub kubeconfig: Option<PathBuf>,
    /// A context of the kubeconfig; else its current context.
    pub context: Option<String>,
    /// Only this namespace for namespaced kinds; else all of them.
    pub namespace: Option<String>,
    /// The most bytes of list responses one kind may take, all its pages
    /// together (the CLI's `--max-input-bytes`).
    pub max_list_bytes: u64,
}

/// A client and what the header line says about it.
#[derive(Clone)]
pub struct Connection {
    pub client: Client,
    /// The kubeconfig context read, or `in-cluster`.
    pub context: String,
    /// The API server's URL.
    pub server: String,
}

/// One kind as it was listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub kind: &'static WatchedKind,
    /// The list's resourceVersion (of its first page: the pages of one
    /// list are one consistent snapshot).
    pub resource_version: String,
    pub objects: usize,
}

/// What one read of the cluster gave.
#[derive(Debug, Clone, Default)]
pub struct ClusterObjects {
    /// Each kind read, in [`WATCHED_KINDS`] order.
    pub listed: Vec<Listed>,
    /// Kinds the API server does not serve, skipped.
    pub not_served: Vec<&'static WatchedKind>,
    /// Every object read, with its kind.
    pub objects: Vec<(&'static WatchedKind, Value)>,
}

const CONNECT_HINT: &str =
    "hint: pass --kubeconfig FILE or set KUBECONFIG (and --context NAME), or read files with -f";

/// Why the cluster could not be read; each names what to do.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read the kubeconfig{}: {source}\n  {CONNECT_HINT}", path.as_ref().map(|p| format!(" {}", p.display())).unwrap_or_default())]
    Kubeconfig {
        path: Option<PathBuf>,
        #[source]
        source: kube::config::KubeconfigError,
    },
    #[error("no kubeconfig and not inside a cluster: {source}\n  {CONNECT_HINT}")]
    Infer {
        #[source]
        source: kube::config::InferConfigError,
    },
    #[error("cannot make a client for {server}: {source}\n  {CONNECT_HINT}")]
    Client {
        server: String,
        #[source]
        source: kube::Error,
    },
    #[error("{kind} ({api_version}) in {scope}: listing is forbidden: {message}\n  hint: `kubectl auth can-i list {plural}` says what your user may read; -n NAMESPACE reads one namespace only")]
    Forbidden {
        kind: &'static str,
        api_version: String,
        plural: &'static str,
        scope: String,
        message: String,
    },
    #[error("{kind} ({api_version}): cannot list from {server}: {source}\n  hint: is the API server reachable? `kubectl --context {context} get {plural}` tries the same read")]
    List {
        kind: &'static str,
        api_version: String,
        plural: &'static str,
        server: String,
        context: String,
        /// Boxed: a kube error is large, and this one is rare.
        #[source]
        source: Box<kube::Error>,
    },
    #[error("{kind} ({api_version}) in {scope}: the list from {server} is larger than {limit} bytes; not read\n  hint: raise --max-input-bytes{}", if *namespaced { ", or read one namespace with -n NAMESPACE" } else { "" })]
    TooLarge {
        kind: &'static str,
        api_version: String,
        scope: String,
        server: String,
        limit: u64,
        /// Whether reading one namespace would read less of it.
        namespaced: bool,
    },
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
}

/// Finds the cluster the way kubectl does, with `--context` honoured.
pub async fn connect(target: &Target) -> Result<Connection, ReadError> {
    let options = KubeConfigOptions {
        context: target.context.clone(),
        ..KubeConfigOptions::default()
    };
    let kubeconfig = match &target.kubeconfig {
        Some(path) => {
            Some(
                Kubeconfig::read_from(path).map_err(|source| ReadError::Kubeconfig {
                    path: Some(path.clone()),
                    source,
                })?,
            )
        }
        // No file: `KUBECONFIG` or ~/.kube/config when there is one; a
        // pod's service account otherwise (unless a context was asked for,
        // which only a kubeconfig has).
        None => match Kubeconfig::read() {
            Ok(kubeconfig) => Some(kubeconfig),
            Err(source) if target.context.is_some() => {
                return Err(ReadError::Kubeconfig { path: None, source })
            }
            Err(_) => None,
        },
    };
    let (config, context) = match kubeconfig {
        Some(kubeconfig) => {
            let context = target
                .context
                .clone()
                .or_else(|| kubeconfig.current_context.clone())
                .unwrap_or_default();
            let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .map_err(|source| ReadError::Kubeconfig {
                    path: target.kubeconfig.clone(),
                    source,
                })?;
            (config, context)
        }
        None => (
            kube::Config::infer()
                .await
                .map_err(|source| ReadError::Infer { source })?,
            "in-cluster".to_string(),
        ),
    };
    let server = config.cluster_url.to_string();
    let client = Client::try_from(config).map_err(|source| ReadError::Client {
        server: server.clone(),
        source,
    })?;
    Ok(Connection {
        client,
        context,
        server,
    })
}

/// The kinds a read command reads: every input kind (not the WasmPlugin
/// the controller writes).
pub fn input_kinds() -> impl Iterator<Item = &'static WatchedKind> {
    WATCHED_KINDS.iter().filter(|k| k.role != Role::Output)
}

/// Lists every input kind once, page by page, in `target`'s namespace
/// when it names one.
pub async fn read(connection: &Connection, target: &Target) -> Result<ClusterObjects, ReadError> {
    let mut read = ClusterObjects::default();
    for kind in input_kinds() {
        match list(connection, kind, target).await? {
            Some((resource_version, objects)) => {
                read.listed.push(Listed {
                    kind,
                    resource_version,
                    objects: objects.len(),
                });
                read.objects.extend(objects.into_iter().map(|o| (kind, o)));
            }
            None => read.not_served.push(kind),
        }
    }
    Ok(read)
}

/// One kind, every page; `None` when it is not served.
async fn list(
    connection: &Connection,
    kind: &'static WatchedKind,
    target: &Target,
) -> Result<Option<(String, Vec<Value>)>, ReadError> {
    let namespace = target.namespace.as_deref().filter(|_| kind.namespaced);
    let path = DynamicObject::url_path(&api_resource(kind), namespace);
    let scope = match namespace {
        Some(ns) => format!("namespace {ns}"),
        None if kind.namespaced => "all namespaces".to_string(),
        None => "the cluster scope".to_string(),
    };
    let mut objects = Vec::new();
    let mut resource_version = None;
    let mut params = ListParams::default().limit(PAGE_SIZE);
    // What this kind's pages may still take.
    let mut budget = target.max_list_bytes;
    loop {
        let page = match list_page(connection, &path, &params, &mut budget).await {
            Ok(Some(page)) => page,
            Ok(None) => {
                return Err(ReadError::TooLarge {
                    kind: kind.kind,
                    api_version: kind.api_version(),
                    scope,
                    server: connection.server.clone(),
                    limit: target.max_list_bytes,
                    namespaced: kind.namespaced,
                })
            }
            Err(err) => {
                return match classify(connection, kind, &scope, err) {
                    None => Ok(None),
                    Some(err) => Err(err),
                }
            }
        };
        resource_version.get_or_insert(page.metadata.resource_version.clone().unwrap_or_default());
        for item in page.items {
            // A DynamicObject always encodes (its fields are JSON already).
            if let Ok(value) = serde_json::to_value(&item) {
                objects.push(value);
            }
        }
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => break,
        }
    }
    Ok(Some((resource_version.unwrap_or_default(), objects)))
}

/// One page of a list, its body read as it streams in and never past
/// `budget` bytes (what is left of the kind's bound, lessened by this
/// page): `None` when the body is longer than that.
async fn list_page(
    connection: &Connection,
    path: &str,
    params: &ListParams,
    budget: &mut u64,
) -> Result<Option<ObjectList<DynamicObject>>, kube::Error> {
    let request = kube::core::Request::new(path)
        .list(params)
        .map_err(kube::Error::BuildRequest)?;
    // API errors (a 404, a 403) come back as kube's own, as `Api::list`'s.
    let body = connection.client.request_stream(request).await?;
    let mut bytes = Vec::new();
    // One byte past the budget tells a body of exactly the budget from a
    // longer one.
    body.take(budget.saturating_add(1))
        .read_to_end(&mut bytes)
        .await
        .map_err(kube::Error::ReadEvents)?;
    let read = bytes.len() as u64;
    if read > *budget {
        return Ok(None);
    }
    *budget -= read;
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(kube::Error::SerdeError)
}

/// `None` for a 404 (the kind is not served); the error otherwise.
fn classify(
    connection: &Connection,
    kind: &'static WatchedKind,
    scope: &str,
    err: kube::Error,
) -> Option<ReadError> {
    match &err {
        kube::Error::Api(status) if status.code == 404 => None,
        kube::Error::Api(status) if status.code == 403 => Some(ReadError::Forbidden {
            kind: kind.kind,
            api_version: kind.api_version(),
            plural: kind.plural,
            scope: scope.to_string(),
            message: status.message.clone(),
        }),
        _ => Some(ReadError::List {
            kind: kind.kind,
            api_version: kind.api_version(),
            plural: kind.plural,
            server: connection.server.clone(),
            context: connection.context.clone(),
            source: Box::new(err),
        }),
    }
}

/// [`connect`] then [`read`], on a runtime of its own: the CLI is not
/// async, and a read is a handful of sequential requests.
pub fn read_blocking(target: &Target) -> Result<(Connection, ClusterObjects), ReadError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ReadError::Runtime)?;
    runtime.block_on(async {
        let connection = connect(target).await?;
        let objects = read(&connection, target).await?;
        Ok((connection, objects))
    })
}
