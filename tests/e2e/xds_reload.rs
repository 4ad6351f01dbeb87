//! The file-based xDS layout under load: `attache watch --xds-dir` adds,
//! changes and deletes HTTPRoutes, backends, matches and back-offs in a
//! running Envoy (same process) while 8 clients keep sending to a route
//! that does not change, and none of their requests fails. Envoy keeping
//! the last good routes when an RDS file is bad, and the watch refusing to
//! write a route table Envoy would refuse, are shown too (docs/envoy.md,
//! "File-based xDS").

use std::thread;
use std::time::{Duration, Instant};

use crate::harness::backend::{unique_key, Backend};
use crate::harness::client::Reply;
use crate::harness::generator::copy_dir;
use crate::harness::load::{Load, Target};
use crate::harness::paths;
use crate::harness::scratch::Scratch;
use crate::harness::xds::XdsStack;

/// What the issue asks of a new and of a deleted route.
const ROUTE_WITHIN: Duration = Duration::from_secs(2);
/// For the other changes: only "without restart" is asked; this bounds a hang.
const CHANGE_WITHIN: Duration = Duration::from_secs(15);
const LOAD_THREADS: usize = 8;
const LOAD_CAP: u64 = 200_000;
const LOAD_WITHIN: Duration = Duration::from_secs(180);

/// clusterIP 127.0.0.1 and no EndpointSlice: Envoy dials the Service
/// address on the backendRef's port, so a backendRef's port is the port of
/// the test backend it reaches (docs/envoy.md, "Clusters").
fn services() -> String {
    ["steady", "moving"]
        .iter()
        .map(|name| {
            format!(
                "apiVersion: v1\nkind: Service\nmetadata: {{name: {name}, namespace: shop}}\nspec: {{clusterIP: 127.0.0.1}}\n"
            )
        })
        .collect::<Vec<_>>()
        .join("---\n")
}

fn route(name: &str, host: &str, prefix: &str, service: &str, port: &str) -> String {
    format!(
        "apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: {name}, namespace: shop}}
spec:
  parentRefs: [{{name: edge, namespace: infra}}]
  hostnames: [{host}]
  rules:
    - matches: [{{path: {{type: PathPrefix, value: {prefix}}}}}]
      backendRefs: [{{name: {service}, port: {port}}}]
"
    )
}

