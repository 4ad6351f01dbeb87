//! External programs some CLI tests drive (Graphviz's `dot`, `tmux`).
//! scripts/test.sh installs them; a test without one skips saying so,
//! except under CI=true, where a missing tool fails it.

use std::path::PathBuf;

/// The program `name` on PATH, or None (skip) outside CI.
pub fn tool(name: &str, package: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    });
    match found {
        Some(path) => Some(path),
        None if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("{name} is needed (apt-get install {package}; scripts/test.sh installs it)")
        }
        None => {
            eprintln!("skipped: {name} is not installed (apt-get install {package}; scripts/test.sh installs it)");
            None
        }
    }
}
