//! The peers' policy kinds, field by field: where kgateway's TrafficPolicy
//! and Envoy Gateway's BackendTrafficPolicy write a setting, and which of
//! the project's settings it becomes (docs/semantics.md, "Peers' policy
//! kinds"; docs/peers.md is this table for people). The reader
//! (`parse/peers.rs`), the notes on fields that are not enforced, and the
//! round-trip property test all read these tables, so a mapping lives in
//! one place.

use super::policy::PolicyKind;

/// One mapped field: the peer's path under `spec` and the path of the
/// setting it becomes, in the shape of `RawSettings` (dotted, camelCase).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapping {
    pub theirs: &'static str,
    pub ours: &'static str,
}

const fn m(theirs: &'static str, ours: &'static str) -> Mapping {
    Mapping { theirs, ours }
}

/// kgateway `TrafficPolicy` (gateway.kgateway.dev/v1alpha1): `retry` and
/// `headerModifiers` as in kgateway's api/v1alpha1 traffic policy types;
/// the header modifiers are Gateway API `HTTPHeaderFilter`s, the project's
/// own shape.
pub const TRAFFIC_POLICY: &[Mapping] = &[
    m("timeouts.request", "timeouts.request"),
    m("retry.perTryTimeout", "timeouts.backendRequest"),
    m("retry.attempts", "retry.attempts"),
    m("retry.statusCodes", "retry.codes"),
    m("retry.retryOn", "retry.retryOn"),
    m("retry.backoffBaseInterval", "retry.backoff"),
    m("headerModifiers.request", "requestHeaderModifier"),
    m("headerModifiers.response", "responseHeaderModifier"),
];

/// Envoy Gateway `BackendTrafficPolicy` (gateway.envoyproxy.io/v1alpha1):
/// the `timeout` and `retry` sections of its api/v1alpha1 types.
pub const BACKEND_TRAFFIC_POLICY: &[Mapping] = &[
    m("timeout.http.requestTimeout", "timeouts.request"),
    m("retry.numRetries", "retry.attempts"),
    m("retry.retryOn.httpStatusCodes", "retry.codes"),
    m("retry.retryOn.triggers", "retry.retryOn"),
    m("retry.perRetry.timeout", "timeouts.backendRequest"),
    m("retry.perRetry.backOff.baseInterval", "retry.backoff"),
];

/// The peer's fields that are read but are not settings: what the policy
/// targets and, for Envoy Gateway, how it merges.
pub fn read_fields(kind: PolicyKind) -> &'static [&'static str] {
    match kind {
        PolicyKind::TrafficPolicy => &["targetRefs", "targetSelectors"],
        PolicyKind::BackendTrafficPolicy => {
            &["targetRef", "targetRefs", "targetSelectors", "mergeType"]
        }
        PolicyKind::RoutePolicy | PolicyKind::ClusterRoutePolicy => &[],
    }
}

/// The settings table of a peer kind (empty for the project's own kinds).
pub fn mappings(kind: PolicyKind) -> &'static [Mapping] {
    match kind {
        PolicyKind::TrafficPolicy => TRAFFIC_POLICY,
        PolicyKind::BackendTrafficPolicy => BACKEND_TRAFFIC_POLICY,
        PolicyKind::RoutePolicy | PolicyKind::ClusterRoutePolicy => &[],
    }
}

/// Whether `path` (dotted, under `spec`) is read: a mapped field or one of
/// [`read_fields`], or anything inside one.
pub fn is_read(kind: PolicyKind, path: &str) -> bool {
    let within = |root: &str| {
        path == root
            || path
                .strip_prefix(root)
                .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
    };
    mappings(kind).iter().any(|m| within(m.theirs)) || read_fields(kind).iter().any(|r| within(r))
}

/// Whether some read field lies below `path`, so that an object there must
/// be walked rather than reported whole.
pub fn leads_to_read(kind: PolicyKind, path: &str) -> bool {
    let below = |root: &str| {
        root.strip_prefix(path)
            .is_some_and(|rest| rest.starts_with('.'))
    };
    mappings(kind).iter().any(|m| below(m.theirs)) || read_fields(kind).iter().any(|r| below(r))
}

/// The names directly below `path` that are mapped or read (`retry` ->
/// `attempts`, `perTryTimeout`, ...): what an object there should hold.
pub fn fields_below(kind: PolicyKind, path: &str) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    let below = mappings(kind)
        .iter()
        .map(|m| m.theirs)
        .chain(read_fields(kind).iter().copied())
        .filter_map(|root| root.strip_prefix(path)?.strip_prefix('.'))
        .map(|rest| rest.split('.').next().unwrap_or(rest));
    for name in below {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// The peer's name for a field the settings validation reported under the
/// project's name (`spec.retry.codes[1]` -> `spec.retry.statusCodes[1]`).
pub fn their_field(kind: PolicyKind, ours: &str) -> String {
    let best = mappings(kind)
        .iter()
        .filter_map(|m| {
            let root = format!("spec.{}", m.ours);
            let rest = ours.strip_prefix(&root)?;
            (rest.is_empty() || rest.starts_with('.') || rest.starts_with('['))
                .then(|| (root.len(), format!("spec.{}{rest}", m.theirs)))
        })
        .max_by_key(|(len, _)| *len);
    best.map(|(_, theirs)| theirs)
        .unwrap_or_else(|| ours.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapped_fields_and_their_insides_are_read_and_others_are_not() {
        let kind = PolicyKind::BackendTrafficPolicy;
        assert!(is_read(kind, "retry.perRetry.backOff.baseInterval"));
        assert!(is_read(kind, "targetRefs[0]"));
        assert!(!is_read(kind, "retry.perRetry.backOff.maxInterval"));
        assert!(!is_read(kind, "retry.numRetriesX"));
        assert!(leads_to_read(kind, "retry.perRetry"));
        assert!(!leads_to_read(kind, "circuitBreaker"));
        assert!(is_read(
            PolicyKind::TrafficPolicy,
            "headerModifiers.request.set"
        ));
        // kgateway's TrafficPolicySpec has no singular targetRef.
        assert!(!is_read(PolicyKind::TrafficPolicy, "targetRef"));
        assert!(!is_read(PolicyKind::TrafficPolicy, "mergeType"));
    }

    #[test]
    fn the_fields_below_a_mapped_parent_name_its_expected_shape() {
        let kind = PolicyKind::BackendTrafficPolicy;
        assert_eq!(
            fields_below(kind, "retry.retryOn"),
            ["httpStatusCodes", "triggers"]
        );
        assert_eq!(fields_below(kind, "timeout"), ["http"]);
        assert_eq!(
            fields_below(PolicyKind::TrafficPolicy, "retry"),
            [
                "perTryTimeout",
                "attempts",
                "statusCodes",
                "retryOn",
                "backoffBaseInterval"
            ]
        );
    }

    #[test]
    fn problems_are_named_with_the_peers_field() {
        assert_eq!(
            their_field(PolicyKind::TrafficPolicy, "spec.retry.codes[1]"),
            "spec.retry.statusCodes[1]"
        );
        assert_eq!(
            their_field(
                PolicyKind::BackendTrafficPolicy,
                "spec.timeouts.backendRequest"
            ),
            "spec.retry.perRetry.timeout"
        );
        assert_eq!(
            their_field(
                PolicyKind::TrafficPolicy,
                "spec.requestHeaderModifier.set[0].name"
            ),
            "spec.headerModifiers.request.set[0].name"
        );
        assert_eq!(
            their_field(PolicyKind::TrafficPolicy, "spec.retry"),
            "spec.retry"
        );
    }
}