/// A RoutePolicy on route `name` setting `x-{name}: yes`, with a retry
/// back-off when given.
fn policy(name: &str, backoff: Option<&str>) -> String {
    let retry = backoff.map_or_else(String::new, |b| {
        format!("    retry: {{attempts: 3, codes: [503], backoff: {b}}}\n")
    });
    format!(
        "apiVersion: policy.attache.dev/v1alpha1
kind: RoutePolicy
metadata: {{name: {name}, namespace: shop}}
spec:
  targetRefs: [{{group: gateway.networking.k8s.io, kind: HTTPRoute, name: {name}}}]
  defaults:
    requestHeaderModifier:
      set: [{{name: x-{name}, value: \"yes\"}}]
{retry}"
    )
}

fn port_of(backend: &Backend) -> String {
    backend.addr.rsplit(':').next().unwrap().to_owned()
}

/// A steady answer: 200, and its policy's header reached the backend.
fn steady_ok(reply: &Reply) -> Option<String> {
    if reply.status != 200 {
        return Some(format!("status {}: {}", reply.status, reply.body));
    }
    match reply.echoed_header("x-steady") {
        Some(values) if values == ["yes"] => None,
        other => Some(format!("x-steady {other:?}")),
    }
}

/// Polls `probe` until it returns `Some`, at most `within`; the time taken.
/// The bound is checked after every probe, the one that succeeds included:
/// a probe sent in time whose answer arrives late is late.
fn until<T>(within: Duration, what: &str, mut probe: impl FnMut() -> Option<T>) -> (T, Duration) {
    let started = Instant::now();
    loop {
        let value = probe();
        let took = started.elapsed();
        assert!(
            took <= within,
            "{what}: took {took:?}, not within {within:?} (succeeded: {})",
            value.is_some()
        );
        if let Some(value) = value {
            return (value, took);
        }
        thread::sleep(Duration::from_millis(10));
    }
}

#[test]
#[should_panic(expected = "took")]
fn a_probe_that_succeeds_after_the_bound_fails_the_bound() {
    until(Duration::from_millis(50), "a late success", || {
        thread::sleep(Duration::from_millis(80));
        Some(())
    });
}

fn start(label: &str) -> XdsStack {
    let scratch = Scratch::new(label);
    let input = copy_dir(&paths::fixture("xds"), &scratch.join("input"));
    let (a, b) = (Backend::start(scratch.path()), {
        let dir = scratch.join("b");
        std::fs::create_dir_all(&dir).unwrap();
        Backend::start(&dir)
    });
    let pa = port_of(&a);
    std::fs::write(input.join("10-services.yaml"), services()).unwrap();
    std::fs::write(
        input.join("20-steady.yaml"),
        route("steady", "steady.example.com", "/", "steady", &pa)
            + "---\n"
            + &policy("steady", None),
    )
    .unwrap();
    std::fs::write(
        input.join("30-moving.yaml"),
        route("moving", "moving.example.com", "/v1", "moving", &pa)
            + "---\n"
            + &policy("moving", Some("1ms")),
    )
    .unwrap();
    XdsStack::start(scratch, input, "infra/edge", "http", vec![a, b])
}

#[test]
fn routes_backends_matches_and_backoffs_change_without_restart_and_without_failures() {
    let stack = start("xds-reload");
    let (pa, pb) = (port_of(&stack.backends[0]), port_of(&stack.backends[1]));
    let envoy_pid = stack.envoy.pid();
    assert_eq!(steady_ok(&stack.get("steady.example.com", "/", &[])), None);
    let load = Load::start(
        LOAD_THREADS,
        vec![Target {
            url: format!("{}/", stack.envoy.listener),
            headers: vec![("host".into(), "steady.example.com".into())],
            judge: steady_ok,
        }],
        LOAD_CAP,
        LOAD_WITHIN,
    );

    // A new HTTPRoute with its policy: served within 2 s, and the very
    // first answer that is not a 404 already carries the policy's header.
    stack.put_manifest(
        "40-fresh.yaml",
        &(route("fresh", "fresh.example.com", "/fresh", "steady", &pa)
            + "---\n"
            + &policy("fresh", None)),
    );
    let (first, took) = until(ROUTE_WITHIN, "the new route", || {
        let reply = stack.get("fresh.example.com", "/fresh", &[]);
        (reply.status != 404).then_some(reply)
    });
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(first.echoed_header("x-fresh"), Some(vec!["yes".to_owned()]));
    eprintln!("xds: new route served after {} ms", took.as_millis());

    // A changed backend port: the route's requests reach the other backend.
    stack.put_manifest(
        "30-moving.yaml",
        &(route("moving", "moving.example.com", "/v1", "moving", &pb)
            + "---\n"
            + &policy("moving", Some("1ms"))),
    );
    let (_, took) = until(CHANGE_WITHIN, "the new backend port", || {
        let key = unique_key("port");
        let reply = stack.get("moving.example.com", "/v1", &[("x-backend-key", &key)]);
        (reply.status == 200 && stack.backends[1].attempts(&key) == 1).then_some(())
    });
    eprintln!(
        "xds: backend port change live after {} ms",
        took.as_millis()
    );

    // A changed path match: /v2 is served, /v1 no longer.
    stack.put_manifest(
        "30-moving.yaml",
        &(route("moving", "moving.example.com", "/v2", "moving", &pb)
            + "---\n"
            + &policy("moving", Some("1ms"))),
    );
    until(CHANGE_WITHIN, "the new path match", || {
        (stack.get("moving.example.com", "/v2", &[]).status == 200).then_some(())
    });
    assert_eq!(stack.get("moving.example.com", "/v1", &[]).status, 404);

    // A changed retry back-off (it lives in the route, not the filter's
    // document): three retries with a 1 ms base take a few ms; with a
    // 500 ms base Envoy waits a random 0-500, 0-1000 and 0-2000 ms, which
    // stays under 150 ms with a probability of about 3 in 10,000.
    let retried = |key: &str| {
        let reply = stack.get(
            "moving.example.com",
            "/v2",
            &[("x-backend-key", key), ("x-backend-fail-times", "3")],
        );
        assert_eq!(reply.status, 200, "{}", reply.body);
        reply.elapsed
    };
    let quick = (0..3).map(|_| retried(&unique_key("quick"))).min().unwrap();
    assert!(
        quick < Duration::from_millis(150),
        "1 ms back-off took {quick:?}"
    );
    stack.put_manifest(
        "30-moving.yaml",
        &(route("moving", "moving.example.com", "/v2", "moving", &pb)
            + "---\n"
            + &policy("moving", Some("500ms"))),
    );
    let (slow, took) = until(CHANGE_WITHIN, "the new back-off", || {
        let key = unique_key("slow");
        let elapsed = retried(&key);
        assert_eq!(stack.backends[1].attempts(&key), 4, "3 retries");
        (elapsed >= Duration::from_millis(150)).then_some(elapsed)
    });
    eprintln!(
        "xds: back-off change live after {} ms (3 retries took {} ms, before {} ms)",
        took.as_millis(),
        slow.as_millis(),
        quick.as_millis()
    );

    // A deleted HTTPRoute answers 404 within 2 s.
    std::fs::remove_file(stack.input.join("40-fresh.yaml")).unwrap();
    let (_, took) = until(ROUTE_WITHIN, "the deleted route's 404", || {
        (stack.get("fresh.example.com", "/fresh", &[]).status == 404).then_some(())
    });
    eprintln!("xds: deleted route 404 after {} ms", took.as_millis());

    let tally = load.finish();
    eprintln!(
        "xds: {} requests on the unchanged route during the changes, {} failed",
        tally.sent,
        tally.failures.len()
    );
    assert!(
        tally.failures.is_empty(),
        "{} of {} requests on the unchanged route failed, first: {:?}",
        tally.failures.len(),
        tally.sent,
        tally.failures.first()
    );
    assert!(tally.sent >= 100, "only {} requests were sent", tally.sent);
    assert_eq!(stack.envoy.pid(), envoy_pid, "Envoy was restarted");
    // The listener never changed, so no connection was drained.
    assert_eq!(stack.envoy.stat("listener_manager.lds.update_success"), 1);
    assert_eq!(stack.envoy.stat("listener_manager.listener_modified"), 0);
}

#[test]
fn envoy_keeps_the_last_good_routes_on_a_bad_rds_file_and_a_bad_route_never_stops_the_others() {
    let stack = start("xds-nack");
    let steady = || steady_ok(&stack.get("steady.example.com", "/", &[]));
    assert_eq!(steady(), None);

    // By hand: an RDS file Envoy must refuse (a regex RE2 cannot parse).
    let rds = stack.xds_dir.join("rds/http/routes.json");
    let good = std::fs::read_to_string(&rds).unwrap();
    let mut bad: serde_json::Value = serde_json::from_str(&good).unwrap();
    bad["version_info"] = "by-hand".into();
    bad["resources"][0]["virtual_hosts"][0]["routes"][0]["match"] =
        serde_json::json!({"safe_regex": {"regex": "(("}});
    let rejected = "http.http.rds.http.update_rejected";
    let before = stack.envoy.stat(rejected);
    let tmp = stack.dir().join("bad-routes.json");
    std::fs::write(&tmp, bad.to_string()).unwrap();
    std::fs::rename(&tmp, &rds).unwrap();
    until(CHANGE_WITHIN, "Envoy refusing the bad RDS file", || {
        (stack.envoy.stat(rejected) > before).then_some(())
    });
    for _ in 0..20 {
        assert_eq!(steady(), None, "the last good routes keep serving");
    }

    // Through the watch: a new HTTPRoute whose regex does not parse, or
    // whose RE2 program is over Envoy's size limit (docs/semantics.md, "What
    // Envoy would refuse"), is left out with its field named; every other
    // change is still written (here another tenant's new route), and Envoy
    // never sees a file it refuses.
    let pa = port_of(&stack.backends[0]);
    for (n, regex) in ["/v(1", "/(abcdef|ghijkl|mnopqr){40}"]
        .into_iter()
        .enumerate()
    {
        let refused_before = stack.envoy.stat(rejected);
        let other = format!("other{n}");
        let host = format!("{other}.example.com");
        stack.put_manifest("50-regex.yaml", &regex_route(regex));
        stack.put_manifest(
            &format!("60-{other}.yaml"),
            &(route(&other, &host, "/", "steady", &pa) + "---\n" + &policy(&other, None)),
        );
        let (reply, _) = until(CHANGE_WITHIN, "the other tenant's new route served", || {
            let reply = stack.get(&host, "/", &[]);
            (reply.status == 200).then_some(reply)
        });
        assert_eq!(
            reply.echoed_header(&format!("x-{other}")),
            Some(vec!["yes".to_owned()])
        );
        let said = stack.watch.stderr();
        assert!(
            said.contains("HTTPRoute shop/regex: spec.rules[0].matches[0].path.value: regex"),
            "{said}"
        );
        assert!(
            said.contains("note: HTTPRoute shop/regex is left out: it has the error(s) above and no earlier good version"),
            "{said}"
        );
        assert_eq!(
            stack.envoy.stat(rejected),
            refused_before,
            "Envoy refused nothing"
        );
        assert_eq!(steady(), None);
        assert_eq!(stack.get("regex.example.com", "/v1", &[]).status, 404);
    }
    assert!(stack
        .watch
        .stderr()
        .contains("compiles to an RE2 program of about"));

    // The route taken out again: its table is written and applied.
    std::fs::remove_file(stack.input.join("50-regex.yaml")).unwrap();
    std::fs::remove_file(stack.input.join("60-other0.yaml")).unwrap();
    std::fs::remove_file(stack.input.join("60-other1.yaml")).unwrap();
    assert!(stack.watch.next_generation(CHANGE_WITHIN) > 1);
    until(CHANGE_WITHIN, "the table back to the good one", || {
        (std::fs::read_to_string(&rds).unwrap() == good).then_some(())
    });
    assert_eq!(steady(), None);
}

/// HTTPRoute `shop/regex` on the edge Gateway, matching one path regex.
fn regex_route(regex: &str) -> String {
    format!(
        "apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: regex, namespace: shop}}
spec:
  parentRefs: [{{name: edge, namespace: infra}}]
  hostnames: [regex.example.com]
  rules:
    - matches: [{{path: {{type: RegularExpression, value: {regex:?}}}}}]
"
    )
}
