//! The DRIFT column of live `attache status`: each policy's computed
//! status beside the `.status` the cluster holds for it (the comparison is
//! the core's, `attache_core::status::drift`).

use attache_controller::kube::cluster::ClusterObjects;
use attache_core::status::drift::{drift, Drift};
use attache_core::status::PolicyStatus;
use serde_json::Value;

/// The drift of `policy` against its object as it was read. A policy the
/// read does not hold (it cannot be: the policy was read from it) is
/// `unwritten`, the one word that claims nothing about a status.
pub fn of(policy: &PolicyStatus, objects: &ClusterObjects) -> Drift {
    let live = objects.objects.iter().find(|(kind, value)| {
        kind.kind == policy.kind
            && value["metadata"]["name"].as_str() == Some(policy.metadata.name.as_str())
            && value["metadata"]["namespace"].as_str() == policy.metadata.namespace.as_deref()
    });
    match live {
        Some((_, value)) => drift(
            policy,
            value["metadata"]["generation"].as_i64(),
            &value["status"],
        ),
        None => drift(policy, None, &Value::Null),
    }
}
