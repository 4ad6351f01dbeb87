//! A real gRPC server and client (grpcio from PyPI, tests/e2e/grpc_peer.py)
//! around the Envoy under test: the server is a process killed on Drop, each
//! call a process of its own that prints its status and timing as JSON.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::process::Guarded;

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The project's venv Python, which scripts/setup.sh gives grpcio
/// (`ATTACHE_PYTHON` overrides).
pub fn python() -> PathBuf {
    let path = std::env::var_os("ATTACHE_PYTHON")
        .map_or_else(|| workspace().join(".venv/bin/python"), PathBuf::from);
    assert!(
        path.is_file(),
        "Python with grpcio not found at {} (run scripts/setup.sh, or set ATTACHE_PYTHON)",
        path.display()
    );
    path
}

fn peer_script() -> PathBuf {
    workspace().join("tests/e2e/grpc_peer.py")
}

pub struct GrpcServer {
    /// `127.0.0.1:PORT`.
    pub addr: String,
    _process: Guarded,
}

impl GrpcServer {
    /// Starts `attache.test.Echo` on a free port; its log goes to `dir`.
    pub fn start(dir: &Path) -> GrpcServer {
        let log = dir.join("grpc-server.log");
        let port_file = dir.join("grpc-server.port");
        let child = Command::new(python())
            .arg(peer_script())
            .arg("serve")
            .arg(&port_file)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("create gRPC server log"))
            .spawn()
            .expect("start the gRPC server");
        let mut process = Guarded::new("grpc server", child, &log);
        let deadline = Instant::now() + Duration::from_secs(20);
        let port = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                break text.trim().to_owned();
            }
            assert!(
                !process.has_exited() && Instant::now() < deadline,
                "the gRPC server did not start\n{}",
                process.log_tail()
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        GrpcServer {
            addr: format!("127.0.0.1:{port}"),
            _process: process,
        }
    }
}

/// What one call ended with, as the gRPC client saw it.
#[derive(Debug)]
pub struct Call {
    /// `OK`, `DEADLINE_EXCEEDED`, `UNAVAILABLE`, ...
    pub code: String,
    pub details: String,
    /// From the call's start (after the channel is ready) to its end.
    pub elapsed: Duration,
    pub response: serde_json::Value,
}

/// One unary call to `method` (`/service/Method`) through `target`, with
/// `metadata` and, when given, a client deadline.
pub fn call(
    target: &str,
    method: &str,
    request: &serde_json::Value,
    metadata: &[(&str, &str)],
    deadline: Option<Duration>,
) -> Call {
    let mut command = Command::new(python());
    command
        .arg(peer_script())
        .args(["call", target, method, &request.to_string()]);
    for (k, v) in metadata {
        command.args(["--metadata", &format!("{k}={v}")]);
    }
    if let Some(d) = deadline {
        command.args(["--timeout", &d.as_secs_f64().to_string()]);
    }
    let output = command.output().expect("run the gRPC client");
    assert!(
        output.status.success(),
        "the gRPC client failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let line: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("the gRPC client prints JSON");
    Call {
        code: line["code"].as_str().unwrap_or_default().to_owned(),
        details: line["details"].as_str().unwrap_or_default().to_owned(),
        elapsed: Duration::from_secs_f64(line["elapsedMs"].as_f64().unwrap_or(0.0) / 1000.0),
        response: line["response"].clone(),
    }
}
