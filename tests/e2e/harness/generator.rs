//! The real `attache` CLI, run the way a user runs it.

use std::ffi::OsString;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use super::paths;
use super::process::Guarded;

/// Runs `attache ARGS` and returns its output, whatever the exit status.
pub fn run<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    Command::new(paths::attache())
        .args(&args)
        .output()
        .unwrap_or_else(|err| panic!("cannot run attache {args:?}: {err}"))
}

/// Runs `attache ARGS` and fails the test (with stderr) unless it succeeds.
pub fn run_ok<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let output = run(args.clone());
    assert!(
        output.status.success(),
        "attache {args:?} failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// `attache resolve`: the schema-1 document as JSON.
pub fn resolve(input: &Path, gateway: &str) -> serde_json::Value {
    let output = run_ok([
        OsString::from("resolve"),
        "-f".into(),
        input.into(),
        "--gateway".into(),
        gateway.into(),
    ]);
    serde_json::from_slice(&output.stdout).expect("attache resolve prints JSON")
}

/// What `attache render envoy` needs besides the manifests.
pub struct RenderEnvoy<'a> {
    pub input: &'a Path,
    pub gateway: &'a str,
    pub ecds: &'a Path,
    pub wasm: &'a Path,
    /// `NS/NAME` of a backendRef to `HOST:PORT`.
    pub backends: Vec<(String, String)>,
    /// Gateway listener name to local port.
    pub listener_ports: Vec<(String, u16)>,
    pub admin_port: u16,
    pub out: &'a Path,
}

pub fn render_envoy(spec: &RenderEnvoy<'_>) {
    let mut args: Vec<OsString> = vec![
        "render".into(),
        "envoy".into(),
        "-f".into(),
        spec.input.into(),
        "--gateway".into(),
        spec.gateway.into(),
        "--ecds".into(),
        spec.ecds.into(),
        "--admin-port".into(),
        spec.admin_port.to_string().into(),
        "-o".into(),
        spec.out.into(),
    ];
    args.extend(super::filter::flags(spec.wasm));
    for (backend, addr) in &spec.backends {
        args.push("--backend".into());
        args.push(format!("{backend}={addr}").into());
    }
    for (listener, port) in &spec.listener_ports {
        args.push("--listener-port".into());
        args.push(format!("{listener}={port}").into());
    }
    run_ok(args);
}

/// `attache render envoy --xds-dir`: the bootstrap of the file-based layout.
pub fn render_envoy_xds(input: &Path, gateway: &str, xds_dir: &Path, admin_port: u16, out: &Path) {
    let mut args = vec![
        OsString::from("render"),
        "envoy".into(),
        "-f".into(),
        input.into(),
        "--gateway".into(),
        gateway.into(),
        "--xds-dir".into(),
        xds_dir.into(),
        "--admin-port".into(),
        admin_port.to_string().into(),
        "-o".into(),
        out.into(),
    ];
    // The bootstrap names no filter; the module's pair is accepted all the
    // same (one set of flags for a whole setup), which this exercises.
    if super::filter::build() == super::filter::Build::DynamicModule {
        args.extend(super::filter::flags(Path::new("")));
    }
    run_ok(args);
}

pub fn render_ecds(input: &Path, gateway: &str, wasm: &Path, out: &Path) {
    let mut args = vec![
        OsString::from("render"),
        "ecds".into(),
        "-f".into(),
        input.into(),
        "--gateway".into(),
        gateway.into(),
        "-o".into(),
        out.into(),
    ];
    args.extend(super::filter::flags(wasm));
    run_ok(args);
}

/// A running `attache watch`, with its stdout lines delivered as they come.
pub struct Watch {
    lines: Receiver<String>,
    _process: Guarded,
}

pub struct WatchSpec<'a> {
    pub input: &'a Path,
    pub gateway: &'a str,
    pub out: &'a Path,
    pub ecds: &'a Path,
    pub wasm: &'a Path,
    pub log_dir: &'a Path,
}

