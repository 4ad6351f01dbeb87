//! Hot reload: `attache watch` rewrites the ECDS file, Envoy picks it up
//! without a restart, new requests follow the new values, nothing fails
//! under load during several swaps, and broken inputs change nothing.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::harness::client;
use crate::harness::generator::{copy_dir, Watch, WatchSpec};
use crate::harness::scratch::Scratch;
use crate::harness::stack::{Fixture, Stack};

const WRITE_WITHIN: Duration = Duration::from_secs(15);
const APPLIED_WITHIN: Duration = Duration::from_secs(15);
const LOAD_THREADS: usize = 8;
const MIN_LOAD_REQUESTS: u64 = 400;
const MAX_SWAPS: usize = 40;

fn policy(generation: &str) -> String {
    format!(
        "apiVersion: policy.attache.dev/v1alpha1
kind: RoutePolicy
metadata:
  name: reload
  namespace: shop
spec:
  targetRefs:
    - group: gateway.networking.k8s.io
      kind: HTTPRoute
      name: reload
  defaults:
    requestHeaderModifier:
      set:
        - {{name: x-generation, value: {generation}}}
"
    )
}

/// Replaces `dir/policy.yaml` in one rename, as an editor or
/// `kubectl get -o yaml >` followed by `mv` would; the temporary name does
/// not end in .yaml so the watcher never reads it half-written.
fn write_policy(dir: &Path, text: &str) {
    let tmp = dir.join("policy.yaml.tmp");
    std::fs::write(&tmp, text).expect("write policy");
    std::fs::rename(&tmp, dir.join("policy.yaml")).expect("rename policy");
}

fn generation_seen(stack: &Stack) -> Option<String> {
    let reply = stack.get("/", &[]);
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply
        .echoed_header("x-generation")
        .map(|values| values.join(","))
}

fn wait_for_generation(stack: &Stack, value: &str) {
    let started = Instant::now();
    loop {
        let seen = generation_seen(stack);
        if seen.as_deref() == Some(value) {
            return;
        }
        assert!(
            started.elapsed() < APPLIED_WITHIN,
            "Envoy still serves {seen:?}, not {value}; envoy log:\n{}",
            stack.envoy.log_tail()
        );
        thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn policy_changes_reach_envoy_without_restart_and_without_failures() {
    let fixture = Fixture::named("reload", "infra/edge", &["shop/echo"]);
    let scratch = Scratch::new("reload");
    let input = copy_dir(&fixture.input, &scratch.join("input"));
    let ecds = scratch.ecds_file();
    let watch = Watch::start(&WatchSpec {
        input: &input,
        gateway: fixture.gateway,
        out: &scratch.join("attache.json"),
        ecds: &ecds,
        wasm: &crate::harness::paths::wasm(),
        log_dir: scratch.path(),
    });
    let first = watch.next_generation(WRITE_WITHIN);
    let stack = Stack::launch(&fixture, &input, ecds, scratch);
    assert_eq!(generation_seen(&stack).as_deref(), Some("one"));
    let envoy_pid_before = stack.envoy.pid();

    // One change: the next write, then every new request sees it.
    write_policy(&input, &policy("two"));
    assert!(watch.next_generation(WRITE_WITHIN) > first);
    wait_for_generation(&stack, "two");
    for _ in 0..20 {
        assert_eq!(generation_seen(&stack).as_deref(), Some("two"));
    }

    // Several swaps under concurrent load: no request may fail, and every
    // answer carries one of the generations that were ever live.
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let url = format!("{}/", stack.envoy.listener);
    let workers: Vec<_> = (0..LOAD_THREADS)
        .map(|_| {
            let (stop, sent, failures, url) =
                (stop.clone(), sent.clone(), failures.clone(), url.clone());
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let outcome = client::try_get(&url, &[]);
                    sent.fetch_add(1, Ordering::Relaxed);
                    let problem = match outcome {
                        Err(err) => Some(format!("transport error: {err}")),
                        Ok(reply) if reply.status != 200 => {
                            Some(format!("status {}: {}", reply.status, reply.body))
                        }
                        Ok(reply) => match reply.echoed_header("x-generation") {
                            Some(values)
                                if values.len() == 1
                                    && ["two", "three", "four", "five", "six"]
                                        .contains(&values[0].as_str()) =>
                            {
                                None
                            }
                            other => Some(format!("unexpected x-generation {other:?}")),
                        },
                    };
                    if let Some(problem) = problem {
                        failures.lock().unwrap().push(problem);
                    }
                }
            })
        })
        .collect();
    // At least four swaps, and more until the load has really been
    // running across swaps (a slow machine sends fewer per swap).
    let cycle = ["three", "four", "five", "six"];
    let mut swaps = 0;
    let mut live = "two";
    while swaps < cycle.len()
        || (sent.load(Ordering::Relaxed) < MIN_LOAD_REQUESTS && swaps < MAX_SWAPS)
    {
        live = cycle[swaps % cycle.len()];
        write_policy(&input, &policy(live));
        watch.next_generation(WRITE_WITHIN);
        wait_for_generation(&stack, live);
        swaps += 1;
    }
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.join().unwrap();
    }
    let failures = failures.lock().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} requests failed during swaps, first: {:?}",
        failures.len(),
        sent.load(Ordering::Relaxed),
        failures.first()
    );
    let total = sent.load(Ordering::Relaxed);
    assert!(
        total >= MIN_LOAD_REQUESTS,
        "only {total} requests across {swaps} swaps"
    );
    eprintln!("hot reload: {total} requests, {swaps} swaps, 0 failures");
    assert_eq!(stack.envoy.pid(), envoy_pid_before, "Envoy was restarted");

    // A broken input is refused: the last good ECDS file stays, and so
    // does what Envoy serves.
    let good_ecds = std::fs::read(&stack.ecds).unwrap();
    write_policy(
        &input,
        "apiVersion: policy.attache.dev/v1alpha1\nkind: RoutePolicy\nmetadata: {name: reload\n",
    );
    watch.assert_no_write(Duration::from_secs(2));
    assert!(
        watch.stderr().contains("policy.yaml"),
        "watch did not say why: {}",
        watch.stderr()
    );
    assert_eq!(
        std::fs::read(&stack.ecds).unwrap(),
        good_ecds,
        "the ECDS file changed"
    );
    assert_eq!(generation_seen(&stack).as_deref(), Some(live));
}

