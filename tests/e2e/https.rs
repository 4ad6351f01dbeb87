//! HTTPS listeners through real Envoy in the file-based layout
//! (docs/envoy.md, "HTTPS listeners"): a certificate the test makes with
//! openssl, read from a `kubernetes.io/tls` Secret manifest; the policy
//! enforced on the TLS listener's route; a rotated certificate served with
//! no restart and no failed request under load; the private key in a file
//! only its owner reads; a missing Secret an error naming it, with the
//! plain HTTP listener still served. Requests go through curl, a real TLS
//! client that checks the chain against the test's CA.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::harness::backend::Backend;
use crate::harness::client;
use crate::harness::envoy::Envoy;
use crate::harness::generator::{render_envoy_xds, Watch, XdsWatchSpec};
use crate::harness::paths;
use crate::harness::scratch::Scratch;

const HOST: &str = "shop.example.com";

fn run(program: &str, args: &[&str], dir: &Path) {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA, and a leaf for HOST it signs (`<name>.crt`, `<name>.key`).
fn make_leaf(dir: &Path, name: &str) {
    if !dir.join("ca.crt").exists() {
        run(
            "openssl",
            &[
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-keyout",
                "ca.key",
                "-out",
                "ca.crt",
                "-days",
                "1",
                "-subj",
                "/CN=attache-e2e-ca",
            ],
            dir,
        );
        std::fs::write(dir.join("san.ext"), format!("subjectAltName=DNS:{HOST}\n")).unwrap();
    }
    let (key, csr, crt) = (
        format!("{name}.key"),
        format!("{name}.csr"),
        format!("{name}.crt"),
    );
    run(
        "openssl",
        &[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &csr,
            "-subj",
            &format!("/CN={HOST}"),
        ],
        dir,
    );
    run(
        "openssl",
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            &crt,
            "-days",
            "1",
            "-extfile",
            "san.ext",
        ],
        dir,
    );
}

