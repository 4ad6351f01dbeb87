//! `attache render ...` and `attache watch` as a user runs them: exit codes,
//! messages, files. No Envoy needed (tests/render_envoy.rs and the e2e
//! tests run it).

// A test crate: its helpers fail the test by panicking, like its #[test]s.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc::{channel, Receiver, TryRecvError};
use std::time::Duration;

use serde_json::Value;

mod support;
use support::{attache, attache_ok as ok, scratch, workspace};

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

fn resolved_example() -> Value {
    serde_json::from_slice(&ok(&["resolve", "-f", "examples/shop"]).stdout).unwrap()
}

/// What the data plane receives: the resolved document without the
/// `sources` provenance, which `attache resolve` keeps.
fn data_plane_example() -> Value {
    let mut document = resolved_example();
    let mut dropped = 0;
    for route in document["routes"].as_array_mut().unwrap() {
        dropped += usize::from(route.as_object_mut().unwrap().remove("sources").is_some());
    }
    assert!(dropped > 0, "the example has provenance to leave out");
    document
}

#[test]
fn a_backend_without_address_fails_naming_it_and_its_route() {
    // The basics fixture's Service shop/echo has no manifest in the input.
    let output = attache(&[
        "render",
        "envoy",
        "-f",
        "tests/fixtures/e2e/basics",
        "--ecds",
        "/tmp/e.yaml",
        "--wasm",
        "/tmp/f.wasm",
    ]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("error: backend shop/echo/9000 (used by route http/shop/"),
        "{stderr}"
    );
    assert!(
        stderr.contains("no Service shop/echo in the input"),
        "{stderr}"
    );
    assert!(stderr.contains("--backend shop/echo=HOST:PORT"), "{stderr}");
    assert!(output.stdout.is_empty(), "nothing is printed on failure");
}

