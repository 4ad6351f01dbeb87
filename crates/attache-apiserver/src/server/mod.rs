//! The HTTP side: an accept loop (one task per connection, HTTP/1.1 as
//! kube-rs and kubectl speak it to a plain-HTTP server), faults and the
//! request log around every request, discovery, and the resource handlers.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use http::{header, Request, Response, StatusCode};
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::watch as signal;

use crate::error::ApiError;
use crate::faults::Faults;
use crate::log::{RequestLog, RequestRecord, Verb};
use crate::state::State;

mod discovery;
mod handlers;
pub mod route;
pub mod watch;

pub type Body = BoxBody<Bytes, Infallible>;

/// What the server and the handle share.
#[derive(Debug)]
pub struct ServerState {
    state: Mutex<State>,
    /// The resourceVersion of the latest change; watches wait on it.
    pub changed: signal::Sender<u64>,
    /// Bumped to end every watch (dropped watches, restart).
    pub epoch: signal::Sender<u64>,
    pub shutdown: signal::Sender<bool>,
    pub faults: Faults,
    pub log: RequestLog,
    pub bookmark_interval: Duration,
    pub address: SocketAddr,
}

impl ServerState {
    pub fn new(
        state: State,
        log: RequestLog,
        bookmark_interval: Duration,
        address: SocketAddr,
    ) -> Self {
        let rv = state.store.rv();
        ServerState {
            state: Mutex::new(state),
            changed: signal::channel(rv).0,
            epoch: signal::channel(0).0,
            shutdown: signal::channel(false).0,
            faults: Faults::default(),
            log,
            bookmark_interval,
            address,
        }
    }

    /// The state; a poisoned lock is taken over (a panicking request
    /// leaves the maps whole: every change is one insert or remove).
    pub fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wakes the watches after a change.
    pub fn notify(&self) {
        let rv = self.state().store.rv();
        self.changed.send_replace(rv);
    }

    /// Ends every watch now.
    pub fn drop_watches(&self) {
        self.epoch.send_modify(|e| *e += 1);
    }
}

/// Serves until the shutdown signal.
pub async fn serve(listener: TcpListener, shared: Arc<ServerState>) {
    let mut shutdown = shared.shutdown.subscribe();
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => continue,
            },
            _ = shutdown.changed() => return,
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let mut stop = shared.shutdown.subscribe();
            let service = hyper::service::service_fn(move |req| handle(shared.clone(), req));
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                // A connection error is the client's; nothing to do.
                _ = connection => {}
                _ = stop.changed() => {}
            }
        });
    }
}

pub fn full(code: u16, body: Vec<u8>) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body)).boxed());
    *response.status_mut() =
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

pub fn json(code: u16, value: &Value) -> Response<Body> {
    full(code, serde_json::to_vec(value).unwrap_or_default())
}

pub fn error(e: &ApiError) -> Response<Body> {
    let mut response = json(e.code, &e.status());
    if let Some(seconds) = e.retry_after {
        if let Ok(v) = header::HeaderValue::from_str(&seconds.to_string()) {
            response.headers_mut().insert(header::RETRY_AFTER, v);
        }
    }
    response
}

fn not_found() -> ApiError {
    ApiError::new(
        404,
        "NotFound",
        "the server could not find the requested resource",
    )
}

async fn handle(
    shared: Arc<ServerState>,
    req: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let route = route::parse(req.uri().path());
    let query = route::query(req.uri().query());
    let mut record = record_for(&req, &route, &query);
    if let Some(delay) = shared.faults.delay_for(&record) {
        tokio::time::sleep(delay).await;
    }
    let response = match shared.faults.error_for(&record) {
        Some(e) => error(&e),
        None => dispatch(&shared, route, query, req).await,
    };
    record.status = response.status().as_u16();
    record.answered = std::time::Instant::now();
    shared.log.push(record);
    Ok(response)
}

async fn dispatch(
    shared: &Arc<ServerState>,
    route: route::Route,
    query: std::collections::BTreeMap<String, String>,
    req: Request<Incoming>,
) -> Response<Body> {
    use route::Route;
    let found = |v: Option<Value>| v.map_or_else(|| error(&not_found()), |v| json(200, &v));
    match route {
        Route::Version => json(200, &discovery::version()),
        Route::CoreVersions => json(200, &discovery::core_versions(&shared.address.to_string())),
        Route::Groups => json(200, &discovery::group_list(&shared.state().kinds)),
        Route::Group(g) => found(discovery::group(&shared.state().kinds, &g)),
        Route::Resources { group, version } => found(discovery::resources(
            &shared.state().kinds,
            &group,
            &version,
        )),
        Route::Resource(path) => handlers::resource(shared, path, query, req).await,
        Route::NotFound => error(&not_found()),
    }
}

fn record_for(
    req: &Request<Incoming>,
    route: &route::Route,
    query: &std::collections::BTreeMap<String, String>,
) -> RequestRecord {
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let path = match route {
        route::Route::Resource(p) => Some(p),
        _ => None,
    };
    let watching = matches!(query.get("watch").map(String::as_str), Some("true" | "1"));
    let named = path.is_some_and(|p| p.name.is_some());
    let verb = match (req.method().as_str(), path.is_some(), named) {
        (_, false, _) => Verb::Discovery,
        ("GET", _, true) => Verb::Get,
        ("GET", _, false) if watching => Verb::Watch,
        ("GET", _, false) => Verb::List,
        ("POST", _, _) => Verb::Create,
        ("PUT", _, _) => Verb::Update,
        ("PATCH", _, _)
            if content_type
                .as_deref()
                .is_some_and(|c| c.starts_with("application/apply-patch")) =>
        {
            Verb::Apply
        }
        ("PATCH", _, _) => Verb::Patch,
        ("DELETE", _, _) => Verb::Delete,
        _ => Verb::Discovery,
    };
    RequestRecord {
        method: req.method().to_string(),
        path: req.uri().path().to_string(),
        query: req.uri().query().unwrap_or_default().to_string(),
        verb,
        group: path.map(|p| p.group.clone()).unwrap_or_default(),
        version: path.map(|p| p.version.clone()).unwrap_or_default(),
        resource: path.map(|p| p.plural.clone()).unwrap_or_default(),
        namespace: path.and_then(|p| p.namespace.clone()),
        name: path.and_then(|p| p.name.clone()),
        subresource: path.and_then(|p| p.subresource.clone()),
        field_manager: query.get("fieldManager").cloned(),
        content_type,
        status: 0,
        received: std::time::Instant::now(),
        answered: std::time::Instant::now(),
    }
}
