//! A per-test working directory under the target dir. Removed when the test
//! passes; kept (and named on stderr) when it fails, because Envoy's log and
//! the rendered files are what explains the failure.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

pub struct Scratch {
    path: PathBuf,
}

impl Scratch {
    pub fn new(label: &str) -> Scratch {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        // Cargo's scratch space for integration tests (target/tmp), so a
        // kept directory sits with the build; the system's otherwise.
        let base =
            option_env!("CARGO_TARGET_TMPDIR").map_or_else(std::env::temp_dir, PathBuf::from);
        let path = base.join(format!(
            "attache-e2e-{}-{label}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path).expect("create scratch dir");
        Scratch { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the ECDS file goes: a directory of its own, because Envoy
    /// re-reads the file on every change in its watched directory, and a log
    /// written beside it would keep Envoy busy reloading.
    pub fn ecds_file(&self) -> PathBuf {
        let dir = self.path.join("ecds");
        std::fs::create_dir_all(&dir).expect("create ecds dir");
        dir.join("attache-ecds.json")
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("e2e: kept {} for inspection", self.path.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}
