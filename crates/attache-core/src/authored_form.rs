//! A setting as its author wrote it: the field path in the policy's own kind
//! and the value in the API's format (`timeouts.request: 15s`,
//! `retry.numRetries: 2` for a BackendTrafficPolicy), so that what `attache
//! explain` prints can be found in the user's YAML with grep. The project's
//! path is the `RawSettings` shape, its leaf names from the settings table
//! (field/document.rs; the test below reads each path back through
//! settings/mod.rs), and a peer's path comes from its table in model/peers.rs,
//! the same table that reads its documents.

use std::fmt::Write as _;

use serde::Serialize;

use crate::field::document::policy_name;
use crate::field::{FieldKey, FieldValue, Group};
use crate::model::peers::their_field;
use crate::model::PolicyKind;

/// A field path and value as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Written {
    pub path: String,
    pub value: String,
}

impl Written {
    /// `key = value` as written in `kind`; `None` is a route rule's own
    /// value (an HTTPRoute writes the project's shape).
    pub fn new(key: &FieldKey, value: &FieldValue, kind: Option<PolicyKind>) -> Self {
        Written {
            path: path(key, kind),
            value: shown(value),
        }
    }
}

/// The name of a group in a policy's settings (`RawSettings`'s fields).
pub(crate) fn group_name(group: Group) -> &'static str {
    group.policy_name()
}

/// The path of `key` in the `RawSettings` shape (`timeouts.request`,
/// `requestHeaderModifier.set[x-a]`; a header entry is named by its name,
/// the key of Gateway API's list-map): the group, then the leaf's name from
/// the settings table (field/document.rs).
fn raw_path(key: &FieldKey) -> String {
    let (group, leaf) = (group_name(key.group()), policy_name(key));
    match key {
        FieldKey::HeaderSet(_, name) | FieldKey::HeaderAdd(_, name) => {
            format!("{group}.{leaf}[{name}]")
        }
        _ => format!("{group}.{leaf}"),
    }
}

/// The path of `key` as `kind` writes it, under `spec` (or a stanza).
pub fn path(key: &FieldKey, kind: Option<PolicyKind>) -> String {
    let ours = raw_path(key);
    match kind {
        None => ours,
        Some(kind) => {
            let theirs = their_field(kind, &format!("spec.{ours}"));
            theirs.strip_prefix("spec.").unwrap_or(&theirs).to_string()
        }
    }
}

/// A value in the API's format: durations as Gateway API durations.
pub fn shown(value: &FieldValue) -> String {
    match value {
        FieldValue::Millis(ms) => duration(*ms),
        other => other.to_string(),
    }
}

/// Milliseconds as a Gateway API duration (GEP-2257), largest units first:
/// `15s`, `1m30s`, `1s500ms`, `0s`.
pub fn duration(ms: u64) -> String {
    if ms == 0 {
        return "0s".into();
    }
    let mut out = String::new();
    let mut rest = ms;
    for (unit, size) in [("h", 3_600_000), ("m", 60_000), ("s", 1_000), ("ms", 1)] {
        let n = rest / size;
        rest %= size;
        if n > 0 {
            let _ = write!(out, "{n}{unit}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::Direction;
    use crate::settings::{settings, RawSettings};

    /// Every path, written as YAML the reader accepts, gives back its key:
    /// the names here are the reader's.
    #[test]
    fn each_raw_path_is_read_back_as_its_key() {
        let keys = [
            (
                FieldKey::RequestTimeout,
                serde_json::json!({"timeouts": {"request": "1s"}}),
            ),
            (
                FieldKey::BackendRequestTimeout,
                serde_json::json!({"timeouts": {"backendRequest": "1s"}}),
            ),
            (
                FieldKey::RetryAttempts,
                serde_json::json!({"retry": {"attempts": 1}}),
            ),
            (
                FieldKey::RetryCodes,
                serde_json::json!({"retry": {"codes": [503]}}),
            ),
            (
                FieldKey::RetryBackoff,
                serde_json::json!({"retry": {"backoff": "1s"}}),
            ),
            (
                FieldKey::RetryOn,
                serde_json::json!({"retry": {"retryOn": ["reset"]}}),
            ),
            (
                FieldKey::HeaderSet(Direction::Request, "x-a".into()),
                serde_json::json!({"requestHeaderModifier": {"set": [{"name": "x-a", "value": "1"}]}}),
            ),
            (
                FieldKey::HeaderAdd(Direction::Response, "x-a".into()),
                serde_json::json!({"responseHeaderModifier": {"add": [{"name": "x-a", "value": "1"}]}}),
            ),
            (
                FieldKey::HeaderRemove(Direction::Request),
                serde_json::json!({"requestHeaderModifier": {"remove": ["x-a"]}}),
            ),
        ];
        for (key, json) in keys {
            // The path names the same place as the JSON, walked key by key.
            let mut at = &json;
            for part in raw_path(&key).split('.') {
                let name = part.split('[').next().unwrap_or(part);
                at = &at[name];
            }
            assert!(!at.is_null(), "{} not in {json}", raw_path(&key));
            let raw: RawSettings = serde_json::from_value(json.clone()).unwrap();
            let mut problems = Vec::new();
            let map = settings(&raw, "spec", &mut problems);
            assert!(problems.is_empty(), "{problems:?}");
            assert!(map.contains_key(&key), "{json} did not give {key}");
        }
    }

    #[test]
    fn peers_write_their_own_paths() {
        let btp = Some(PolicyKind::BackendTrafficPolicy);
        assert_eq!(path(&FieldKey::RetryAttempts, btp), "retry.numRetries");
        assert_eq!(
            path(&FieldKey::RequestTimeout, btp),
            "timeout.http.requestTimeout"
        );
        let kg = Some(PolicyKind::TrafficPolicy);
        assert_eq!(
            path(&FieldKey::HeaderSet(Direction::Request, "x-a".into()), kg),
            "headerModifiers.request.set[x-a]"
        );
        assert_eq!(path(&FieldKey::RetryCodes, kg), "retry.statusCodes");
        assert_eq!(
            path(&FieldKey::RequestTimeout, Some(PolicyKind::RoutePolicy)),
            "timeouts.request"
        );
        assert_eq!(
            path(&FieldKey::HeaderRemove(Direction::Response), None),
            "responseHeaderModifier.remove"
        );
    }

    #[test]
    fn durations_are_written_as_gateway_api_durations() {
        for (ms, text) in [
            (0, "0s"),
            (15_000, "15s"),
            (90_000, "1m30s"),
            (1_500, "1s500ms"),
            (3_600_000, "1h"),
            (250, "250ms"),
        ] {
            assert_eq!(duration(ms), text);
            assert_eq!(crate::duration::parse_millis(text), Some(ms));
        }
    }
}
