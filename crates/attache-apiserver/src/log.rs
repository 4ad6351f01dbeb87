//! The request log: every request, with its verb, resource, subresource,
//! field manager and answer, and counters by (verb, resource, subresource)
//! that are never trimmed.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

use tokio::sync::broadcast;

/// The API verb of a request (the RBAC verbs, with `apply` apart from
/// `patch` and discovery apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verb {
    Get,
    List,
    Watch,
    Create,
    Update,
    /// A merge (or other non-apply) patch.
    Patch,
    /// A server-side apply patch.
    Apply,
    Delete,
    /// /api, /apis, /version and the like.
    Discovery,
}

impl Verb {
    pub fn is_write(self) -> bool {
        matches!(
            self,
            Verb::Create | Verb::Update | Verb::Patch | Verb::Apply | Verb::Delete
        )
    }
}

/// One request as served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    pub method: String,
    pub path: String,
    pub query: String,
    pub verb: Verb,
    pub group: String,
    pub version: String,
    /// The plural, e.g. `routepolicies`; empty for discovery.
    pub resource: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
    pub field_manager: Option<String>,
    pub content_type: Option<String>,
    /// The HTTP status answered (200 for a watch that started).
    pub status: u16,
    /// When the request arrived (before any injected delay).
    pub received: Instant,
    /// When its answer was ready (for a watch: when the stream started).
    pub answered: Instant,
}

impl RequestRecord {
    /// One JSON line for the out-of-process write log (`--write-log`):
    /// `at` is the wall-clock time it arrived, in seconds since the epoch,
    /// so a harness in another process can place it on its own clock.
    pub fn json_line(&self, at: f64) -> String {
        serde_json::json!({
            "at": at,
            "verb": format!("{:?}", self.verb).to_lowercase(),
            "resource": self.resource,
            "namespace": self.namespace,
            "name": self.name,
            "subresource": self.subresource,
            "fieldManager": self.field_manager,
            "status": self.status,
        })
        .to_string()
    }
}

type Key = (Verb, String, Option<String>);

#[derive(Debug, Default)]
struct LogEntries {
    records: Vec<RequestRecord>,
    counts: BTreeMap<Key, u64>,
    ok_counts: BTreeMap<Key, u64>,
}

/// Every request served; shared by the server and the handle.
#[derive(Debug)]
pub struct RequestLog {
    inner: Mutex<LogEntries>,
    capacity: usize,
    live: broadcast::Sender<RequestRecord>,
}

impl RequestLog {
    /// Keeps the last `capacity` records (the counters are never trimmed).
    pub fn new(capacity: usize) -> Self {
        RequestLog {
            inner: Mutex::new(LogEntries::default()),
            capacity,
            live: broadcast::channel(4096).0,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LogEntries> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn push(&self, record: RequestRecord) {
        let mut inner = self.lock();
        let key = (
            record.verb,
            record.resource.clone(),
            record.subresource.clone(),
        );
        *inner.counts.entry(key.clone()).or_default() += 1;
        if (200..300).contains(&record.status) {
            *inner.ok_counts.entry(key).or_default() += 1;
        }
        // No subscriber is not an error.
        let _ = self.live.send(record.clone());
        inner.records.push(record);
        if inner.records.len() > self.capacity {
            let excess = inner.records.len() - self.capacity;
            inner.records.drain(..excess);
        }
    }

    /// Every request from now on, as it is answered (a receiver that falls
    /// more than 4,096 records behind misses some: `RecvError::Lagged`).
    pub fn subscribe(&self) -> broadcast::Receiver<RequestRecord> {
        self.live.subscribe()
    }

    /// The records kept, oldest first.
    pub fn records(&self) -> Vec<RequestRecord> {
        self.lock().records.clone()
    }

    /// How many requests of this verb on this resource (plural) and
    /// subresource (`None`: the main resource) were served, whatever the
    /// answer.
    pub fn count(&self, verb: Verb, resource: &str, subresource: Option<&str>) -> u64 {
        let key = (verb, resource.to_string(), subresource.map(str::to_string));
        self.lock().counts.get(&key).copied().unwrap_or(0)
    }

    /// The same, only those answered 2xx.
    pub fn count_ok(&self, verb: Verb, resource: &str, subresource: Option<&str>) -> u64 {
        let key = (verb, resource.to_string(), subresource.map(str::to_string));
        self.lock().ok_counts.get(&key).copied().unwrap_or(0)
    }

    /// Every write (create, update, patch, apply, delete) served so far.
    pub fn writes(&self) -> u64 {
        self.lock()
            .counts
            .iter()
            .filter(|((verb, _, _), _)| verb.is_write())
            .map(|(_, n)| n)
            .sum()
    }

    /// Forgets the records and counters.
    pub fn clear(&self) {
        *self.lock() = LogEntries::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_patch_is_one_json_line_with_its_names() {
        let now = Instant::now();
        let record = RequestRecord {
            method: "PATCH".into(),
            path: "/apis/policy.attache.dev/v1alpha1/namespaces/shop/routepolicies/p1/status"
                .into(),
            query: String::new(),
            verb: Verb::Apply,
            group: "policy.attache.dev".into(),
            version: "v1alpha1".into(),
            resource: "routepolicies".into(),
            namespace: Some("shop".into()),
            name: Some("p1".into()),
            subresource: Some("status".into()),
            field_manager: Some("attache".into()),
            content_type: None,
            status: 200,
            received: now,
            answered: now,
        };
        let line = record.json_line(1.5);
        assert!(!line.contains('\n'));
        let v: serde_json::Value = serde_json::from_str(&line).expect("JSON");
        assert_eq!(v["at"], 1.5);
        assert_eq!(v["verb"], "apply");
        assert_eq!(v["resource"], "routepolicies");
        assert_eq!(v["name"], "p1");
        assert_eq!(v["subresource"], "status");
        assert_eq!(v["status"], 200);
    }
}
