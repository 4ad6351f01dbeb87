//! Watch (`?watch=true`; kubernetes.io/docs/reference/using-api/api-concepts/,
//! "Efficient detection of changes", "Watch bookmarks", "Streaming lists"):
//! newline-delimited JSON `{"type", "object"}` events from a
//! resourceVersion on; `ADDED` for every object first when the
//! resourceVersion is unset or `"0"` or with `sendInitialEvents=true` (then
//! a `BOOKMARK` annotated `k8s.io/initial-events-end`); periodic `BOOKMARK`s
//! with `allowWatchBookmarks=true`; an `ERROR` event with a 410 `Status`
//! when the history no longer reaches back to where the watch stands; the
//! stream ends after `timeoutSeconds`, when watches are dropped, or when the
//! server stops.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::Frame;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::ServerState;
use crate::error::ApiError;
use crate::kinds::KindSpec;
use crate::selector::Selector;
use crate::store::{Event, EventType};

/// A watch's response body: the lines its task sends.
pub struct WatchBody {
    rx: mpsc::Receiver<Bytes>,
}

impl http_body::Body for WatchBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.rx.poll_recv(cx).map(|o| o.map(|b| Ok(Frame::data(b))))
    }
}

/// One watch request.
pub struct Watch {
    pub kind: Arc<KindSpec>,
    pub version: String,
    pub namespace: Option<String>,
    pub selector: Selector,
    /// `None`: start now, with the current objects first.
    pub from: Option<u64>,
    pub initial_events: bool,
    pub bookmarks: bool,
    pub timeout: Option<Duration>,
}

impl Watch {
    fn selects(&self, object: &Value) -> bool {
        let ns = object["metadata"]["namespace"].as_str().unwrap_or_default();
        self.namespace.as_deref().is_none_or(|n| n == ns) && self.selector.matches(object)
    }

    fn line(&self, kind: &str, object: &Value) -> Bytes {
        let mut text = String::from("{\"type\":\"");
        text.push_str(kind);
        text.push_str("\",\"object\":");
        let version = self.kind.api_version(&self.version);
        if object["apiVersion"] == version.as_str() {
            text.push_str(&object.to_string());
        } else {
            let mut served = object.clone();
            served["apiVersion"] = json!(version);
            text.push_str(&served.to_string());
        }
        text.push_str("}\n");
        Bytes::from(text)
    }

    /// What this watch shows of an event (a change that leaves or enters
    /// the selection is a `DELETED` or an `ADDED`).
    fn render(&self, event: &Event) -> Option<Bytes> {
        if event.resource != self.kind.resource() {
            return None;
        }
        let now = self.selects(&event.object);
        let before = event.previous.as_ref().is_some_and(|p| self.selects(p));
        let kind = match (event.kind, before, now) {
            (EventType::Deleted, true, _) => EventType::Deleted,
            (EventType::Deleted, false, _) => return None,
            (_, true, true) => EventType::Modified,
            (_, false, true) => EventType::Added,
            (_, true, false) => EventType::Deleted,
            (_, false, false) => return None,
        };
        Some(self.line(kind.as_str(), &event.object))
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        let mut metadata = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let object = json!({
            "kind": self.kind.kind,
            "apiVersion": self.kind.api_version(&self.version),
            "metadata": metadata,
        });
        self.line("BOOKMARK", &object)
    }
}

fn gone(rv: u64, compacted: u64) -> Bytes {
    let status = ApiError::gone(format!("too old resource version: {rv} ({compacted})")).status();
    Bytes::from(format!("{{\"type\":\"ERROR\",\"object\":{status}}}\n"))
}

/// Starts a watch: the body streams what its task sends.
pub fn start(shared: Arc<ServerState>, watch: Watch) -> WatchBody {
    let (tx, rx) = mpsc::channel(1024);
    tokio::spawn(async move {
        // A closed channel only means the client went away.
        let _ = run(shared, watch, tx).await;
    });
    WatchBody { rx }
}

/// Where a watch starts and the `ADDED` lines it starts with, or the 410
/// `ERROR` line when its resourceVersion is compacted away.
fn starting_point(shared: &ServerState, watch: &Watch) -> Result<(u64, Vec<Bytes>), Bytes> {
    let state = shared.state();
    let compacted = state.store.compacted();
    match watch.from {
        Some(rv) if rv < compacted && !watch.initial_events => Err(gone(rv, compacted)),
        Some(rv) if !watch.initial_events => Ok((rv, Vec::new())),
        _ => {
            let objects = state
                .store
                .list(&watch.kind.resource(), watch.namespace.as_deref());
            let selected = objects
                .iter()
                .filter(|o| watch.selects(o))
                .map(|o| watch.line("ADDED", o))
                .collect();
            Ok((state.store.rv(), selected))
        }
    }
}

/// The client went away.
struct Closed;

async fn send(tx: &mpsc::Sender<Bytes>, line: Bytes) -> Result<(), Closed> {
    tx.send(line).await.map_err(|_| Closed)
}

async fn run(
    shared: Arc<ServerState>,
    watch: Watch,
    tx: mpsc::Sender<Bytes>,
) -> Result<(), Closed> {
    let mut changed = shared.changed.subscribe();
    let mut epoch = shared.epoch.subscribe();
    let mut shutdown = shared.shutdown.subscribe();
    let (mut last, initial) = match starting_point(&shared, &watch) {
        Ok(start) => start,
        Err(line) => return send(&tx, line).await,
    };
    for line in initial {
        send(&tx, line).await?;
    }
    if watch.initial_events && watch.bookmarks {
        send(&tx, watch.bookmark(last, true)).await?;
    }
    let deadline = watch.timeout.map(|t| tokio::time::Instant::now() + t);
    let mut ticker = tokio::time::interval(shared.bookmark_interval);
    ticker.tick().await;
    loop {
        let (events, compacted) = {
            let state = shared.state();
            (state.store.events_after(last), state.store.compacted())
        };
        let Some(events) = events else {
            return send(&tx, gone(last, compacted)).await;
        };
        for event in &events {
            last = event.rv;
            if let Some(line) = watch.render(event) {
                send(&tx, line).await?;
            }
        }
        let expired = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            r = changed.changed() => if r.is_err() { return Ok(()) },
            _ = epoch.changed() => return Ok(()),
            _ = shutdown.changed() => return Ok(()),
            _ = tx.closed() => return Err(Closed),
            _ = ticker.tick(), if watch.bookmarks => send(&tx, watch.bookmark(last, false)).await?,
            _ = expired => return Ok(()),
        }
    }
}
