//! Hostile listener names never reach the file system outside `--xds-dir`.
//! A Gateway listener named `../../escaped` once made `attache render xds`
//! write `<dir>/../escaped/routes.json`, and a listener with such a name in
//! an LDS file left on disk made `attache watch` delete the RDS file it
//! pointed at. The parser now refuses the name (Gateway API SectionName) and
//! the renderer refuses any file name built from such a component.

// A test crate: its helpers fail the test by panicking, like its #[test]s.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod support;
use support::{attache, copy_dir, scratch, text, workspace};

const HOSTILE: &str = "../../escaped";

fn manifests(listener: &str) -> String {
    format!(
        "apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {{name: gc}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: edge, namespace: infra}}
spec:
  gatewayClassName: gc
  listeners:
  - {{name: {listener:?}, port: 80, protocol: HTTP, allowedRoutes: {{namespaces: {{from: All}}}}}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: web, namespace: shop}}
spec:
  parentRefs: [{{name: edge, namespace: infra}}]
  rules:
  - backendRefs: [{{name: web, port: 80}}]
"
    )
}

/// Every file under `dir`, relative to it.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                out.push(path.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn render_xds_with_a_traversing_listener_name_writes_nothing_outside_the_directory() {
    let base = scratch("xds-hostile-render");
    std::fs::write(base.join("gw.yaml"), manifests(HOSTILE)).unwrap();
    // Two levels deep, so `rds/../../escaped` would land in base/a/escaped.
    let xds = base.join("a/xds");
    let output = attache(&[
        "render",
        "xds",
        "-f",
        &base.join("gw.yaml").to_string_lossy(),
        "--xds-dir",
        &xds.to_string_lossy(),
        "--ecds",
        "/run/ecds/attache.yaml",
        "--backend",
        "*=127.0.0.1:9000",
    ]);
    let stderr = text(&output.stderr);
    assert!(!output.status.success(), "exit 0; stderr:\n{stderr}");
    assert!(
        stderr.contains("Gateway infra/edge: spec.listeners[0].name")
            && stderr.contains("../../escaped")
            && stderr.contains("gw.yaml"),
        "the error names file, object and field:\n{stderr}"
    );
    assert_eq!(files_under(&base), [PathBuf::from("gw.yaml")]);
}

#[test]
fn watch_never_follows_a_traversing_listener_name_read_back_from_the_lds_file() {
    let base = scratch("xds-hostile-watch");
    let input = base.join("input");
    copy_dir(&workspace().join("examples/shop"), &input);
    let xds = base.join("a/xds");
    // An LDS file someone else left, naming a listener whose RDS file would
    // be `a/xds/rds/../../escaped/routes.json`, i.e. `a/escaped/routes.json`,
    // outside `a/xds`; that file exists and names the route configuration,
    // so a watch that followed the name would read it back as live and then
    // delete it as the RDS file of a removed listener.
    let lds = serde_json::json!({"version_info": "x", "resources": [{"name": HOSTILE}]});
    std::fs::create_dir_all(xds.join("lds")).unwrap();
    std::fs::write(xds.join("lds/listeners.json"), lds.to_string()).unwrap();
    // `rds/..` only resolves when `rds/` exists, as it does after any
    // earlier render or watch.
    std::fs::create_dir_all(xds.join("rds/http")).unwrap();
    let victim = base.join("a/escaped/routes.json");
    std::fs::create_dir_all(victim.parent().unwrap()).unwrap();
    let rds = serde_json::json!({"version_info": "x", "resources": [{"name": HOSTILE}]});
    std::fs::write(&victim, rds.to_string()).unwrap();

    let stderr_path = base.join("watch.err");
    let mut child = Command::new(env!("CARGO_BIN_EXE_attache"))
        .current_dir(workspace())
        .args(["watch", "--interval-ms", "20", "--settle-ms", "0"])
        .args(["--wasm", "/w/f.wasm", "--backend", "*=127.0.0.1:9000"])
        .arg("-f")
        .arg(&input)
        .arg("--out")
        .arg(base.join("attache.json"))
        .arg("--ecds")
        .arg(base.join("ecds/attache.yaml"))
        .arg("--xds-dir")
        .arg(&xds)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !base.join("attache.json").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    assert!(
        base.join("attache.json").exists(),
        "the watch wrote no generation:\n{stderr}"
    );
    assert!(victim.exists(), "the watch deleted {}", victim.display());
    let lds_now = std::fs::read_to_string(xds.join("lds/listeners.json")).unwrap();
    assert!(!lds_now.contains(HOSTILE), "{lds_now}");
}
