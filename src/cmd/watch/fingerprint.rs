//! What `attache watch` compares between polls: a digest of every input
//! file's path and bytes, as `-f` would read them (directories recursively,
//! .yaml/.yml/.json), leaving out our own outputs should they sit among the
//! inputs. A missing or unreadable path counts as a state too, so its
//! appearance is a change.
//!
//! A FIFO, a device or a socket is never opened (opening a FIFO blocks, and
//! a device may never end): its type is the state. Regular files are read
//! up to the input size limit; directory symlink loops are walked once.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::io::Read;
use std::path::{Path, PathBuf};

pub fn fingerprint(paths: &[PathBuf], ours: &[&Path], max_bytes: u64) -> u64 {
    let mut walk = Walk {
        ours,
        max_bytes,
        hasher: DefaultHasher::new(),
        seen_dirs: HashSet::new(),
    };
    for path in paths {
        walk.path(path);
    }
    walk.hasher.finish()
}

struct Walk<'o> {
    ours: &'o [&'o Path],
    max_bytes: u64,
    hasher: DefaultHasher,
    seen_dirs: HashSet<PathBuf>,
}

impl Walk<'_> {
    fn path(&mut self, path: &Path) {
        if self.ours.iter().any(|o| same_file(o, path)) {
            return;
        }
        path.hash(&mut self.hasher);
        let meta = match std::fs::metadata(path) {
            Ok(meta) => meta,
            Err(err) => return err.kind().hash(&mut self.hasher),
        };
        if meta.is_dir() {
            self.dir(path);
        } else if meta.is_file() {
            self.file(path);
        } else {
            // Never opened: the type is the state.
            format!("{:?}", meta.file_type()).hash(&mut self.hasher);
        }
    }

    fn dir(&mut self, path: &Path) {
        if let Ok(canonical) = path.canonicalize() {
            if !self.seen_dirs.insert(canonical) {
                return;
            }
        }
        let mut entries: Vec<PathBuf> = match std::fs::read_dir(path) {
            Ok(read) => read.filter_map(|e| e.ok().map(|e| e.path())).collect(),
            Err(err) => return err.kind().hash(&mut self.hasher),
        };
        entries.sort();
        for entry in entries {
            if entry.is_dir() || crate::input::is_manifest(&entry) {
                self.path(&entry);
            }
        }
    }

    fn file(&mut self, path: &Path) {
        let mut bytes = Vec::new();
        let read = std::fs::File::open(path).and_then(|f| {
            f.take(self.max_bytes.saturating_add(1))
                .read_to_end(&mut bytes)
        });
        match read {
            Ok(_) => bytes.hash(&mut self.hasher),
            Err(err) => err.kind().hash(&mut self.hasher),
        }
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_follows_contents_new_files_and_skips_our_outputs() {
        let dir = std::env::temp_dir().join(format!("attache-watch-fp-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let out = dir.join("out.json");
        std::fs::write(dir.join("a.yaml"), "kind: A\n").unwrap();
        let inputs = [dir.clone()];
        let print = || fingerprint(&inputs, &[out.as_path()], 1 << 20);
        let first = print();
        assert_eq!(first, print(), "same state, same fingerprint");
        std::fs::write(&out, "{}").unwrap();
        assert_eq!(first, print(), "our own output is not an input change");
        std::fs::write(dir.join("notes.txt"), "x").unwrap();
        assert_eq!(first, print(), "files -f would not read are ignored");
        std::fs::write(dir.join("sub/b.yml"), "kind: B\n").unwrap();
        let second = print();
        assert_ne!(
            first, second,
            "a new manifest in a subdirectory is a change"
        );
        std::fs::write(dir.join("a.yaml"), "kind: C\n").unwrap();
        assert_ne!(second, print(), "same size, other bytes is a change");
        std::fs::remove_dir_all(&dir).unwrap();
        assert_ne!(first, print(), "a vanished input is a change");
    }

    #[test]
    fn a_fifo_among_the_inputs_is_never_opened() {
        let dir = std::env::temp_dir().join(format!("attache-watch-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.yaml"), "kind: A\n").unwrap();
        let status = std::process::Command::new("mkfifo")
            .arg(dir.join("pipe.yaml"))
            .status()
            .unwrap();
        assert!(status.success());
        std::os::unix::fs::symlink("/dev/zero", dir.join("zero.yaml")).unwrap();
        std::os::unix::fs::symlink(&dir, dir.join("loop")).unwrap();
        // Would block forever (FIFO), never end (/dev/zero) or recurse
        // forever (loop) if any were read as a file or walked twice.
        let inputs = [dir.clone()];
        let first = fingerprint(&inputs, &[], 1 << 20);
        assert_eq!(first, fingerprint(&inputs, &[], 1 << 20));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
