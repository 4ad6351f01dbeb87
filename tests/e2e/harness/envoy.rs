//! A real Envoy process on a rendered bootstrap.

use std::fs::File;
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use super::client;
use super::paths;
use super::process::Guarded;

/// Envoy plus V8 compiling the filter takes a few seconds on a busy 2-core
/// machine; this bounds a broken start.
const READY_WITHIN: Duration = Duration::from_secs(60);

pub struct Envoy {
    pub admin: String,
    pub listener: String,
    process: Guarded,
}

impl Envoy {
    /// Starts Envoy on `bootstrap` and waits until its admin says LIVE and
    /// the listener accepts connections. `Err(log)` when Envoy exited during
    /// start-up (typically a port that was free when picked and taken since:
    /// the caller picks new ones and tries again).
    pub fn try_start(
        bootstrap: &Path,
        admin_port: u16,
        listener_port: u16,
        dir: &Path,
    ) -> Result<Envoy, String> {
        Envoy::try_start_at(bootstrap, "127.0.0.1", admin_port, listener_port, dir)
    }

    /// [`Envoy::try_start`] with the admin on another loopback address
    /// (several Envoys, one admin port: as pods, each on its own IP).
    pub fn try_start_at(
        bootstrap: &Path,
        admin_host: &str,
        admin_port: u16,
        listener_port: u16,
        dir: &Path,
    ) -> Result<Envoy, String> {
        let log = dir.join("envoy.log");
        let child = Command::new(paths::envoy())
            .arg("-c")
            .arg(bootstrap)
            // Several Envoys run at once (one per test): no shared memory
            // between them, one worker each to spare the CPU.
            .args(["--disable-hot-restart", "--concurrency", "1", "--log-level"])
            // ATTACHE_E2E_ENVOY_LOG_LEVEL=debug when a failure needs Envoy's story.
            .arg(std::env::var("ATTACHE_E2E_ENVOY_LOG_LEVEL").unwrap_or_else(|_| "warn".to_owned()))
            .stdout(Stdio::null())
            .stderr(File::create(&log).expect("create envoy log"))
            .spawn()
            .expect("start envoy");
        let mut envoy = Envoy {
            admin: format!("http://{admin_host}:{admin_port}"),
            listener: format!("http://127.0.0.1:{listener_port}"),
            process: Guarded::new("envoy", child, &log),
        };
        envoy.wait_ready(bootstrap, listener_port)?;
        Ok(envoy)
    }

    fn wait_ready(&mut self, bootstrap: &Path, listener_port: u16) -> Result<(), String> {
        let started = Instant::now();
        loop {
            if self.process.has_exited() {
                return Err(self.process.log_tail());
            }
            if self.is_live(bootstrap) && TcpStream::connect(("127.0.0.1", listener_port)).is_ok() {
                return Ok(());
            }
            assert!(
                started.elapsed() < READY_WITHIN,
                "envoy not ready within {READY_WITHIN:?}; log:\n{}",
                self.process.log_tail()
            );
            sleep(Duration::from_millis(50));
        }
    }

    /// LIVE, and really this Envoy: on a shared machine another Envoy may
    /// answer on a port that was free a moment ago, so the admin must name
    /// our bootstrap.
    fn is_live(&self, bootstrap: &Path) -> bool {
        let Ok(reply) = client::try_get(&format!("{}/server_info", self.admin), &[]) else {
            return false;
        };
        let Ok(info) = serde_json::from_str::<serde_json::Value>(&reply.body) else {
            return false;
        };
        info["state"] == "LIVE"
            && info["command_line_options"]["config_path"].as_str() == bootstrap.to_str()
    }

    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    pub fn log_tail(&self) -> String {
        self.process.log_tail()
    }

    /// The value of one admin counter or gauge (`/stats?filter=`), 0 when absent.
    pub fn stat(&self, name: &str) -> u64 {
        let reply = client::get(&format!("{}/stats?filter=^{name}$", self.admin), &[]);
        reply
            .body
            .lines()
            .find_map(|line| line.strip_prefix(&format!("{name}: ")))
            .and_then(|value| value.trim().parse().ok())
            .unwrap_or(0)
    }
}

/// `envoy --mode validate -c BOOTSTRAP`: Envoy's own verdict on a config.
pub fn validate(bootstrap: &Path) -> Output {
    Command::new(paths::envoy())
        .args(["--mode", "validate", "--disable-hot-restart", "-c"])
        .arg(bootstrap)
        .output()
        .expect("run envoy --mode validate")
}
