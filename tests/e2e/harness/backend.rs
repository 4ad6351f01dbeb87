//! The test backend (crates/attache-testbackend) as a process, or the one a
//! running docker-compose stack exposes.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use super::client;
use super::paths;
use super::process::Guarded;

pub struct Backend {
    /// `127.0.0.1:PORT` (or the compose stack's host:port).
    pub addr: String,
    _process: Option<Guarded>,
}

impl Backend {
    /// Starts a backend on an ephemeral port; its stderr goes to `dir`.
    pub fn start(dir: &Path) -> Backend {
        let log = dir.join("backend.log");
        let mut child = Command::new(paths::testbackend())
            .args(["--listen", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(File::create(&log).expect("create backend log"))
            .spawn()
            .expect("start attache-testbackend");
        let stdout = child.stdout.take().expect("backend stdout");
        let process = Guarded::new("attache-testbackend", child, &log);
        let mut first = String::new();
        BufReader::new(stdout)
            .read_line(&mut first)
            .expect("read the backend's first line");
        let addr = first
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line from the backend: {first:?}"))
            .to_owned();
        Backend {
            addr,
            _process: Some(process),
        }
    }

    /// A backend somebody else runs (docker-compose), e.g. `http://127.0.0.1:9000`.
    pub fn external(url: &str) -> Backend {
        let addr = url
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_owned();
        Backend {
            addr,
            _process: None,
        }
    }

    /// How many attempts of `key` reached the backend.
    pub fn attempts(&self, key: &str) -> u64 {
        let reply = client::get(&format!("http://{}/__attempts/{key}", self.addr), &[]);
        assert_eq!(reply.status, 200, "attempt query failed: {}", reply.body);
        reply.json()["attempts"]
            .as_u64()
            .unwrap_or_else(|| panic!("no attempts in {}", reply.body))
    }
}

/// A key no other test (or earlier run against a long-lived backend) used.
pub fn unique_key(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{prefix}-{}-{nanos}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}
