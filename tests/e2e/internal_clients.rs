//! Router control headers under every trust setting of Envoy's connection
//! manager (issue 24; docs/filter.md, "Who strips what").
//!
//! The filter removes all control headers itself only where Envoy marks the
//! request `x-envoy-internal`; elsewhere it relies on Envoy's own
//! `cleanInternalHeaders` and removes just the three headers that leaves.
//! These tests run the basics fixture with its rendered connection manager
//! changed four ways, and check for each that the client is what the test
//! means (internal or external, seen at the backend) and that no control
//! header a client sends steers the router: attempts counted at the backend,
//! status codes, Envoy's stats, and the backend's echo.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness::backend::{unique_key, Backend};
use crate::harness::client::{self, Reply};
use crate::harness::envoy::Envoy;
use crate::harness::generator::{self, RenderEnvoy};
use crate::harness::paths;
use crate::harness::scratch::Scratch;
use crate::timeouts::{basics, SLACK};

/// How Envoy's connection manager is set up around the filter.
#[derive(Debug, Clone, Copy)]
enum Trust {
    /// `use_remote_address: true` and 127.0.0.0/8 internal: the test client
    /// (on loopback) is internal, and Envoy strips nothing.
    InternalPeer,
    /// `use_remote_address: false` and 127.0.0.0/8 internal: a client whose
    /// X-Forwarded-For holds one loopback address is internal.
    InternalByForwardedFor,
    /// `use_remote_address: false`, no internal range: external, but not an
    /// edge request, so Envoy keeps `x-envoy-decorator-operation`.
    ExternalNotEdge,
    /// Envoy's defaults: no `use_remote_address`, no XFF hops, no
    /// `internal_address_config`. Whether Envoy takes a loopback client for
    /// internal then is Envoy's business (it changed across versions); the
    /// filter must hold either way, and the test prints what Envoy decided.
    EnvoyDefaults,
}

impl Trust {
    fn edit(self, hcm: &mut Value) {
        let loopback = json!({"cidr_ranges": [
            {"address_prefix": "127.0.0.0", "prefix_len": 8},
            {"address_prefix": "::1", "prefix_len": 128}
        ]});
        match self {
            Trust::InternalPeer => hcm["internal_address_config"] = loopback,
            Trust::InternalByForwardedFor => {
                hcm["use_remote_address"] = json!(false);
                hcm["internal_address_config"] = loopback;
            }
            Trust::ExternalNotEdge => hcm["use_remote_address"] = json!(false),
            Trust::EnvoyDefaults => {
                if let Some(map) = hcm.as_object_mut() {
                    for key in [
                        "use_remote_address",
                        "xff_num_trusted_hops",
                        "internal_address_config",
                    ] {
                        map.remove(key);
                    }
                }
            }
        }
    }

    /// Whether Envoy must mark the test's requests internal; `None`: Envoy's
    /// default decides.
    fn internal(self) -> Option<bool> {
        match self {
            Trust::InternalPeer | Trust::InternalByForwardedFor => Some(true),
            Trust::ExternalNotEdge => Some(false),
            Trust::EnvoyDefaults => None,
        }
    }

    /// What every request of this test adds so the mode applies.
    fn base_headers(self) -> Vec<(&'static str, &'static str)> {
        match self {
            Trust::InternalByForwardedFor => vec![("x-forwarded-for", "127.0.0.1")],
            // A client's forged mark: Envoy removes it before anything else.
            Trust::ExternalNotEdge => vec![("x-envoy-internal", "true")],
            Trust::InternalPeer | Trust::EnvoyDefaults => Vec::new(),
        }
    }
}

/// Applies `edit` to every HTTP connection manager in `value`.
fn edit_hcms(value: &mut Value, trust: Trust) -> usize {
    match value {
        Value::Object(map) if map.contains_key("use_remote_address") => {
            trust.edit(value);
            1
        }
        Value::Object(map) => map.values_mut().map(|v| edit_hcms(v, trust)).sum(),
        Value::Array(items) => items.iter_mut().map(|v| edit_hcms(v, trust)).sum(),
        _ => 0,
    }
}

