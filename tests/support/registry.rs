//! A real OCI registry on loopback for the image tests
//! (tests/package_oci.rs, tests/package_controller.rs): Debian's
//! `docker-registry` (the CNCF distribution registry), pushed to and pulled
//! from with `skopeo`. Without them a test says so and does nothing, except
//! under CI=true, where a missing tool fails it (scripts/test.sh installs
//! both).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `docker-registry` and `skopeo`, or None (skip) outside CI.
pub fn registry_tools() -> Option<(PathBuf, PathBuf)> {
    let find = |name: &str| {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join(name))
                .find(|p| p.is_file())
        })
    };
    match (find("docker-registry"), find("skopeo")) {
        (Some(registry), Some(skopeo)) => Some((registry, skopeo)),
        _ if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("docker-registry and skopeo are needed (scripts/setup.sh installs them)")
        }
        _ => {
            eprintln!("skipped: docker-registry or skopeo is not installed (scripts/setup.sh installs them)");
            None
        }
    }
}

/// A registry on a loopback port, storing in `dir`; killed on drop.
pub struct Registry(Child);

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn start_registry(binary: &Path, dir: &Path) -> (Registry, String) {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let config = dir.join("registry.yml");
    std::fs::write(
        &config,
        format!(
            "version: 0.1\nlog: {{level: error}}\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: {addr}\n",
            dir.join("storage").display()
        ),
    )
    .unwrap();
    let child = Command::new(binary)
        .arg("serve")
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("registry.log")).unwrap())
        .spawn()
        .expect("start docker-registry");
    let registry = Registry(child);
    let started = Instant::now();
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the registry did not listen on {addr}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    (registry, addr)
}

pub fn skopeo(binary: &Path, args: &[&str]) {
    // --insecure-policy: no /etc/containers/policy.json is needed on a bare
    // machine; the test checks digests itself.
    let output = Command::new(binary)
        .arg("--insecure-policy")
        .args(args)
        .output()
        .expect("run skopeo");
    assert!(
        output.status.success(),
        "skopeo {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Pushes the layout's `tag` to `repository` on the registry at `addr` and
/// pulls it back by `digest` into `pulled` (tag `pulled`).
pub fn round_trip(
    skopeo_bin: &Path,
    layout: &Path,
    tag: &str,
    addr: &str,
    repository: &str,
    digest: &str,
    pulled: &Path,
) {
    let remote = format!("docker://{addr}/{repository}");
    skopeo(
        skopeo_bin,
        &[
            "copy",
            "--preserve-digests",
            "--dest-tls-verify=false",
            &format!("oci:{}:{tag}", layout.display()),
            &format!("{remote}:{tag}"),
        ],
    );
    skopeo(
        skopeo_bin,
        &[
            "copy",
            "--src-tls-verify=false",
            &format!("{remote}@{digest}"),
            &format!("oci:{}:pulled", pulled.display()),
        ],
    );
}
