//! The settings a policy or a route rule carries (docs/semantics.md),
//! as written in YAML, and their validation into a [`FieldMap`].
//!
//! Raw structs reject unknown fields so that a typo (`timeout:`) is an
//! error naming the field rather than a silently ignored setting.

use std::collections::BTreeSet;

use attache_contract::safety;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::duration;
use crate::field::document::policy_name;
use crate::field::{Direction, FieldKey, FieldMap, FieldValue};

pub(crate) mod schema_rules;

// The `#[schemars]` attributes below state the rules the validation in this
// file applies, for the CRDs (`attache crds`, crate::schema); tests/crds.rs
// checks that the two agree. Doc comments on fields become the CRD's
// descriptions.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RawSettings {
    pub timeouts: Option<RawTimeouts>,
    pub retry: Option<RawRetry>,
    /// Headers changed on the request before it goes to the backend.
    pub request_header_modifier: Option<RawHeaderModifier>,
    /// Headers changed on the response before it goes to the client.
    pub response_header_modifier: Option<RawHeaderModifier>,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RawTimeouts {
    /// Whole-request timeout, client to response (Gateway API duration; 0s disables).
    #[serde(default, deserialize_with = "duration_text")]
    #[schemars(with = "Option<String>", regex(pattern = duration::PATTERN))]
    pub request: Option<String>,
    /// Timeout of each attempt to the backend (Gateway API duration; 0s disables).
    #[serde(default, deserialize_with = "duration_text")]
    #[schemars(with = "Option<String>", regex(pattern = duration::PATTERN))]
    pub backend_request: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RawRetry {
    /// Retries after the first attempt (0 disables retries).
    #[schemars(range(min = 0, max = safety::MAX_RETRY_ATTEMPTS))]
    pub attempts: Option<i64>,
    /// HTTP status codes that are retried.
    #[schemars(inner(range(min = safety::RETRY_CODE_MIN, max = safety::RETRY_CODE_MAX)))]
    pub codes: Option<Vec<i64>>,
    /// Base interval between retries (Gateway API duration).
    #[serde(default, deserialize_with = "duration_text")]
    #[schemars(
        with = "Option<String>",
        regex(pattern = duration::PATTERN),
        transform = crate::settings::schema_rules::positive_duration
    )]
    pub backoff: Option<String>,
    /// Envoy retry triggers.
    #[schemars(transform = crate::settings::schema_rules::retry_triggers)]
    pub retry_on: Option<Vec<String>>,
}

// Kubernetes list types make exact duplicate names a schema error; names
// that differ only in case are refused by `header_modifier` and by the
// CRDs' CEL rule `unique_names_rule`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(extend("x-kubernetes-validations" = [
    crate::settings::schema_rules::operation_count_rule(),
    crate::settings::schema_rules::unique_names_rule(),
]))]
pub struct RawHeaderModifier {
    /// Headers to set, replacing any value the message has.
    #[serde(default)]
    #[schemars(
        length(max = safety::MAX_HEADER_OPERATIONS),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub set: Vec<RawHeader>,
    /// Headers to add, keeping any value the message has.
    #[serde(default)]
    #[schemars(
        length(max = safety::MAX_HEADER_OPERATIONS),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub add: Vec<RawHeader>,
    /// Names of headers to remove.
    #[serde(default)]
    #[schemars(
        length(max = safety::MAX_HEADER_OPERATIONS),
        transform = crate::settings::schema_rules::header_name_items,
        extend("x-kubernetes-list-type" = "set")
    )]
    pub remove: Vec<String>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawHeader {
    #[schemars(schema_with = "crate::settings::schema_rules::header_name")]
    pub name: String,
    #[schemars(schema_with = "crate::settings::schema_rules::header_value")]
    pub value: String,
}

/// A duration as text. A bare YAML number (`request: 10`) is taken as its
/// text so that validation can say what a valid duration looks like,
/// instead of a type error.
fn duration_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    use serde::de::Error;
    match Option::<serde_json::Value>::deserialize(d)? {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(s)) => Ok(Some(s)),
        Some(serde_json::Value::Number(n)) => Ok(Some(n.to_string())),
        Some(other) => Err(D::Error::custom(format!(
            "expected a duration such as 10s, found {other}"
        ))),
    }
}

