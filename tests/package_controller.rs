//! `attache package controller`: the controller as an OCI image built
//! without Docker. The same binary gives the same image byte for byte; the
//! image holds the binary, the loader and libraries it needs and nothing
//! else; the binary runs in it as the image's non-root user (a chroot of the
//! unpacked layer, as the container runtime would run it, entry point plus
//! deploy/controller's args); and it round-trips through a real registry by
//! digest (tests/support/registry.rs).
//!
//! The image packages the release binary scripts/setup.sh builds
//! ($ATTACHE_BIN, else target/release/attache): a debug binary is ten times
//! larger. Without it, or without root for the chroot, a test says so and
//! skips, except under CI=true, where it fails.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // test helpers fail by panicking
#[path = "support/oci_layout.rs"]
mod oci_layout;
#[path = "support/registry.rs"]
mod registry;
mod support;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use oci_layout::{first_image, layer_tar};
use serde_json::Value;
use support::{attache, attache_ok, scratch, text, workspace};

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// The release `attache`, or None (skip) outside CI.
fn release_binary() -> Option<PathBuf> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| workspace().join("target"), PathBuf::from);
    let candidates: Vec<PathBuf> = match std::env::var_os("ATTACHE_BIN") {
        Some(bin) => vec![PathBuf::from(bin)],
        None => vec![
            target.join("release/attache"),
            workspace().join("target/release/attache"),
        ],
    };
    match candidates.iter().find(|p| p.is_file()) {
        Some(found) => Some(found.clone()),
        None if in_ci() => {
            panic!("no release attache at {candidates:?}: scripts/setup.sh builds it")
        }
        None => {
            eprintln!("skipped: no release attache at {candidates:?} (scripts/setup.sh builds it)");
            None
        }
    }
}

fn package(binary: &Path, out: &Path, tag: &str) -> String {
    let output = attache_ok(&[
        "package",
        "controller",
        "--binary",
        binary.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--tag",
        tag,
    ]);
    text(&output.stdout).trim().to_owned()
}

/// The image the layout's index names first: its manifest digest, config
/// and the layer's uncompressed tar.
fn open(layout: &Path) -> (String, Value, Vec<u8>) {
    let image = first_image(layout);
    assert_eq!(image.manifest["layers"].as_array().unwrap().len(), 1);
    let tar = layer_tar(layout, &image, 0);
    (image.digest, image.config, tar)
}

/// Each regular file of a layer: path, mode, bytes.
fn files(tar: &[u8]) -> BTreeMap<String, (u32, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut archive = tar::Archive::new(tar);
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let header = entry.header().clone();
        assert_eq!(header.mtime().unwrap(), 0);
        assert_eq!((header.uid().unwrap(), header.gid().unwrap()), (0, 0));
        if header.entry_type().is_file() {
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).unwrap();
            let path = entry.path().unwrap().to_string_lossy().into_owned();
            out.insert(path, (header.mode().unwrap(), bytes));
        }
    }
    out
}