/// `attache watch --xds-dir`: the file-based xDS layout, ordered against
/// Envoy's admin interface.
pub struct XdsWatchSpec<'a> {
    pub input: &'a Path,
    pub gateway: &'a str,
    pub out: &'a Path,
    pub ecds: &'a Path,
    pub wasm: &'a Path,
    pub xds_dir: &'a Path,
    /// Gateway listener name to local port.
    pub listener_ports: Vec<(String, u16)>,
    /// Envoy's admin `127.0.0.1:PORT`.
    pub envoy_admin: String,
    pub log_dir: &'a Path,
}

/// The arguments every `attache watch` of the tests starts with.
fn watch_args(
    input: &std::path::Path,
    gateway: &str,
    out: &std::path::Path,
    ecds: &std::path::Path,
    wasm: &std::path::Path,
) -> Vec<OsString> {
    vec![
        "-f".into(),
        input.into(),
        "--gateway".into(),
        gateway.into(),
        "--out".into(),
        out.into(),
        "--ecds".into(),
        ecds.into(),
    ]
    .into_iter()
    .chain(super::filter::flags(wasm))
    .collect()
}

impl Watch {
    pub fn start(spec: &WatchSpec<'_>) -> Watch {
        let args = watch_args(spec.input, spec.gateway, spec.out, spec.ecds, spec.wasm);
        Watch::spawn(args, spec.log_dir)
    }

    pub fn start_xds(spec: &XdsWatchSpec<'_>) -> Watch {
        let mut args = watch_args(spec.input, spec.gateway, spec.out, spec.ecds, spec.wasm);
        args.extend([
            "--xds-dir".into(),
            spec.xds_dir.into(),
            "--envoy-admin".into(),
            spec.envoy_admin.clone().into(),
        ]);
        for (listener, port) in &spec.listener_ports {
            args.push("--listener-port".into());
            args.push(format!("{listener}={port}").into());
        }
        Watch::spawn(args, spec.log_dir)
    }

    fn spawn(args: Vec<OsString>, log_dir: &Path) -> Watch {
        let log = log_dir.join("watch.log");
        let mut child = Command::new(paths::attache())
            .arg("watch")
            .args(["--interval-ms", "100"])
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(File::create(&log).expect("create watch log"))
            .spawn()
            .expect("start attache watch");
        let stdout = child.stdout.take().expect("watch stdout");
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Watch {
            lines,
            _process: Guarded::new("attache watch", child, &log),
        }
    }

    /// Waits for the next `wrote generation N (...)` line and returns N.
    pub fn next_generation(&self, within: Duration) -> u64 {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    if let Some(generation) = parse_generation(&line) {
                        return generation;
                    }
                }
                Err(RecvTimeoutError::Timeout) => panic!(
                    "attache watch wrote nothing within {within:?}; its stderr:\n{}",
                    self._process.log_tail()
                ),
                Err(RecvTimeoutError::Disconnected) => panic!(
                    "attache watch ended; its stderr:\n{}",
                    self._process.log_tail()
                ),
            }
        }
    }

    /// Fails if a write is reported within `quiet` (after a broken input).
    pub fn assert_no_write(&self, quiet: Duration) {
        if let Ok(line) = self.lines.recv_timeout(quiet) {
            assert!(
                parse_generation(&line).is_none(),
                "attache watch wrote after a broken input: {line}"
            );
        }
    }

    pub fn stderr(&self) -> String {
        self._process.log_tail()
    }
}

fn parse_generation(line: &str) -> Option<u64> {
    line.strip_prefix("wrote generation ")?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Copies a fixture directory so a test can edit its copy.
pub fn copy_dir(from: &Path, to: &Path) -> PathBuf {
    std::fs::create_dir_all(to).expect("create copy dir");
    for entry in std::fs::read_dir(from).expect("read fixture dir") {
        let entry = entry.expect("fixture entry");
        std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copy fixture file");
    }
    to.to_owned()
}