/// A validation failure inside one object; the caller adds file, document
/// and object to make it a [`crate::Diagnostic`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub field: String,
    pub message: String,
    pub hint: String,
}

/// Envoy `retry_on` triggers (HTTP and gRPC), the values `retry.retryOn`
/// accepts: the one list, in `attache_contract::safety`.
pub use attache_contract::safety::RETRY_TRIGGERS;

/// Validates timeouts into `out`; `path` is where they sit (e.g. `spec.defaults.timeouts`).
pub fn timeouts(raw: &RawTimeouts, path: &str, out: &mut FieldMap, problems: &mut Vec<Problem>) {
    for (text, key) in [
        (&raw.request, FieldKey::RequestTimeout),
        (&raw.backend_request, FieldKey::BackendRequestTimeout),
    ] {
        let name = policy_name(&key);
        if let Some(text) = text {
            match duration_field(text, &format!("{path}.{name}"), problems) {
                Some(ms) => {
                    out.insert(key, FieldValue::Millis(ms));
                }
                None => continue,
            }
        }
    }
}

pub fn retry(raw: &RawRetry, path: &str, out: &mut FieldMap, problems: &mut Vec<Problem>) {
    let at = |key: FieldKey| format!("{path}.{}", policy_name(&key));
    if let Some(attempts) = raw.attempts {
        match u32::try_from(attempts) {
            Ok(n) if n <= safety::MAX_RETRY_ATTEMPTS => {
                out.insert(FieldKey::RetryAttempts, FieldValue::Count(n));
            }
            Ok(_) => problems.push(Problem {
                field: at(FieldKey::RetryAttempts),
                message: format!(
                    "{attempts} retries is over the limit of {}",
                    safety::MAX_RETRY_ATTEMPTS
                ),
                hint: "a larger count multiplies load on a failing backend; bound retries with a \
                       retry budget, not a larger count (0 disables retries)"
                    .into(),
            }),
            Err(_) => problems.push(Problem {
                field: at(FieldKey::RetryAttempts),
                message: format!("{attempts} is not a valid number of retries"),
                hint: "use an integer from 0 to 10 (0 disables retries)".into(),
            }),
        }
    }
    if let Some(codes) = &raw.codes {
        let mut valid = Vec::new();
        for (i, code) in codes.iter().enumerate() {
            match u16::try_from(*code) {
                Ok(c) if safety::is_retriable_code(c) => valid.push(c),
                _ => problems.push(Problem {
                    field: format!("{}[{i}]", at(FieldKey::RetryCodes)),
                    message: format!("{code} is not a retriable HTTP status code"),
                    hint: format!(
                        "use a code from {} to {}, e.g. 503",
                        safety::RETRY_CODE_MIN,
                        safety::RETRY_CODE_MAX
                    ),
                }),
            }
        }
        if valid.len() == codes.len() {
            out.insert(FieldKey::RetryCodes, FieldValue::Codes(valid));
        }
    }
    if let Some(text) = &raw.backoff {
        match duration_field(text, &at(FieldKey::RetryBackoff), problems) {
            // Envoy refuses a zero `retry_back_off.base_interval` (its API
            // validation: greater than 0s), and one refused route refuses the
            // whole route configuration: every tenant's routes on that
            // listener would stop updating (docs/semantics.md, "Retries").
            Some(0) => problems.push(Problem {
                field: at(FieldKey::RetryBackoff),
                message: format!("{text:?} is not a back-off: Envoy refuses a zero base interval"),
                hint: "use at least 1ms, or leave backoff out for Envoy's default of 25ms".into(),
            }),
            Some(ms) => {
                out.insert(FieldKey::RetryBackoff, FieldValue::Millis(ms));
            }
            None => {}
        }
    }
    if let Some(triggers) = &raw.retry_on {
        let mut bad = false;
        for (i, trigger) in triggers.iter().enumerate() {
            if !RETRY_TRIGGERS.contains(&trigger.as_str()) {
                bad = true;
                problems.push(Problem {
                    field: format!("{}[{i}]", at(FieldKey::RetryOn)),
                    message: format!("{trigger:?} is not an Envoy retry trigger"),
                    hint: format!("use one of {}", RETRY_TRIGGERS.join(", ")),
                });
            }
        }
        if !bad {
            out.insert(FieldKey::RetryOn, FieldValue::Words(triggers.clone()));
        }
    }
}