#[test]
fn bad_flags_say_what_is_valid() {
    let output = attache(&[
        "render",
        "envoy",
        "-f",
        "examples/shop",
        "--ecds",
        "e.yaml",
        "--wasm",
        "f.wasm",
        "--listener-port",
        "public=80",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("no such listener; valid: http, admin"),
        "{stderr}"
    );

    let output = attache(&[
        "render",
        "envoy",
        "-f",
        "examples/shop",
        "--ecds",
        "e",
        "--wasm",
        "w",
        "--backend",
        "orders=1.2.3.4:80",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("expected NAMESPACE/NAME=HOST:PORT"),
        "{stderr}"
    );

    let output = attache(&[
        "render",
        "envoy",
        "-f",
        "examples/shop",
        "--ecds",
        "e",
        "--wasm",
        "w",
        "--listener-port",
        "http",
    ]);
    assert_eq!(output.status.code(), Some(2), "clap usage error");
    assert!(String::from_utf8_lossy(&output.stderr).contains("LISTENER=PORT"));
}

#[test]
fn ecds_file_carries_the_resolved_document_in_the_format_its_name_asks_for() {
    let dir = scratch("ecds");
    let json_path = dir.join("attache-ecds.json");
    ok(&[
        "render",
        "ecds",
        "-f",
        "examples/shop",
        "--wasm",
        "/w/f.wasm",
        "-o",
        json_path.to_str().unwrap(),
    ]);
    let response: Value =
        serde_json::from_slice(&std::fs::read(&json_path).unwrap()).expect(".json gets JSON");
    let config = &response["resources"][0]["typed_config"]["config"];
    let value = config["configuration"]["value"].as_str().unwrap();
    assert!(!value.contains('\n'), "compact JSON: {value}");
    let carried: Value = serde_json::from_str(value).unwrap();
    assert_eq!(carried, data_plane_example());
    assert_eq!(
        config["vm_config"]["code"]["local"]["filename"],
        "/w/f.wasm"
    );

    let yaml_path = dir.join("attache-ecds.yaml");
    ok(&[
        "render",
        "ecds",
        "-f",
        "examples/shop",
        "--wasm",
        "/w/f.wasm",
        "-o",
        yaml_path.to_str().unwrap(),
    ]);
    let from_yaml: Value = serde_yaml_ng::from_slice(&std::fs::read(&yaml_path).unwrap()).unwrap();
    assert_eq!(from_yaml, response);
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        leftovers.len(),
        2,
        "no temp files left behind: {leftovers:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn wasmplugin_targets_the_gateway_with_the_document() {
    let output = ok(&[
        "render",
        "wasmplugin",
        "-f",
        "examples/shop",
        "--url",
        "oci://r.example/attache:1",
    ]);
    let plugin: Value = serde_yaml_ng::from_slice(&output.stdout).unwrap();
    assert_eq!(plugin["kind"], "WasmPlugin");
    assert_eq!(plugin["metadata"]["namespace"], "infra");
    assert_eq!(plugin["spec"]["targetRefs"][0]["name"], "edge");
    assert_eq!(plugin["spec"]["url"], "oci://r.example/attache:1");
    assert_eq!(plugin["spec"]["pluginConfig"], data_plane_example());
}

/// A running `attache watch` whose stdout lines arrive on a channel.
struct Watch {
    child: std::process::Child,
    lines: Receiver<String>,
}

impl Watch {
    fn start(input: &Path, out: &Path, ecds: &Path, stderr: &Path) -> Watch {
        let mut child = Command::new(env!("CARGO_BIN_EXE_attache"))
            .args(["watch", "--interval-ms", "50", "--wasm", "/w/f.wasm", "-f"])
            .arg(input)
            .arg("--out")
            .arg(out)
            .arg("--ecds")
            .arg(ecds)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(stderr).unwrap())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Watch { child, lines }
    }

    /// The next stdout line; generous limit, this only guards against a hang.
    fn next_line(&self) -> String {
        self.lines
            .recv_timeout(Duration::from_secs(30))
            .expect("attache watch printed nothing")
    }

    /// Waits until the watcher has said `why` on stderr (it acted on the
    /// input), then checks that it wrote nothing.
    fn assert_refused(&self, stderr: &Path, why: &str) {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !std::fs::read_to_string(stderr)
            .unwrap_or_default()
            .contains(why)
        {
            assert!(
                std::time::Instant::now() < deadline,
                "attache watch never said {why:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        match self.lines.try_recv() {
            Err(TryRecvError::Empty) => {}
            other => panic!("attache watch wrote after a refused input: {other:?}"),
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn watch_rewrites_on_change_and_keeps_the_last_good_files_on_broken_input() {
    let dir = scratch("watch");
    let input = dir.join("input");
    copy_dir(&workspace().join("examples/shop"), &input);
    let (out, ecds, stderr) = (
        dir.join("attache.json"),
        dir.join("attache-ecds.yaml"),
        dir.join("watch.err"),
    );
    let watch = Watch::start(&input, &out, &ecds, &stderr);
    assert_eq!(watch.next_line(), "wrote generation 1 (7 routes)");
    let first: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(first, resolved_example());
    let rendered = ok(&[
        "render",
        "ecds",
        "-f",
        input.to_str().unwrap(),
        "--wasm",
        "/w/f.wasm",
    ]);
    assert_eq!(
        std::fs::read(&ecds).unwrap(),
        rendered.stdout,
        "watch --ecds writes what render ecds does"
    );

    // A change: a new generation with the new value in both files.
    let storefront = input.join("30-storefront.yaml");
    let original = std::fs::read_to_string(&storefront).unwrap();
    let edited = original.replace(
        "{name: x-shop-tier, value: web}",
        "{name: x-shop-tier, value: mobile}",
    );
    assert_ne!(edited, original);
    std::fs::write(input.join("edit.tmp"), &edited).unwrap();
    std::fs::rename(input.join("edit.tmp"), &storefront).unwrap();
    assert_eq!(watch.next_line(), "wrote generation 2 (7 routes)");
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("\"mobile\""));
    assert!(std::fs::read_to_string(&ecds).unwrap().contains("mobile"));

    // Broken YAML: nothing written, the reason on stderr, the files intact.
    let (good_out, good_ecds) = (std::fs::read(&out).unwrap(), std::fs::read(&ecds).unwrap());
    std::fs::write(
        input.join("edit.tmp"),
        "kind: RoutePolicy\nmetadata: {name: broken\n",
    )
    .unwrap();
    std::fs::rename(input.join("edit.tmp"), &storefront).unwrap();
    watch.assert_refused(&stderr, "keeping generation 2");
    let said = std::fs::read_to_string(&stderr).unwrap();
    assert!(
        said.contains("30-storefront.yaml (document 1): not valid YAML"),
        "{said}"
    );
    assert_eq!(std::fs::read(&out).unwrap(), good_out);
    assert_eq!(std::fs::read(&ecds).unwrap(), good_ecds);

    // An invalid policy (not a syntax error) is refused the same way.
    let invalid = original.replace("request: 5s", "request: 5 seconds");
    assert_ne!(invalid, original);
    std::fs::write(input.join("edit.tmp"), &invalid).unwrap();
    std::fs::rename(input.join("edit.tmp"), &storefront).unwrap();
    watch.assert_refused(&stderr, "the input has 1 error(s)");
    assert!(std::fs::read_to_string(&stderr)
        .unwrap()
        .contains("spec.defaults.timeouts.request"));
    assert_eq!(std::fs::read(&out).unwrap(), good_out);

    // Fixed again (back to the first state): written again.
    std::fs::write(input.join("edit.tmp"), &original).unwrap();
    std::fs::rename(input.join("edit.tmp"), &storefront).unwrap();
    assert_eq!(watch.next_line(), "wrote generation 3 (7 routes)");
    assert_eq!(
        serde_json::from_slice::<Value>(&std::fs::read(&out).unwrap()).unwrap(),
        first
    );
    drop(watch);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn backends_get_their_addresses_from_services_and_endpoint_slices_in_the_input() {
    let dir = scratch("slices");
    copy_dir(&workspace().join("tests/fixtures/e2e/basics"), &dir);
    // shop/echo port 9000 (the Service port, named http) is served by two
    // ready pods on 8080; the third is not ready.
    std::fs::write(
        dir.join("echo.yaml"),
        "apiVersion: v1\nkind: Service\nmetadata: {name: echo, namespace: shop}\n\
         spec: {clusterIP: 10.96.0.10, ports: [{name: http, port: 9000, targetPort: 8080}]}\n---\n\
         apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\n\
         metadata: {name: echo-x1, namespace: shop, labels: {kubernetes.io/service-name: echo}}\n\
         addressType: IPv4\nports: [{name: http, port: 8080}]\n\
         endpoints:\n- addresses: [10.1.0.2]\n- addresses: [10.1.0.1]\n- addresses: [10.1.0.3]\n  conditions: {ready: false}\n",
    )
    .unwrap();
    let output = ok(&[
        "render",
        "envoy",
        "-f",
        dir.to_str().unwrap(),
        "--ecds",
        "/e/ecds.yaml",
        "--wasm",
        "/w/f.wasm",
    ]);
    let bootstrap: Value = serde_yaml_ng::from_slice(&output.stdout).unwrap();
    let clusters = bootstrap["static_resources"]["clusters"]
        .as_array()
        .unwrap();
    assert_eq!(clusters.len(), 1, "one Service and port, one cluster");
    assert_eq!(clusters[0]["name"], "shop/echo/9000");
    assert_eq!(clusters[0]["type"], "STATIC");
    let endpoints: Vec<String> = clusters[0]["load_assignment"]["endpoints"][0]["lb_endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let a = &e["endpoint"]["address"]["socket_address"];
            format!("{}:{}", a["address"].as_str().unwrap(), a["port_value"])
        })
        .collect();
    assert_eq!(endpoints, ["10.1.0.1:8080", "10.1.0.2:8080"]);
    std::fs::remove_dir_all(&dir).unwrap();
}
