//! The controller's writes, each one request (or a re-read and retry):
//! server-side apply of a WasmPlugin, its deletion when its Gateway left
//! our class, a policy's status subresource, and an Event.

use std::time::Duration;

use attache_core::topology::ObjectKey;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams};
use kube::{Api, Client};
use serde_json::{json, Value};

use super::metrics::{Metrics, Write};
use super::watch::api_resource;
pub use crate::kinds::FIELD_MANAGER;
use crate::kinds::{WatchedKind, WASM_PLUGIN};
use crate::status::rebase;

/// How often a status write that met a 409 Conflict is re-read and retried.
pub const STATUS_RETRIES: usize = 3;

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("{what}: forbidden by RBAC ({message})\n  hint: deploy/controller/rbac.yaml lists what the controller needs")]
    Forbidden { what: String, message: String },
    #[error("{what}: the API server refused it: {source}")]
    Api { what: String, source: kube::Error },
    #[error("{what}: still conflicting after {STATUS_RETRIES} re-reads")]
    Conflict { what: String },
}

impl WriteError {
    /// A few fixed words for the metric's `reason` label.
    pub fn reason(&self) -> &'static str {
        match self {
            WriteError::Forbidden { .. } => "Forbidden",
            WriteError::Conflict { .. } => "Conflict",
            WriteError::Api {
                source: kube::Error::Api(s),
                ..
            } if s.code == 429 => "TooManyRequests",
            WriteError::Api {
                source: kube::Error::Api(_),
                ..
            } => "ApiError",
            WriteError::Api { .. } => "Transport",
        }
    }

    /// How long the API server asked us to wait: a 429's
    /// `details.retryAfterSeconds` (API conventions, "HTTP Status codes":
    /// 429 StatusTooManyRequests carries the same value as `Retry-After`).
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        match self {
            WriteError::Api {
                source: kube::Error::Api(s),
                ..
            } if s.code == 429 => s
                .details
                .as_ref()
                .map(|d| std::time::Duration::from_secs(u64::from(d.retry_after_seconds.max(1)))),
            _ => None,
        }
    }

    pub fn from_kube(what: String, source: kube::Error) -> Self {
        match &source {
            kube::Error::Api(s) if s.code == 403 => WriteError::Forbidden {
                what,
                message: s.message.clone(),
            },
            _ => WriteError::Api { what, source },
        }
    }
}

fn plugins(client: &Client, kind: &WatchedKind, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), namespace, &api_resource(kind))
}

/// Server-side apply of the Gateway's WasmPlugin: field manager `attache`,
/// `force` (the controller is the one owner of these fields; a conflict with
/// a hand edit is resolved in its favour, as the server-side apply docs
/// advise controllers to do), no last-applied annotation.
pub async fn apply_plugin(client: &Client, plugin: &Value) -> Result<(), WriteError> {
    let namespace = plugin["metadata"]["namespace"].as_str().unwrap_or_default();
    let name = plugin["metadata"]["name"].as_str().unwrap_or_default();
    let what = format!("WasmPlugin {namespace}/{name}");
    let params = PatchParams::apply(FIELD_MANAGER).force();
    plugins(client, &WASM_PLUGIN, namespace)
        .patch(name, &params, &Patch::Apply(plugin))
        .await
        .map_err(|e| WriteError::from_kube(what, e))?;
    Ok(())
}

/// Deletes our plugin (a WasmPlugin or a TrafficExtension) of a Gateway
/// that is no longer ours, or of the kind no longer written. Already gone
/// (404) is done.
pub async fn delete_plugin(
    client: &Client,
    kind: &WatchedKind,
    key: &ObjectKey,
) -> Result<(), WriteError> {
    let what = format!("{} {key}", kind.kind);
    match plugins(client, kind, &key.namespace)
        .delete(&key.name, &DeleteParams::default())
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(WriteError::from_kube(what, e)),
    }
}

fn policy_api(client: &Client, kind: &WatchedKind, key: &ObjectKey) -> Api<DynamicObject> {
    let ar = api_resource(kind);
    if kind.namespaced {
        Api::namespaced_with(client.clone(), &key.namespace, &ar)
    } else {
        Api::all_with(client.clone(), &ar)
    }
}

/// Writes a policy's status through its status subresource: a JSON merge
/// patch carrying `metadata.resourceVersion`, so that the API server
/// refuses it (409) if the object changed since it was read (API
/// conventions, "Concurrency Control and Consistency"). On 409 the object
/// is read again, our part of the status is laid over the fresh one (other
/// controllers' ancestors kept), and the write is tried again.
pub async fn write_status(
    client: &Client,
    metrics: &Metrics,
    kind: &WatchedKind,
    key: &ObjectKey,
    resource_version: &str,
    status: &Value,
) -> Result<(), WriteError> {
    let what = format!("{} {key} status", kind.kind);
    let api = policy_api(client, kind, key);
    let mut version = resource_version.to_string();
    let mut status = status.clone();
    for attempt in 0..=STATUS_RETRIES {
        let body = json!({"metadata": {"resourceVersion": version}, "status": status});
        metrics.wrote(Write::Status);
        match api
            .patch_status(&key.name, &PatchParams::default(), &Patch::Merge(&body))
            .await
        {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 && attempt < STATUS_RETRIES => {
                tracing::info!(object = %what, "status write conflicted (409); reading again");
                tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
                let fresh = api
                    .get(&key.name)
                    .await
                    .map_err(|e| WriteError::from_kube(what.clone(), e))?;
                let fresh = serde_json::to_value(&fresh).unwrap_or(Value::Null);
                let rebased = rebase(&status, &fresh["status"]);
                if rebased == fresh["status"] {
                    return Ok(());
                }
                status = rebased;
                version = fresh["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
            }
            Err(e) => return Err(WriteError::from_kube(what, e)),
        }
    }
    Err(WriteError::Conflict { what })
}