/// The basics fixture's data plane with its connection manager edited.
struct TrustStack {
    envoy: Envoy,
    backend: Backend,
    trust: Trust,
    _scratch: Scratch,
}

impl TrustStack {
    fn start(trust: Trust) -> TrustStack {
        let fixture = basics();
        let scratch = Scratch::new(&format!("trust-{trust:?}"));
        let ecds = scratch.ecds_file();
        generator::render_ecds(&fixture.input, fixture.gateway, &paths::wasm(), &ecds);
        let backend = Backend::start(scratch.path());
        let mut last_log = String::new();
        for _ in 0..3 {
            let bootstrap = scratch.join("envoy.yaml");
            let port = paths::free_port();
            let admin_port = paths::free_port();
            generator::render_envoy(&RenderEnvoy {
                input: &fixture.input,
                gateway: fixture.gateway,
                ecds: &ecds,
                wasm: &paths::wasm(),
                backends: vec![("shop/echo".to_owned(), backend.addr.clone())],
                listener_ports: vec![("http".to_owned(), port)],
                admin_port,
                out: &bootstrap,
            });
            rewrite(&bootstrap, trust);
            match Envoy::try_start(&bootstrap, admin_port, port, scratch.path()) {
                Ok(envoy) => {
                    return TrustStack {
                        envoy,
                        backend,
                        trust,
                        _scratch: scratch,
                    }
                }
                Err(log) => last_log = log,
            }
        }
        panic!("envoy exited during start-up 3 times; last log:\n{last_log}");
    }

    fn get(&self, path: &str, extra: &[(&str, &str)]) -> Reply {
        let mut headers = self.trust.base_headers();
        headers.extend_from_slice(extra);
        client::get(&format!("{}{path}", self.envoy.listener), &headers)
    }
}

fn rewrite(bootstrap: &Path, trust: Trust) {
    let text = std::fs::read_to_string(bootstrap).unwrap();
    let mut value: Value = serde_yaml_ng::from_str(&text).unwrap();
    assert!(
        edit_hcms(&mut value, trust) > 0,
        "no connection manager found"
    );
    std::fs::write(bootstrap, serde_json::to_string_pretty(&value).unwrap()).unwrap();
}

/// Every router control header a client might send: the filter's list,
/// written out again here so that the tests do not take it from the code
/// under test.
pub const CONTROL_HEADERS: [&str; 15] = [
    "x-envoy-max-retries",
    "x-envoy-retry-on",
    "x-envoy-retry-grpc-on",
    "x-envoy-retriable-status-codes",
    "x-envoy-retriable-header-names",
    "x-envoy-upstream-rq-timeout-ms",
    "x-envoy-upstream-rq-per-try-timeout-ms",
    "x-envoy-expected-rq-timeout-ms",
    "x-envoy-upstream-stream-duration-ms",
    "x-envoy-upstream-rq-timeout-alt-response",
    "x-envoy-hedge-on-per-try-timeout",
    "x-envoy-upstream-alt-stat-name",
    "x-envoy-original-dst-host",
    "x-envoy-force-trace",
    "x-envoy-decorator-operation",
];

