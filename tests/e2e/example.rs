//! The shipped example (examples/shop) in a real Envoy: every kind of
//! setting it declares is enforced. The expectations come from the
//! example's own resolved document, so the example may change freely.
//!
//! These are the tests that also run against a stack somebody else started
//! (docker-compose, or `scripts/demo.sh`): set ATTACHE_E2E_ENVOY_URL,
//! ATTACHE_E2E_BACKEND_URL and optionally ATTACHE_E2E_ADMIN_URL.

use std::time::Duration;

use attache_contract::{Document, RouteEntry};

use crate::harness::backend::{unique_key, Backend};
use crate::harness::client::{self, Reply};
use crate::harness::generator;
use crate::harness::paths;
use crate::harness::probe::Probe;
use crate::harness::stack::{Fixture, Stack};
use crate::timeouts::{assert_not_before, SLACK};

const GATEWAY: &str = "infra/edge";

/// Either a stack this test started or one named by the environment.
enum Target {
    Own(Box<Stack>),
    External { envoy: String, backend: Backend },
}

impl Target {
    /// `GET` through the Gateway's `http` listener.
    fn get(&self, path: &str, headers: &[(&str, &str)]) -> Reply {
        let base = match self {
            Target::Own(stack) => &stack.envoy.listener,
            Target::External { envoy, .. } => envoy,
        };
        client::get(&format!("{}{path}", base.trim_end_matches('/')), headers)
    }

    fn backend(&self) -> &Backend {
        match self {
            Target::Own(stack) => &stack.backend,
            Target::External { backend, .. } => backend,
        }
    }
}

fn example_document() -> Document {
    let value = generator::resolve(&paths::example("shop"), GATEWAY);
    serde_json::from_value(value).expect("attache resolve prints a schema-1 document")
}

fn target() -> Target {
    match std::env::var("ATTACHE_E2E_ENVOY_URL") {
        Ok(envoy) => {
            let backend = std::env::var("ATTACHE_E2E_BACKEND_URL")
                .expect("ATTACHE_E2E_BACKEND_URL must name the test backend when ATTACHE_E2E_ENVOY_URL is set");
            if let Ok(admin) = std::env::var("ATTACHE_E2E_ADMIN_URL") {
                wait_until_live(&admin);
            }
            Target::External {
                envoy,
                backend: Backend::external(&backend),
            }
        }
        Err(_) => Target::Own(Box::new(Stack::start(&Fixture {
            input: paths::example("shop"),
            gateway: GATEWAY,
            listeners: &[LISTENER, "admin"],
            backends: EXAMPLE_BACKENDS,
        }))),
    }
}

/// A stack that is still starting (`docker compose up -d` returns at once)
/// is waited for through Envoy's admin `/ready`.
fn wait_until_live(admin: &str) {
    let url = format!("{}/ready", admin.trim_end_matches('/'));
    let started = std::time::Instant::now();
    while !client::try_get(&url, &[]).is_ok_and(|reply| reply.status == 200) {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "{url} did not answer 200 within 120s"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Every Service the example's routes send to is answered by the test backend.
pub const EXAMPLE_BACKENDS: &[&str] = &["*"];

/// The listener the tests send to: ATTACHE_E2E_ENVOY_URL in compose (8080).
const LISTENER: &str = "http";

/// The first route on `LISTENER` that `pick` accepts and a request can be
/// built for.
fn pick<T>(document: &Document, pick: impl Fn(&RouteEntry) -> Option<T>) -> Option<(Probe, T)> {
    document
        .routes
        .iter()
        .filter(|route| route.listener == LISTENER)
        .find_map(|route| Some((Probe::for_route(route)?, pick(route)?)))
}

#[test]
fn example_request_timeout_is_enforced() {
    let document = example_document();
    let (probe, (request_ms, per_try_ms)) = pick(&document, |r| {
        let timeouts = r.settings.timeouts.as_ref()?;
        let request_ms = timeouts.request_ms.filter(|ms| (1..=10_000).contains(ms))?;
        Some((request_ms, timeouts.backend_request_ms.unwrap_or(0)))
    })
    .expect("the example sets a request timeout on some route");
    // A per-try timeout shorter than the request's ends the first attempt
    // sooner; whatever retries follow, the request timeout bounds the whole.
    let first_cut = if per_try_ms > 0 {
        request_ms.min(per_try_ms)
    } else {
        request_ms
    };
    let target = target();
    let delay = (request_ms + 2000).to_string();
    for client_asks in [None, Some("60000")] {
        let mut extra = vec![("x-backend-delay-ms", delay.as_str())];
        if let Some(ms) = client_asks {
            // A client asking for longer gets no longer.
            extra.push(("x-envoy-upstream-rq-timeout-ms", ms));
        }
        let reply = target.get(&probe.path, &probe.headers_with(&extra));
        assert_eq!(reply.status, 504, "{} {}", probe.path, reply.body);
        assert_not_before(reply.elapsed, Duration::from_millis(first_cut));
        assert!(
            reply.elapsed < Duration::from_millis(request_ms) + SLACK,
            "{:?} is well past the {request_ms}ms request timeout",
            reply.elapsed
        );
    }
}

#[test]
fn example_retries_are_enforced() {
    let document = example_document();
    let (probe, (attempts, code)) = pick(&document, |r| {
        let retry = r.settings.retry.as_ref()?;
        let per_try = r
            .settings
            .timeouts
            .as_ref()
            .and_then(|t| t.backend_request_ms);
        let code = *retry.codes.as_ref()?.first()?;
        Some((
            retry
                .attempts
                .filter(|a| (1..=5).contains(a) && per_try != Some(0))?,
            code,
        ))
    })
    .expect("the example sets retries with codes on some route");
    let target = target();
    let key = unique_key("example-retry");
    let (fail, status) = (attempts.to_string(), code.to_string());
    let reply = target.get(
        &probe.path,
        &probe.headers_with(&[
            ("x-backend-key", &key),
            ("x-backend-fail-times", &fail),
            ("x-backend-status", &status),
        ]),
    );
    assert_eq!(reply.status, 200, "{} {}", probe.path, reply.body);
    assert_eq!(target.backend().attempts(&key), u64::from(attempts) + 1);
}

#[test]
fn example_header_changes_are_enforced() {
    let document = example_document();
    let (probe, (name, value)) = pick(&document, |r| {
        let changes = r.settings.request_headers.as_ref()?;
        let set = changes.set.first()?;
        // A header also added would arrive twice; pick a clean one.
        (!changes.add.iter().any(|a| a.name == set.name))
            .then(|| (set.name.clone(), set.value.clone()))
    })
    .expect("the example sets a request header on some route");
    let target = target();
    let reply = target.get(&probe.path, &probe.headers_with(&[(&name, "from-client")]));
    assert_eq!(reply.status, 200, "{} {}", probe.path, reply.body);
    assert_eq!(reply.echoed_header(&name), Some(vec![value]));

    if let Some((probe, (name, value))) = pick(&document, |r| {
        let set = r.settings.response_headers.as_ref()?.set.first()?;
        Some((set.name.clone(), set.value.clone()))
    }) {
        let reply = target.get(&probe.path, &probe.headers_with(&[]));
        assert_eq!(
            reply.header_values(&name),
            [value.as_str()],
            "{}",
            probe.path
        );
    }
}
