//! Kubernetes Events the controller publishes: on a Gateway (a failure to
//! apply, a Gateway not served) and on the object a resolver finding names
//! (`crate::warnings`, each once while it holds).

use attache_core::topology::ObjectKey;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder};

use crate::snapshot::{key_of, Snapshot};
use crate::warnings::{PolicyWarning, Reported};

/// What one Event says, and about which object.
pub struct Said<'a> {
    pub kind: &'a str,
    /// The apiVersion when the snapshot does not hold the object.
    pub api_version: &'a str,
    pub key: &'a ObjectKey,
    pub type_: EventType,
    pub reason: &'a str,
    pub note: &'a str,
    pub action: &'a str,
}

/// Publishes one Event; the object's uid and apiVersion come from the
/// snapshot where it holds the object.
pub async fn publish(recorder: &Recorder, snapshot: &Snapshot, said: Said<'_>) {
    let object = snapshot
        .docs
        .iter()
        .map(|d| &d.doc.value)
        .find(|d| d["kind"] == said.kind && key_of(d) == *said.key);
    let reference = ObjectReference {
        api_version: Some(
            object
                .and_then(|o| o["apiVersion"].as_str())
                .unwrap_or(said.api_version)
                .to_string(),
        ),
        kind: Some(said.kind.to_string()),
        name: Some(said.key.name.clone()),
        namespace: Some(said.key.namespace.clone()),
        uid: object.and_then(|o| o["metadata"]["uid"].as_str().map(str::to_string)),
        ..ObjectReference::default()
    };
    let event = Event {
        type_: said.type_,
        reason: said.reason.into(),
        // The API server bounds an Event's note (1 KiB).
        note: Some(said.note.chars().take(1000).collect()),
        action: said.action.into(),
        secondary: None,
    };
    if let Err(e) = recorder.publish(&event, &reference).await {
        tracing::warn!(error = %e, "cannot publish an Event");
    }
}

/// A Warning Event for each warning of `now` not yet published.
pub async fn publish_warnings(
    recorder: &Recorder,
    snapshot: &Snapshot,
    reported: &mut Reported,
    now: &[PolicyWarning],
) {
    for warning in reported.fresh(now) {
        let said = Said {
            kind: &warning.kind,
            api_version: "",
            key: &warning.key,
            type_: EventType::Warning,
            reason: warning.reason,
            note: &warning.message,
            action: "Resolve",
        };
        publish(recorder, snapshot, said).await;
    }
}