/// deploy/controller's Deployment args.
fn deployment_args() -> Vec<String> {
    let text =
        std::fs::read_to_string(workspace().join("deploy/controller/deployment.yaml")).unwrap();
    let d: Value = serde_yaml_ng::from_str(&text).unwrap();
    d["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_same_binary_gives_the_same_image_and_it_runs_in_it_as_non_root() {
    let Some(binary) = release_binary() else {
        return;
    };
    let dir = scratch("controller-image");
    let first = package(&binary, &dir.join("one"), "0.1.0");
    let second = package(&binary, &dir.join("two"), "0.1.0");
    assert!(first.starts_with("sha256:") && first.len() == 71, "{first}");
    assert_eq!(first, second, "the same binary, the same digest");
    for name in ["index.json", "oci-layout"] {
        assert_eq!(
            std::fs::read(dir.join("one").join(name)).unwrap(),
            std::fs::read(dir.join("two").join(name)).unwrap(),
            "{name}"
        );
    }
    let (digest, config, tar) = open(&dir.join("one"));
    assert_eq!(digest, first);
    // The process: a numeric non-root user, entry point `attache controller`.
    let process = &config["config"];
    assert_eq!(process["User"], "65532:65532");
    assert_eq!(
        process["Entrypoint"],
        serde_json::json!(["/usr/local/bin/attache", "controller"])
    );
    assert_eq!(
        (config["os"].as_str(), config["architecture"].as_str()),
        (Some("linux"), Some("amd64"))
    );
    assert!(config.get("created").is_none(), "no clock in the image");
    // The binary, and only what it needs besides.
    let files = files(&tar);
    let bytes = std::fs::read(&binary).unwrap();
    assert_eq!(files["usr/local/bin/attache"], (0o555, bytes));
    for path in files.keys() {
        assert!(
            path == "usr/local/bin/attache" || path.contains(".so"),
            "{path} is neither the binary nor a library"
        );
    }
    // Another binary, another image.
    let other = dir.join("other");
    let mut changed = std::fs::read(&binary).unwrap();
    changed.extend_from_slice(b"\0");
    std::fs::write(&other, &changed).unwrap();
    assert_ne!(package(&other, &dir.join("three"), "0.1.0"), first);
    let refused = attache(&[
        "package",
        "controller",
        "--binary",
        workspace().join("README.md").to_str().unwrap(),
        "-o",
        dir.join("four").to_str().unwrap(),
    ]);
    assert!(!refused.status.success());
    assert!(text(&refused.stderr).contains("not a 64-bit little-endian ELF"));

    run_in_the_image(&dir, &tar, process);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The layer unpacked as the root of a chroot, the entry point run as the
/// image's user with only the image's environment: it must start (the
/// loader and libraries are there) and take deploy/controller's args.
fn run_in_the_image(dir: &Path, tar: &[u8], process: &Value) {
    // Root? The effective uid from /proc (no libc crate for getuid).
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let root = status
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"));
    let chroot: Option<&str> = ["/usr/sbin/chroot", "/usr/bin/chroot"]
        .into_iter()
        .find(|p| Path::new(p).is_file());
    let Some(chroot) = chroot.filter(|_| root) else {
        assert!(
            !in_ci(),
            "running the image needs root and chroot (CI runs as root)"
        );
        eprintln!("skipped: running the binary in the image needs root and chroot");
        return;
    };
    let rootfs = dir.join("rootfs");
    std::fs::create_dir_all(&rootfs).unwrap();
    tar::Archive::new(tar).unpack(&rootfs).unwrap();
    let entrypoint: Vec<String> = process["Entrypoint"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect();
    let env: Vec<(String, String)> = process["Env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let (k, v) = e.as_str().unwrap().split_once('=').unwrap();
            (k.to_owned(), v.to_owned())
        })
        .collect();
    let run = |args: &[String]| {
        Command::new(chroot)
            .arg(format!("--userspec={}", process["User"].as_str().unwrap()))
            .arg(&rootfs)
            .args(&entrypoint)
            .args(args)
            .env_clear()
            .envs(env.iter().cloned())
            .output()
            .unwrap()
    };
    let help = run(&["--help".to_owned()]);
    assert!(
        help.status.success() && text(&help.stdout).contains("--controller-name"),
        "the binary does not run in the image: {}",
        text(&help.stderr)
    );
    let mut args = deployment_args();
    args.extend(["--kubeconfig", "/nonexistent/kubeconfig", "--log-text"].map(String::from));
    let started = run(&args);
    let stderr = text(&started.stderr);
    assert!(
        stderr.contains("cannot find the cluster"),
        "deploy/controller's args in the image: {stderr}"
    );
    runs_as_in_a_pod(chroot, &rootfs, &entrypoint, &env, process);
}

/// The first certificate of the host's CA bundle: a well-formed ca.crt.
fn a_ca_certificate() -> Option<String> {
    let bundle = std::fs::read_to_string("/etc/ssl/certs/ca-certificates.crt").ok()?;
    let end = "-----END CERTIFICATE-----";
    let at = bundle.find(end)?;
    let start = bundle.find("-----BEGIN CERTIFICATE-----")?;
    Some(format!("{}\n", &bundle[start..at + end.len()]))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One HTTP/1.1 GET on loopback: the status code, or None if nothing answers.
fn get(port: u16, path: &str) -> Option<u16> {
    use std::io::Write;
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .ok()?;
    // Deliberately in two writes: the controller must read the whole
    // request line, as a kubelet's request may come in pieces.
    stream.write_all(b"GET ").ok()?;
    stream.flush().ok()?;
    std::thread::sleep(std::time::Duration::from_millis(50));
    write!(
        stream,
        "{path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    answer.split_whitespace().nth(1)?.parse().ok()
}

/// As in a pod: the in-cluster service account files and environment, an
/// API server that does not answer (nothing listens on its port). The
/// controller starts, serves /healthz, is not ready (no kind listed), and
/// stops cleanly on SIGTERM (graceful shutdown).
fn runs_as_in_a_pod(
    chroot: &str,
    rootfs: &Path,
    entrypoint: &[String],
    env: &[(String, String)],
    process: &Value,
) {
    let Some(ca) = a_ca_certificate() else {
        eprintln!(
            "skipped: the in-pod run needs a PEM certificate (/etc/ssl/certs/ca-certificates.crt)"
        );
        return;
    };
    let account = rootfs.join("var/run/secrets/kubernetes.io/serviceaccount");
    std::fs::create_dir_all(&account).unwrap();
    std::fs::write(account.join("ca.crt"), ca).unwrap();
    std::fs::write(account.join("token"), "not-a-real-token").unwrap();
    std::fs::write(account.join("namespace"), "attache-system").unwrap();
    let (api, probes) = (free_port(), free_port());
    let log = rootfs.parent().unwrap().join("controller.log");
    let mut child = Command::new(chroot)
        .arg(format!("--userspec={}", process["User"].as_str().unwrap()))
        .arg(rootfs)
        .args(entrypoint)
        .arg(format!("--probe-address=127.0.0.1:{probes}"))
        .arg("--log-text")
        .env_clear()
        .envs(env.iter().cloned())
        .env("KUBERNETES_SERVICE_HOST", "127.0.0.1")
        .env("KUBERNETES_SERVICE_PORT", api.to_string())
        .env("POD_NAME", "attache-controller-test")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let mut health = None;
    while health.is_none() && started.elapsed() < std::time::Duration::from_secs(20) {
        if let Some(code) = get(probes, "/healthz") {
            health = Some(code);
        } else if child.try_wait().unwrap().is_some() {
            break;
        } else {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
    let ready = get(probes, "/readyz");
    // chroot execs the entry point: the pid is the controller's.
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    let mut exited = None;
    while exited.is_none() && started.elapsed() < std::time::Duration::from_secs(40) {
        exited = child.try_wait().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    if exited.is_none() {
        let _ = child.kill();
    }
    // Reaped in every case (a no-op after try_wait saw it exit).
    let _ = child.wait();
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(health, Some(200), "/healthz in the image: {logged}");
    assert_eq!(
        ready,
        Some(503),
        "not ready without an API server: {logged}"
    );
    assert!(
        exited.is_some_and(|s| s.success()),
        "SIGTERM ends it cleanly: {exited:?} {logged}"
    );
    assert!(logged.contains("shutting down"), "{logged}");
}

#[test]
fn the_controller_image_round_trips_through_a_real_registry_by_digest() {
    let Some(binary) = release_binary() else {
        return;
    };
    let Some((registry_bin, skopeo_bin)) = registry::registry_tools() else {
        return;
    };
    let dir = scratch("controller-registry");
    let layout = dir.join("layout");
    let digest = package(&binary, &layout, "0.1.0");
    let (_registry, addr) = registry::start_registry(&registry_bin, &dir);
    let pulled = dir.join("pulled");
    registry::round_trip(
        &skopeo_bin,
        &layout,
        "0.1.0",
        &addr,
        "attache/controller",
        &digest,
        &pulled,
    );
    let (pulled_digest, config, tar) = open(&pulled);
    assert_eq!(pulled_digest, digest);
    assert_eq!(config["config"]["User"], "65532:65532");
    assert_eq!(
        files(&tar)["usr/local/bin/attache"].1,
        std::fs::read(&binary).unwrap()
    );
    drop(_registry);
    std::fs::remove_dir_all(&dir).unwrap();
}
