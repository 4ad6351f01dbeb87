//! Hashes of JSON objects as the controller compares them: an object's
//! content version (what the incremental reconcile fingerprints a Gateway's
//! scope with, `crate::scope`), and the hash of any `serde_json::Value`
//! that the status and plugin memos compare by.

use std::hash::{Hash, Hasher};

use serde_json::Value;

/// A hash of what the reconcile reads of an object: all of it but the
/// bookkeeping that changes without a change of meaning
/// (`metadata.resourceVersion`, `managedFields`) and our own status. Of
/// `status` only other controllers' ancestors are read (GEP-713's limit of
/// 16 counts them), so the controller's own status write coming back
/// changes no version and makes no Gateway resolve again.
pub fn content_version(value: &Value) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    if let Value::Object(map) = value {
        for (field, v) in map {
            match field.as_str() {
                "status" => {
                    for ancestor in v["ancestors"].as_array().into_iter().flatten() {
                        if ancestor["controllerName"] != attache_core::status::CONTROLLER_NAME {
                            hash_value(ancestor, &mut hasher);
                        }
                    }
                }
                "metadata" => {
                    for (name, m) in v.as_object().into_iter().flatten() {
                        if !matches!(name.as_str(), "resourceVersion" | "managedFields") {
                            name.hash(&mut hasher);
                            hash_value(m, &mut hasher);
                        }
                    }
                }
                _ => {
                    field.hash(&mut hasher);
                    hash_value(v, &mut hasher);
                }
            }
        }
    }
    hasher.finish()
}

/// `serde_json::Value` has no `Hash`: each variant tagged, then its content.
pub(crate) fn hash_value(value: &Value, hasher: &mut impl Hasher) {
    match value {
        Value::Null => 0u8.hash(hasher),
        Value::Bool(b) => (1u8, b).hash(hasher),
        Value::Number(n) => (2u8, n.to_string()).hash(hasher),
        Value::String(s) => (3u8, s).hash(hasher),
        Value::Array(items) => {
            (4u8, items.len()).hash(hasher);
            items.iter().for_each(|v| hash_value(v, hasher));
        }
        Value::Object(map) => {
            (5u8, map.len()).hash(hasher);
            for (k, v) in map {
                k.hash(hasher);
                hash_value(v, hasher);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::content_version;
    use serde_json::json;

    fn policy(rv: &str, status: serde_json::Value) -> serde_json::Value {
        json!({"apiVersion": "policy.attache.dev/v1alpha1", "kind": "RoutePolicy",
            "metadata": {"name": "p", "namespace": "shop", "resourceVersion": rv,
                "managedFields": [{"manager": rv}]},
            "spec": {"defaults": {"timeouts": {"request": "5s"}}},
            "status": status})
    }

    #[test]
    fn our_own_status_and_the_bookkeeping_change_no_content_version() {
        let ours = |reason: &str| {
            json!({"conditions": [{"type": "Accepted", "reason": reason}],
                "ancestors": [{"controllerName": attache_core::status::CONTROLLER_NAME, "conditions": [{"reason": reason}]}]})
        };
        let before = content_version(&policy("1", json!({})));
        assert_eq!(before, content_version(&policy("2", ours("Accepted"))));
        assert_eq!(before, content_version(&policy("3", ours("Conflicted"))));
        // Another controller's ancestor counts toward the 16: it is read.
        let theirs = json!({"ancestors": [{"controllerName": "example.com/other"}]});
        assert_ne!(before, content_version(&policy("4", theirs)));
        let mut edited = policy("5", json!({}));
        edited["spec"]["defaults"]["timeouts"]["request"] = json!("6s");
        assert_ne!(before, content_version(&edited));
    }
}