/// The serial of the certificate `name`, as openssl prints it.
fn serial_of_file(dir: &Path, name: &str) -> String {
    let out = Command::new("openssl")
        .args(["x509", "-noout", "-serial", "-in"])
        .arg(dir.join(format!("{name}.crt")))
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// The serial of the certificate Envoy serves for SNI HOST on `port`.
fn served_serial(port: u16) -> String {
    let script = format!(
        "openssl s_client -connect 127.0.0.1:{port} -servername {HOST} </dev/null 2>/dev/null | openssl x509 -noout -serial"
    );
    let out = Command::new("sh").args(["-c", &script]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// One HTTPS request through curl, verifying against the test CA: the
/// status and response headers, or curl's complaint.
fn https_get(ca: &Path, port: u16, path: &str) -> Result<(u16, String), String> {
    let out = Command::new("curl")
        .args([
            "-sS",
            "--max-time",
            "5",
            "-D",
            "-",
            "-o",
            "/dev/null",
            "--cacert",
        ])
        .arg(ca)
        .arg("--resolve")
        .arg(format!("{HOST}:{port}:127.0.0.1"))
        .arg(format!("https://{HOST}:{port}{path}"))
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let head = String::from_utf8_lossy(&out.stdout).into_owned();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no status in {head:?}"))?;
    Ok((status, head.to_ascii_lowercase()))
}

fn secret_manifest(dir: &Path, leaf: &str) -> String {
    let indent = |text: String| {
        text.lines()
            .map(|l| format!("    {l}\n"))
            .collect::<String>()
    };
    let cert = indent(std::fs::read_to_string(dir.join(format!("{leaf}.crt"))).unwrap());
    let key = indent(std::fs::read_to_string(dir.join(format!("{leaf}.key"))).unwrap());
    format!("apiVersion: v1\nkind: Secret\nmetadata: {{name: shop-cert, namespace: infra}}\ntype: kubernetes.io/tls\nstringData:\n  tls.crt: |\n{cert}  tls.key: |\n{key}")
}

fn manifests(backend_port: &str) -> String {
    format!(
        r#"apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {{name: attache}}
spec: {{controllerName: attache.dev/gateway-controller}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: edge, namespace: infra}}
spec:
  gatewayClassName: attache
  listeners:
  - {{name: http, port: 80, protocol: HTTP, allowedRoutes: {{namespaces: {{from: All}}}}}}
  - name: https
    port: 443
    protocol: HTTPS
    hostname: {HOST}
    tls: {{certificateRefs: [{{name: shop-cert}}]}}
    allowedRoutes: {{namespaces: {{from: All}}}}
---
apiVersion: v1
kind: Service
metadata: {{name: echo, namespace: shop}}
spec: {{clusterIP: 127.0.0.1}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: store, namespace: shop}}
spec:
  parentRefs: [{{name: edge, namespace: infra}}]
  rules:
  - backendRefs: [{{name: echo, port: {backend_port}}}]
---
apiVersion: policy.attache.dev/v1alpha1
kind: RoutePolicy
metadata: {{name: store, namespace: shop}}
spec:
  targetRefs: [{{group: gateway.networking.k8s.io, kind: HTTPRoute, name: store}}]
  defaults:
    responseHeaderModifier: {{set: [{{name: x-tls-policy, value: applied}}]}}
"#
    )
}

struct Stack {
    envoy: Envoy,
    watch: Watch,
    _backend: Backend,
    input: PathBuf,
    xds_dir: PathBuf,
    http_port: u16,
    https_port: u16,
}

fn start(scratch: &Scratch, with_secret: Option<&str>) -> Stack {
    let backend = Backend::start(scratch.path());
    let backend_port = backend.addr.rsplit(':').next().unwrap().to_owned();
    let input = scratch.join("input");
    std::fs::create_dir_all(&input).unwrap();
    std::fs::write(input.join("00-gateway.yaml"), manifests(&backend_port)).unwrap();
    if let Some(leaf) = with_secret {
        std::fs::write(
            input.join("10-secret.yaml"),
            secret_manifest(scratch.path(), leaf),
        )
        .unwrap();
    }
    let xds_dir = scratch.join("xds");
    let (http_port, https_port, admin_port) =
        (paths::free_port(), paths::free_port(), paths::free_port());
    let watch = Watch::start_xds(&XdsWatchSpec {
        input: &input,
        gateway: "infra/edge",
        out: &scratch.join("attache.json"),
        ecds: &xds_dir.join("ecds/attache-ecds.json"),
        wasm: &paths::wasm(),
        xds_dir: &xds_dir,
        listener_ports: vec![("http".into(), http_port), ("https".into(), https_port)],
        envoy_admin: format!("127.0.0.1:{admin_port}"),
        log_dir: scratch.path(),
    });
    assert_eq!(watch.next_generation(Duration::from_secs(30)), 1);
    let bootstrap = scratch.join("envoy.yaml");
    render_envoy_xds(&input, "infra/edge", &xds_dir, admin_port, &bootstrap);
    let envoy = Envoy::try_start(&bootstrap, admin_port, http_port, scratch.path())
        .unwrap_or_else(|log| panic!("envoy exited during start-up:\n{log}"));
    Stack {
        envoy,
        watch,
        _backend: backend,
        input,
        xds_dir,
        http_port,
        https_port,
    }
}

fn until(within: Duration, what: &str, mut ok: impl FnMut() -> bool) {
    let started = Instant::now();
    while !ok() {
        assert!(started.elapsed() < within, "{what}: not within {within:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_tls_listener_enforces_its_policy_and_serves_a_rotated_certificate_with_no_failed_request() {
    let scratch = Scratch::new("https");
    let dir = scratch.path().to_path_buf();
    make_leaf(&dir, "old");
    make_leaf(&dir, "new");
    let stack = start(&scratch, Some("old"));
    let ca = dir.join("ca.crt");
    let port = stack.https_port;
    until(
        Duration::from_secs(10),
        "the HTTPS listener answering",
        || https_get(&ca, port, "/").is_ok(),
    );
    let (status, head) = https_get(&ca, port, "/").unwrap();
    assert_eq!(status, 200, "{head}");
    assert!(
        head.contains("x-tls-policy: applied"),
        "the policy's header on the TLS route: {head}"
    );
    assert_eq!(served_serial(port), serial_of_file(&dir, "old"));

    // The private key: only in the SDS file, readable by its owner alone.
    let sds = stack.xds_dir.join("sds/infra_shop-cert/secret.json");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&sds).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{}", sds.display());
    let dir_mode = std::fs::metadata(sds.parent().unwrap())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(dir_mode, 0o700);

    // Rotation under load: clients keep asking while the Secret changes.
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let failures = Arc::new(Mutex::new(Vec::new()));
    let workers: Vec<_> = (0..3)
        .map(|_| {
            let (stop, sent, failures, ca) =
                (stop.clone(), sent.clone(), failures.clone(), ca.clone());
            std::thread::spawn(move || {
                let deadline = Instant::now() + Duration::from_secs(60);
                while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                    sent.fetch_add(1, Ordering::Relaxed);
                    match https_get(&ca, port, "/") {
                        Ok((200, _)) => {}
                        other => failures.lock().unwrap().push(format!("{other:?}")),
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let manifest = secret_manifest(&dir, "new");
    let tmp = stack.input.join("10-secret.yaml.tmp");
    std::fs::write(&tmp, manifest).unwrap();
    std::fs::rename(&tmp, stack.input.join("10-secret.yaml")).unwrap();
    let rotated = Instant::now();
    let new_serial = serial_of_file(&dir, "new");
    until(
        Duration::from_secs(15),
        "the rotated certificate served",
        || served_serial(port) == new_serial,
    );
    let took = rotated.elapsed();
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    let failures = failures.lock().unwrap();
    let sent = sent.load(Ordering::Relaxed);
    eprintln!(
        "https rotation: served after {took:?}; {sent} requests under load, {} failed",
        failures.len()
    );
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(sent >= 10, "only {sent} requests were sent");
    // Envoy was not restarted, and the listener was not rewritten: the
    // rotation was an SDS update.
    assert!(stack.envoy.stat("listener_manager.listener_modified") == 0);
    let log = stack.watch.stderr();
    for leaf in ["old", "new"] {
        let key = std::fs::read_to_string(dir.join(format!("{leaf}.key"))).unwrap();
        let body = key.lines().nth(1).unwrap();
        assert!(!log.contains(body), "watch's log holds the private key");
    }
}

#[test]
fn a_missing_secret_is_an_error_naming_it_and_the_http_listener_is_still_served() {
    let scratch = Scratch::new("https-missing");
    let stack = start(&scratch, None);
    let reply = client::get(
        &format!("http://127.0.0.1:{}/", stack.http_port),
        &[("host", "plain.example.com")],
    );
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header_values("x-tls-policy"), ["applied"]);
    let log = stack.watch.stderr();
    assert!(
        log.contains("error: listener 'https' (HTTPS) is not served: its tls.certificateRefs[0], Secret infra/shop-cert, is not in the input"),
        "{log}"
    );
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", stack.https_port)).is_err(),
        "nothing listens for the unserved HTTPS listener"
    );
}
