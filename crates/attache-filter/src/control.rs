//! Envoy router control headers: the request headers through which the
//! router lets a request change its own timeout and retry behaviour. The
//! filter enforces policy by setting them, and (by default) strips any a
//! client sent so that clients cannot lengthen or multiply what policy says.

use attache_contract::{safety, Retry, Timeouts};

use crate::ops::HeaderOp;

pub const MAX_RETRIES: &str = "x-envoy-max-retries";
pub const RETRY_ON: &str = "x-envoy-retry-on";
pub const RETRY_GRPC_ON: &str = "x-envoy-retry-grpc-on";
pub const RETRIABLE_STATUS_CODES: &str = "x-envoy-retriable-status-codes";
pub const RQ_TIMEOUT_MS: &str = "x-envoy-upstream-rq-timeout-ms";
pub const PER_TRY_TIMEOUT_MS: &str = "x-envoy-upstream-rq-per-try-timeout-ms";

/// Every `x-envoy-*` request header that Envoy 1.40 acts on for a client it
/// trusts, and that Envoy does not itself set before this filter runs.
/// docs/filter.md lists each with what Envoy does with it, and why the
/// filter need not remove most of them itself for external clients.
pub const CLIENT_CONTROL_HEADERS: [&str; 15] = [
    // The router's retry policy (source/common/router/retry_state_impl.cc).
    MAX_RETRIES,
    RETRY_ON,
    RETRY_GRPC_ON,
    RETRIABLE_STATUS_CODES,
    "x-envoy-retriable-header-names",
    // The router's timeouts (source/common/router/router.cc,
    // FilterUtility::finalTimeout).
    RQ_TIMEOUT_MS,
    PER_TRY_TIMEOUT_MS,
    "x-envoy-expected-rq-timeout-ms",
    "x-envoy-upstream-stream-duration-ms",
    "x-envoy-upstream-rq-timeout-alt-response",
    // Hedging (router.cc, FilterUtility::finalHedgingParams).
    "x-envoy-hedge-on-per-try-timeout",
    // Per-request stat names: every distinct value creates new stats that are
    // never freed (router.cc, alt_stat_prefix_).
    "x-envoy-upstream-alt-stat-name",
    // The upstream host of an ORIGINAL_DST cluster with use_http_header
    // (source/extensions/clusters/original_dst).
    "x-envoy-original-dst-host",
    // Tracing: forces sampling in every Envoy on the way, and renames spans
    // (conn_manager_utility.cc mutateTracingRequestHeader; the decorator).
    "x-envoy-force-trace",
    "x-envoy-decorator-operation",
];

/// Set by Envoy's connection manager on a request it takes for internal,
/// and only then: `ConnectionManagerUtility::mutateRequestHeaders`
/// (source/common/http/conn_manager_utility.cc) removes any client value
/// first, then either sets it (internal) or calls `cleanInternalHeaders`,
/// which removes the other twelve control headers (external).
pub const ENVOY_INTERNAL: &str = "x-envoy-internal";

/// The control headers `cleanInternalHeaders` leaves in place for an
/// external request: the router honours the stream duration, the
/// ORIGINAL_DST cluster the destination host, and the decorator header is
/// removed only when the connection manager uses the remote address.
pub const NOT_STRIPPED_BY_ENVOY: [&str; 3] = [
    "x-envoy-upstream-stream-duration-ms",
    "x-envoy-original-dst-host",
    "x-envoy-decorator-operation",
];

/// Envoy's trigger that makes `x-envoy-retriable-status-codes` count.
const RETRIABLE_STATUS_CODES_TRIGGER: &str = "retriable-status-codes";

/// The control headers that carry `timeouts`. `0` reaches Envoy as `0`,
/// which Envoy reads as "no timeout", matching the contract.
///
/// Every field is named (no `..`): a new timeout does not compile until it
/// is given its header here or declared carried elsewhere.
pub fn timeout_ops(timeouts: &Timeouts) -> Vec<HeaderOp> {
    let Timeouts {
        request_ms,
        backend_request_ms,
    } = timeouts;
    let mut ops = Vec::new();
    if let Some(ms) = request_ms {
        ops.push(HeaderOp::set(RQ_TIMEOUT_MS, &ms.to_string()));
    }
    if let Some(ms) = backend_request_ms {
        ops.push(HeaderOp::set(PER_TRY_TIMEOUT_MS, &ms.to_string()));
    }
    ops
}

