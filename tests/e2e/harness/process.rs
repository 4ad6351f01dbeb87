//! A child process that is killed when the test lets go of it, pass or fail,
//! so no Envoy outlives its test.

use std::path::{Path, PathBuf};
use std::process::Child;

pub struct Guarded {
    name: String,
    child: Child,
    /// Where the child's stderr goes; shown when a test needs to explain.
    pub log: PathBuf,
}

impl Guarded {
    pub fn new(name: &str, child: Child, log: &Path) -> Guarded {
        Guarded {
            name: name.to_owned(),
            child,
            log: log.to_owned(),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn has_exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// The last lines of the log, headed by whose log it is.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        format!(
            "--- {} ({}), last lines:\n{}",
            self.name,
            self.log.display(),
            lines[lines.len().saturating_sub(40)..].join("\n")
        )
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
