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

/// What sets one peer kind apart, as data: the reader (`parse/peers.rs`)
/// and the fold (`fold/peer_gate.rs`) read these fields, never the kind.
#[derive(Debug)]
pub struct Peer {
    pub kind: PolicyKind,
    /// The project, as messages name it.
    pub project: &'static str,
    /// The settings table.
    pub mappings: &'static [Mapping],
    /// Fields read that are not settings: what the policy targets and how
    /// it merges.
    pub read: &'static [&'static str],
    /// `spec.mergeType` is read (Envoy Gateway); elsewhere it is unmapped.
    pub merge_type: bool,
    /// The most specific policy of the kind replaces the less specific ones
    /// whole, one per target (Envoy Gateway's precedence, fold/peer_gate.rs).
    pub replaces_whole: bool,
    /// What the API server stores in `retry.numRetries` when it is absent.
    pub stored_num_retries: Option<u64>,
    /// `targetSelectors[].sectionName` exists (kgateway).
    pub selector_section_name: bool,
    /// `targetSelectors[].namespaces` exists (Envoy Gateway; not enforced).
    pub selector_namespaces: bool,
    /// The group a selector without one selects (None: group is required).
    pub selector_default_group: Option<&'static str>,
}

/// Envoy Gateway's API server stores 2 in every BackendTrafficPolicy that
/// has a `retry`: that is the object Envoy Gateway merges and enforces.
const ENVOY_GATEWAY_NUM_RETRIES: u64 = 2;

pub const PEERS: &[Peer] = &[
    Peer {
        kind: PolicyKind::TrafficPolicy,
        project: "kgateway",
        mappings: TRAFFIC_POLICY,
        read: &["targetRefs", "targetSelectors"],
        merge_type: false,
        replaces_whole: false,
        stored_num_retries: None,
        selector_section_name: true,
        selector_namespaces: false,
        selector_default_group: None,
    },
    Peer {
        kind: PolicyKind::BackendTrafficPolicy,
        project: "Envoy Gateway",
        mappings: BACKEND_TRAFFIC_POLICY,
        read: &["targetRef", "targetRefs", "targetSelectors", "mergeType"],
        merge_type: true,
        replaces_whole: true,
        stored_num_retries: Some(ENVOY_GATEWAY_NUM_RETRIES),
        selector_section_name: false,
        selector_namespaces: true,
        selector_default_group: Some(super::route::GATEWAY_GROUP),
    },
];

/// The row of a peer kind; None for the project's own kinds.
pub fn peer(kind: PolicyKind) -> Option<&'static Peer> {
    PEERS.iter().find(|p| p.kind == kind)
}

/// The peer's fields that are read but are not settings.
pub fn read_fields(kind: PolicyKind) -> &'static [&'static str] {
    peer(kind).map_or(&[], |p| p.read)
}

/// The settings table of a peer kind (empty for the project's own kinds).
pub fn mappings(kind: PolicyKind) -> &'static [Mapping] {
    peer(kind).map_or(&[], |p| p.mappings)
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