/// The control headers that carry `retry`. `backoffMs` has no request header
/// in Envoy; it travels in the rendered route's retry policy instead
/// (attache-render `resources::envoy_route`).
///
/// Every field is named (no `..`), as in [`timeout_ops`].
pub fn retry_ops(retry: &Retry) -> Vec<HeaderOp> {
    let Retry {
        attempts,
        codes,
        backoff_ms: _carried_by_the_rendered_route,
        retry_on,
    } = retry;
    let mut ops = Vec::new();
    if let Some(attempts) = attempts {
        ops.push(HeaderOp::set(MAX_RETRIES, &attempts.to_string()));
    }
    let codes = codes.as_deref().unwrap_or_default();
    let mut triggers: Vec<&str> = Vec::new();
    let mut grpc_triggers: Vec<&str> = Vec::new();
    for trigger in retry_on.iter().flatten() {
        // Envoy reads the gRPC triggers from their own header only.
        let list = if safety::is_grpc_retry_trigger(trigger) {
            &mut grpc_triggers
        } else {
            &mut triggers
        };
        if !list.contains(&trigger.as_str()) {
            list.push(trigger);
        }
    }
    if !codes.is_empty() && !triggers.contains(&RETRIABLE_STATUS_CODES_TRIGGER) {
        triggers.push(RETRIABLE_STATUS_CODES_TRIGGER);
    }
    if !triggers.is_empty() {
        ops.push(HeaderOp::set(RETRY_ON, &triggers.join(",")));
    }
    if !grpc_triggers.is_empty() {
        ops.push(HeaderOp::set(RETRY_GRPC_ON, &grpc_triggers.join(",")));
    }
    if !codes.is_empty() {
        let joined: Vec<String> = codes.iter().map(u16::to_string).collect();
        ops.push(HeaderOp::set(RETRIABLE_STATUS_CODES, &joined.join(",")));
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_headers_envoy_leaves_are_control_headers() {
        for name in NOT_STRIPPED_BY_ENVOY {
            assert!(CLIENT_CONTROL_HEADERS.contains(&name), "{name}");
        }
        assert!(!CLIENT_CONTROL_HEADERS.contains(&ENVOY_INTERNAL));
    }

    #[test]
    fn timeouts_render_milliseconds_and_zero_stays_zero() {
        let ops = timeout_ops(&Timeouts {
            request_ms: Some(0),
            backend_request_ms: Some(250),
        });
        assert_eq!(
            ops,
            vec![
                HeaderOp::set(RQ_TIMEOUT_MS, "0"),
                HeaderOp::set(PER_TRY_TIMEOUT_MS, "250")
            ]
        );
    }

    #[test]
    fn codes_add_the_status_code_trigger_once() {
        let retry = Retry {
            attempts: Some(3),
            codes: Some(vec![502, 503]),
            backoff_ms: Some(100),
            retry_on: Some(vec!["connect-failure".into(), "connect-failure".into()]),
        };
        assert_eq!(
            retry_ops(&retry),
            vec![
                HeaderOp::set(MAX_RETRIES, "3"),
                HeaderOp::set(RETRY_ON, "connect-failure,retriable-status-codes"),
                HeaderOp::set(RETRIABLE_STATUS_CODES, "502,503"),
            ]
        );
        let explicit = Retry {
            codes: Some(vec![500]),
            retry_on: Some(vec!["retriable-status-codes".into()]),
            ..Retry::default()
        };
        assert_eq!(
            retry_ops(&explicit),
            vec![
                HeaderOp::set(RETRY_ON, "retriable-status-codes"),
                HeaderOp::set(RETRIABLE_STATUS_CODES, "500"),
            ]
        );
    }

    #[test]
    fn grpc_triggers_go_in_their_own_header() {
        let retry = Retry {
            attempts: Some(2),
            retry_on: Some(vec![
                "connect-failure".into(),
                "unavailable".into(),
                "reset".into(),
                "resource-exhausted".into(),
            ]),
            ..Retry::default()
        };
        assert_eq!(
            retry_ops(&retry),
            vec![
                HeaderOp::set(MAX_RETRIES, "2"),
                HeaderOp::set(RETRY_ON, "connect-failure,reset"),
                HeaderOp::set(RETRY_GRPC_ON, "unavailable,resource-exhausted"),
            ]
        );
    }

    #[test]
    fn attempts_alone_only_caps_retries() {
        let retry = Retry {
            attempts: Some(0),
            ..Retry::default()
        };
        assert_eq!(retry_ops(&retry), vec![HeaderOp::set(MAX_RETRIES, "0")]);
    }
}
