//! GRPCRoute through real Envoy, with a real gRPC client and server (grpcio):
//! the policies on a GRPCRoute rule reach real calls (docs/semantics.md,
//! "GRPCRoute"). Fixture: tests/fixtures/e2e/grpc.

use std::time::Duration;

use serde_json::json;

use crate::harness::grpc::{call, Call, GrpcServer};
use crate::harness::scratch::Scratch;
use crate::harness::stack::{Fixture, Stack};
use crate::timeouts::{assert_about, assert_not_before};

/// Envoy and the gRPC server; the server is dropped last.
struct GrpcStack {
    stack: Stack,
    _server: GrpcServer,
}

impl GrpcStack {
    fn start() -> GrpcStack {
        let scratch = Scratch::new("grpc");
        let server = GrpcServer::start(scratch.path());
        // The fixture's backendRef shop/cart goes to the gRPC server.
        let backend: &'static str =
            Box::leak(format!("shop/cart={}", server.addr).into_boxed_str());
        let mut fixture = Fixture::named("grpc", "infra/edge", Box::leak(Box::new([backend])));
        fixture.listeners = &["http"];
        let ecds = scratch.ecds_file();
        crate::harness::generator::render_ecds(
            &fixture.input,
            fixture.gateway,
            &crate::harness::paths::wasm(),
            &ecds,
        );
        let input = fixture.input.clone();
        let stack = Stack::launch(&fixture, &input, ecds, scratch);
        GrpcStack {
            stack,
            _server: server,
        }
    }

    fn target(&self) -> String {
        self.stack
            .envoy
            .listener
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_owned()
    }

    fn call(&self, method: &str, request: serde_json::Value, metadata: &[(&str, &str)]) -> Call {
        call(&self.target(), method, &request, metadata, None)
    }
}

const ECHO: &str = "/attache.test.Echo/Echo";

#[test]
fn a_unary_call_gets_its_deadline_from_the_policy_request_timeout() {
    let s = GrpcStack::start();
    // The policy on rule `echo` says 1s: a 400ms answer is not cut short...
    let quick = s.call(ECHO, json!({"sleepMs": 400}), &[]);
    assert_eq!(quick.code, "OK", "{quick:?}");
    // ...and a 3s one ends in DEADLINE_EXCEEDED at 1s, not before, as a gRPC
    // deadline does (not Envoy's UNAVAILABLE for a 504).
    let slow = s.call(ECHO, json!({"sleepMs": 3000}), &[]);
    assert_eq!(slow.code, "DEADLINE_EXCEEDED", "{slow:?}");
    assert_eq!(
        slow.details, "upstream request timeout",
        "Envoy's timer, not the server's"
    );
    assert_about(slow.elapsed, Duration::from_secs(1));
}

#[test]
fn a_clients_grpc_timeout_cannot_lengthen_the_policy_timeout() {
    let s = GrpcStack::start();
    // A 10s client deadline (grpc-timeout: 10S) and an Envoy timeout header
    // of its own: the policy's 1s still ends the call.
    let c = call(
        &s.target(),
        ECHO,
        &json!({"sleepMs": 3000}),
        &[("x-envoy-upstream-rq-timeout-ms", "9000")],
        Some(Duration::from_secs(10)),
    );
    assert_eq!(c.code, "DEADLINE_EXCEEDED", "{c:?}");
    assert_about(c.elapsed, Duration::from_secs(1));
    // A shorter client deadline is the client's own business, and holds.
    let short = call(
        &s.target(),
        ECHO,
        &json!({"sleepMs": 3000}),
        &[],
        Some(Duration::from_millis(300)),
    );
    assert_eq!(short.code, "DEADLINE_EXCEEDED", "{short:?}");
    assert_not_before(short.elapsed, Duration::from_millis(300));
    assert!(short.elapsed < Duration::from_millis(900), "{short:?}");
}

#[test]
fn unavailable_is_retried_as_the_policy_says_counted_at_the_server() {
    let s = GrpcStack::start();
    let count = |key: &str| {
        let c = s.call("/attache.test.Echo/Count", json!({"key": key}), &[]);
        assert_eq!(c.code, "OK", "{c:?}");
        c.response["calls"].as_u64().unwrap()
    };
    // Two failures, two retries allowed: the third attempt answers.
    let ok = s.call(
        "/attache.test.Echo/Flaky",
        json!({"key": "two", "failures": 2}),
        &[],
    );
    assert_eq!(ok.code, "OK", "{ok:?}");
    assert_eq!(ok.response["attempt"], 3);
    assert_eq!(count("two"), 3);
    // Five failures: three attempts, then the client sees UNAVAILABLE.
    let failed = s.call(
        "/attache.test.Echo/Flaky",
        json!({"key": "five", "failures": 5}),
        &[],
    );
    assert_eq!(failed.code, "UNAVAILABLE", "{failed:?}");
    assert_eq!(count("five"), 3);
    // The same failure on the service-wide rule, which has no retry policy
    // (and ranks after the exact methods): one attempt only.
    let once = s.call(
        "/attache.test.Echo/Unretried",
        json!({"key": "none", "failures": 1}),
        &[],
    );
    assert_eq!(once.code, "UNAVAILABLE", "{once:?}");
    assert_eq!(count("none"), 1);
}

#[test]
fn a_policy_header_reaches_the_server_as_metadata() {
    let s = GrpcStack::start();
    let c = s.call(ECHO, json!({}), &[("x-client", "1")]);
    assert_eq!(c.code, "OK", "{c:?}");
    let metadata = &c.response["metadata"];
    assert_eq!(metadata["x-policy"], "from-policy", "{metadata}");
    // The rule's own RequestHeaderModifier too, and the client's metadata.
    assert_eq!(metadata["x-route"], "grpc-echo", "{metadata}");
    assert_eq!(metadata["x-client"], "1", "{metadata}");
}