pub fn header_modifier(
    raw: &RawHeaderModifier,
    direction: Direction,
    path: &str,
    out: &mut FieldMap,
    problems: &mut Vec<Problem>,
) {
    if !operation_count(raw, path, problems) {
        return;
    }
    for (list, name, is_set) in [(&raw.set, "set", true), (&raw.add, "add", false)] {
        let mut seen = BTreeSet::new();
        for (i, header) in list.iter().enumerate() {
            let at = format!("{path}.{name}[{i}]");
            let Some(lower) = header_name(&header.name, &format!("{at}.name"), problems) else {
                continue;
            };
            if !seen.insert(lower.clone()) {
                problems.push(Problem {
                    field: format!("{at}.name"),
                    message: format!("header {lower:?} is listed twice in {name}"),
                    hint: "list each header name once (names compare case-insensitively)".into(),
                });
                continue;
            }
            if let Err(refusal) = safety::check_header_value(&header.value) {
                problems.push(Problem {
                    field: format!("{at}.value"),
                    message: format!("the value of {lower:?} {}", refusal.reason()),
                    hint: refusal.hint().into(),
                });
                continue;
            }
            let key = if is_set {
                FieldKey::HeaderSet(direction, lower)
            } else {
                FieldKey::HeaderAdd(direction, lower)
            };
            out.insert(key, FieldValue::Text(header.value.clone()));
        }
    }
    if !raw.remove.is_empty() {
        let mut names: Vec<String> = Vec::new();
        for (i, name) in raw.remove.iter().enumerate() {
            let at = format!("{path}.remove[{i}]");
            let Some(lower) = header_name(name, &at, problems) else {
                continue;
            };
            if names.contains(&lower) {
                problems.push(Problem {
                    field: at,
                    message: format!("header {lower:?} is listed twice in remove"),
                    hint: "list each header name once (names compare case-insensitively)".into(),
                });
                continue;
            }
            names.push(lower);
        }
        out.insert(FieldKey::HeaderRemove(direction), FieldValue::Words(names));
    }
}

/// All four settings at `path` (e.g. `spec.defaults`).
pub fn settings(raw: &RawSettings, path: &str, problems: &mut Vec<Problem>) -> FieldMap {
    let mut out = FieldMap::new();
    if let Some(t) = &raw.timeouts {
        timeouts(t, &format!("{path}.timeouts"), &mut out, problems);
    }
    if let Some(r) = &raw.retry {
        retry(r, &format!("{path}.retry"), &mut out, problems);
    }
    if let Some(h) = &raw.request_header_modifier {
        header_modifier(
            h,
            Direction::Request,
            &format!("{path}.requestHeaderModifier"),
            &mut out,
            problems,
        );
    }
    if let Some(h) = &raw.response_header_modifier {
        header_modifier(
            h,
            Direction::Response,
            &format!("{path}.responseHeaderModifier"),
            &mut out,
            problems,
        );
    }
    out
}

fn duration_field(text: &str, field: &str, problems: &mut Vec<Problem>) -> Option<u64> {
    let ms = duration::parse_millis(text);
    if ms.is_none() {
        problems.push(Problem {
            field: field.to_string(),
            message: format!("{text:?} is not a Gateway API duration"),
            hint: format!(
                "use e.g. 1500ms, 10s or 1m30s; 0s disables (pattern {})",
                duration::PATTERN
            ),
        });
    }
    ms
}

/// A header name a policy or route may operate on (docs/semantics.md, "What a
/// policy may not do"); returns the lower-cased name. The rule itself lives in
/// `attache_contract::safety`, shared with the filter.
fn header_name(name: &str, field: &str, problems: &mut Vec<Problem>) -> Option<String> {
    match safety::check_policy_header_name(name) {
        Ok(()) => Some(name.to_ascii_lowercase()),
        Err(refusal) => {
            problems.push(Problem {
                field: field.to_string(),
                message: format!("{name:?} {}", refusal.reason()),
                hint: refusal.hint().into(),
            });
            None
        }
    }
}

