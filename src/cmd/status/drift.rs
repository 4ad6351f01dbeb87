//! The DRIFT and SERVED columns of live `attache status`: each policy's
//! computed status beside the `.status` the cluster holds for it (the
//! comparison is the core's, `attache_core::status::drift`), and what the
//! controller wrote there of the Gateways' replicas.

use attache_controller::kube::cluster::ClusterObjects;
use attache_controller::served::condition::served_cell;
use attache_controller::served::condition::Timestamp;
use attache_core::status::drift::{drift, Drift};
use attache_core::status::PolicyStatus;
use serde_json::Value;

/// The object `policy` was read from.
fn live<'a>(policy: &PolicyStatus, objects: &'a ClusterObjects) -> Option<&'a Value> {
    objects
        .objects
        .iter()
        .find(|(kind, value)| {
            kind.kind == policy.kind
                && value["metadata"]["name"].as_str() == Some(policy.metadata.name.as_str())
                && value["metadata"]["namespace"].as_str() == policy.metadata.namespace.as_deref()
        })
        .map(|(_, value)| value)
}

/// The SERVED cell of `policy`: what the controller wrote of its Gateways'
/// replicas (`attache_controller::served::condition::served_cell`).
pub fn served(policy: &PolicyStatus, objects: &ClusterObjects, now: Timestamp) -> String {
    live(policy, objects).map_or_else(|| "-".into(), |value| served_cell(&value["status"], now))
}

/// The drift of `policy` against its object as it was read. A policy the
/// read does not hold (it cannot be: the policy was read from it) is
/// `unwritten`, the one word that claims nothing about a status.
pub fn of(policy: &PolicyStatus, objects: &ClusterObjects) -> Drift {
    match live(policy, objects) {
        Some(value) => drift(
            policy,
            value["metadata"]["generation"].as_i64(),
            &value["status"],
        ),
        None => drift(policy, None, &Value::Null),
    }
}