/// Everything the hostile-client tests check, under one trust setting.
fn no_control_header_steers_the_router(trust: Trust) {
    let stack = TrustStack::start(trust);

    // The mode is what the test means: Envoy marked the request internal,
    // or (external) removed the client's forged mark.
    let reply = stack.get("/plain", &[]);
    assert_eq!(reply.status, 200, "{}", reply.body);
    let mark = reply.echoed_header("x-envoy-internal");
    match trust.internal() {
        Some(true) => assert_eq!(mark, Some(vec!["true".to_owned()]), "{trust:?}"),
        Some(false) => assert_eq!(mark, None, "{trust:?}: a forged mark survived"),
        None => println!("{trust:?}: Envoy marked a loopback client internal: {mark:?}"),
    }

    // Each control header alone, with the client's value: never at the
    // backend as sent.
    for name in CONTROL_HEADERS {
        let reply = stack.get("/plain", &[(name, "777")]);
        assert_eq!(reply.status, 200, "{trust:?} {name}: {}", reply.body);
        let echoed = reply.echoed_header(name).unwrap_or_default();
        assert!(
            !echoed.iter().any(|v| v == "777"),
            "{trust:?}: {name} reached the backend as sent: {echoed:?}"
        );
    }

    // Retries: the client can neither switch them on nor multiply them
    // (attempts counted by the backend, no timing involved).
    let key = unique_key("no-retries");
    let reply = stack.get(
        "/plain",
        &[
            ("x-envoy-max-retries", "5"),
            ("x-envoy-retry-on", "5xx,retriable-status-codes"),
            ("x-envoy-retriable-status-codes", "503"),
            ("x-envoy-retry-grpc-on", "unavailable"),
            ("x-envoy-retriable-header-names", "x-backend-key"),
            ("x-backend-key", &key),
            ("x-backend-fail-times", "3"),
        ],
    );
    assert_eq!(reply.status, 503, "{trust:?}: {}", reply.body);
    assert_eq!(stack.backend.attempts(&key), 1, "{trust:?}: retried");
    let key = unique_key("more-retries");
    let reply = stack.get(
        "/retry",
        &[
            ("x-envoy-max-retries", "10"),
            ("x-envoy-retry-on", "5xx"),
            ("x-envoy-hedge-on-per-try-timeout", "true"),
            ("x-backend-key", &key),
            ("x-backend-fail-times", "9"),
        ],
    );
    assert_eq!(reply.status, 503, "{trust:?}: {}", reply.body);
    assert_eq!(
        stack.backend.attempts(&key),
        3,
        "{trust:?}: the policy's 2 retries"
    );

    // Timeouts: a 1 ms timeout, per-try timeout or stream duration against
    // a 300 ms backend would answer 504/408 if obeyed; a 204 alt response
    // would replace the policy's 504.
    for name in [
        "x-envoy-upstream-rq-timeout-ms",
        "x-envoy-upstream-rq-per-try-timeout-ms",
        "x-envoy-upstream-stream-duration-ms",
    ] {
        let reply = stack.get("/plain", &[(name, "1"), ("x-backend-delay-ms", "300")]);
        assert_eq!(
            reply.status, 200,
            "{trust:?}: {name} obeyed: {}",
            reply.body
        );
    }
    let reply = stack.get(
        "/timeout",
        &[
            ("x-envoy-upstream-rq-timeout-alt-response", "204"),
            ("x-envoy-upstream-rq-timeout-ms", "10000"),
            ("x-backend-delay-ms", "2500"),
        ],
    );
    assert_eq!(reply.status, 504, "{trust:?}: {}", reply.body);
    assert!(
        reply.elapsed < Duration::from_millis(500) + SLACK,
        "{trust:?}: the client lengthened the timeout: {:?}",
        reply.elapsed
    );

    // Stat names: distinct alt stat names create no stats.
    let before = stats_count(&stack.envoy);
    let started = Instant::now();
    for i in 0..50 {
        let name = format!("tenant-{i}");
        let reply = stack.get("/plain", &[("x-envoy-upstream-alt-stat-name", &name)]);
        assert_eq!(reply.status, 200, "{}", reply.body);
    }
    let after = stats_count(&stack.envoy);
    assert!(
        after < before + 10,
        "{trust:?}: stats grew from {before} to {after} in {:?}",
        started.elapsed()
    );
}

fn stats_count(envoy: &Envoy) -> usize {
    client::get(&format!("{}/stats", envoy.admin), &[])
        .body
        .lines()
        .count()
}

#[test]
fn internal_peer_cannot_steer_the_router() {
    no_control_header_steers_the_router(Trust::InternalPeer);
}

#[test]
fn internal_by_forwarded_for_cannot_steer_the_router() {
    no_control_header_steers_the_router(Trust::InternalByForwardedFor);
}

#[test]
fn external_client_behind_a_trusted_hop_cannot_steer_the_router() {
    no_control_header_steers_the_router(Trust::ExternalNotEdge);
}

#[test]
fn client_of_a_connection_manager_with_envoys_defaults_cannot_steer_the_router() {
    no_control_header_steers_the_router(Trust::EnvoyDefaults);
}