#[test]
fn broken_document_in_the_ecds_file_is_refused_and_the_old_one_keeps_serving() {
    let fixture = Fixture::named("reload", "infra/edge", &["shop/echo"]);
    let stack = Stack::start(&fixture);
    assert_eq!(generation_seen(&stack).as_deref(), Some("one"));

    // Same ECDS file, but the filter's configuration is a well-formed
    // schema-1 document (`attache resolve`'s, for people and tools), which
    // the filter does not read: Envoy hands it over, the filter refuses it
    // with a hint, and the last good document keeps serving.
    let text = std::fs::read_to_string(&stack.ecds).unwrap();
    let mut ecds: serde_json::Value = serde_yaml_ng::from_str(&text).unwrap();
    let replaced = replace_configuration(
        &mut ecds,
        "{\"schemaVersion\": 1, \"gateway\": \"infra/edge\", \"routes\": []}",
    );
    assert!(replaced, "no filter configuration found in {text}");
    let failed_before = stack.envoy.stat(CONFIG_FAIL);
    let tmp = stack.dir().join("broken.tmp");
    std::fs::write(&tmp, serde_json::to_string(&ecds).unwrap()).unwrap();
    std::fs::rename(&tmp, &stack.ecds).unwrap();

    let started = Instant::now();
    while stack.envoy.stat(CONFIG_FAIL) == failed_before {
        assert!(
            started.elapsed() < APPLIED_WITHIN,
            "Envoy never reported the broken config ({CONFIG_FAIL}); log:\n{}",
            stack.envoy.log_tail()
        );
        thread::sleep(Duration::from_millis(50));
    }
    for _ in 0..20 {
        assert_eq!(generation_seen(&stack).as_deref(), Some("one"));
    }
    let log = stack.envoy.log_tail();
    assert!(
        log.contains("schemaVersion 1 (`attache resolve`'s document) is not read by the filter")
            && log.contains("`attache render ecds`"),
        "no refusal line with the hint in Envoy's log:\n{log}"
    );
}

/// Envoy's counter of refused ECDS updates for the filter named `attache`.
pub(crate) const CONFIG_FAIL: &str = "extension_config_discovery.http_filter.attache.config_fail";

/// Replaces every Wasm plugin `configuration.value` under `value`; visits
/// every node (no short-circuit) so that no copy is left unreplaced.
pub(crate) fn replace_configuration(value: &mut serde_json::Value, with: &str) -> bool {
    let mut replaced = false;
    match value {
        serde_json::Value::Object(map) => {
            // The Wasm filter's `configuration`, the dynamic module's `filter_config`.
            for key in ["configuration", "filter_config"] {
                if let Some(serde_json::Value::Object(configuration)) = map.get_mut(key) {
                    if configuration.contains_key("value") {
                        configuration.insert(
                            "value".to_owned(),
                            serde_json::Value::String(with.to_owned()),
                        );
                        replaced = true;
                    }
                }
            }
            for child in map.values_mut() {
                replaced |= replace_configuration(child, with);
            }
        }
        serde_json::Value::Array(items) => {
            for child in items {
                replaced |= replace_configuration(child, with);
            }
        }
        _ => {}
    }
    replaced
}