/// At most [`safety::MAX_HEADER_OPERATIONS`] operations per direction: each
/// one is work on every request, and an unbounded list is a tenant's way to
/// slow every other tenant's requests.
fn operation_count(raw: &RawHeaderModifier, path: &str, problems: &mut Vec<Problem>) -> bool {
    let count = raw.set.len() + raw.add.len() + raw.remove.len();
    if count > safety::MAX_HEADER_OPERATIONS {
        problems.push(Problem {
            field: path.to_string(),
            message: format!(
                "{count} header operations, over the limit of {}",
                safety::MAX_HEADER_OPERATIONS
            ),
            hint: "set, add and remove together may list at most 64 headers per direction".into(),
        });
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::document::SCALARS;

    fn parse(json: serde_json::Value) -> (FieldMap, Vec<Problem>) {
        let raw: RawSettings = serde_json::from_value(json).unwrap();
        let mut problems = Vec::new();
        let map = settings(&raw, "spec.defaults", &mut problems);
        (map, problems)
    }

    #[test]
    fn every_scalar_of_the_table_is_read_from_a_policy() {
        // A new row in crate::field::document's table fails here until the
        // settings read it (and this input sets it).
        let (map, problems) = parse(serde_json::json!({
            "timeouts": {"request": "10s", "backendRequest": "1s"},
            "retry": {"attempts": 3, "codes": [503], "backoff": "100ms", "retryOn": ["reset"]}
        }));
        assert!(problems.is_empty(), "{problems:?}");
        for key in SCALARS {
            assert!(
                map.contains_key(key),
                "{key} is in the table but no policy field reads it"
            );
        }
    }

    #[test]
    fn valid_settings_become_leaves_with_lower_case_headers() {
        let (map, problems) = parse(serde_json::json!({
            "timeouts": {"request": "10s", "backendRequest": "0s"},
            "retry": {"attempts": 3, "codes": [502, 503], "backoff": "100ms", "retryOn": ["connect-failure"]},
            "requestHeaderModifier": {"set": [{"name": "X-A", "value": "1"}], "remove": ["X-B"]}
        }));
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(
            map.get(&FieldKey::RequestTimeout),
            Some(&FieldValue::Millis(10_000))
        );
        assert_eq!(
            map.get(&FieldKey::BackendRequestTimeout),
            Some(&FieldValue::Millis(0))
        );
        assert_eq!(
            map.get(&FieldKey::RetryCodes),
            Some(&FieldValue::Codes(vec![502, 503]))
        );
        assert_eq!(
            map.get(&FieldKey::HeaderSet(Direction::Request, "x-a".into())),
            Some(&FieldValue::Text("1".into()))
        );
        assert_eq!(
            map.get(&FieldKey::HeaderRemove(Direction::Request)),
            Some(&FieldValue::Words(vec!["x-b".into()]))
        );
    }

    #[test]
    fn each_bad_value_is_reported_at_its_path() {
        let (map, problems) = parse(serde_json::json!({
            "timeouts": {"request": "1.5s"},
            "retry": {"attempts": -1, "codes": [503, 600], "retryOn": ["sometimes"]},
            "requestHeaderModifier": {"set": [{"name": "bad name", "value": "1"}, {"name": "x-a", "value": "1"}, {"name": "X-A", "value": "2"}]}
        }));
        let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "spec.defaults.timeouts.request",
                "spec.defaults.retry.attempts",
                "spec.defaults.retry.codes[1]",
                "spec.defaults.retry.retryOn[0]",
                "spec.defaults.requestHeaderModifier.set[0].name",
                "spec.defaults.requestHeaderModifier.set[2].name",
            ]
        );
        assert!(problems[0].hint.contains("1500ms"));
        assert!(!map.contains_key(&FieldKey::RetryCodes));
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let err = serde_json::from_value::<RawSettings>(
            serde_json::json!({"timeout": {"request": "1s"}}),
        );
        assert!(err.is_err());
    }
}
