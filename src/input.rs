//! Reading manifests: files, directories (recursive), `-` for stdin;
//! multi-document YAML and `kind: List`. Everything here is I/O or syntax;
//! meaning is the core's job. The text itself is read by `attache_input`,
//! which the controller shares for objects from the API.

use std::collections::HashSet;
use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use attache_core::source::SourceDoc;

pub use crate::error::InputError;

/// How much input may cost (docs/semantics.md, "What a policy may not do").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadLimits {
    /// Bytes of one file, or of standard input.
    pub max_input_bytes: u64,
    /// Skip (with a warning on stderr) rather than refuse a non-regular file
    /// found inside a directory: `attache watch` keeps serving updates when
    /// someone drops a FIFO into the directory it watches.
    pub skip_irregular_in_directories: bool,
}

/// The default for `--max-input-bytes`: 64 MiB.
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 64 * 1024 * 1024;

impl Default for ReadLimits {
    fn default() -> Self {
        ReadLimits {
            max_input_bytes: DEFAULT_MAX_INPUT_BYTES,
            skip_irregular_in_directories: false,
        }
    }
}

/// Reads every path in order. Directories are walked recursively in sorted
/// order, taking `.yaml`, `.yml` and `.json` files, so output is
/// deterministic whatever the file system returns.
pub fn read_paths(paths: &[PathBuf], limits: ReadLimits) -> Result<Vec<SourceDoc>, InputError> {
    let mut reader = Reader {
        limits,
        docs: Vec::new(),
        seen_dirs: HashSet::new(),
    };
    for path in paths {
        if path.as_os_str() == "-" {
            let text = read_bounded("-", std::io::stdin().lock(), limits.max_input_bytes)?;
            parse_text("-", &text, &mut reader.docs)?;
        } else {
            reader.read_path(path, false)?;
        }
    }
    Ok(reader.docs)
}

struct Reader {
    limits: ReadLimits,
    docs: Vec<SourceDoc>,
    /// Directories already walked (canonical), so a symlink loop ends.
    seen_dirs: HashSet<PathBuf>,
}

impl Reader {
    fn read_path(&mut self, path: &Path, in_directory: bool) -> Result<(), InputError> {
        let shown = path.display().to_string();
        let meta = metadata(path, &shown)?;
        if meta.is_dir() {
            return self.read_dir(path, &shown);
        }
        let bytes = match read_regular(path, &shown, &meta, self.limits.max_input_bytes) {
            Err(err @ InputError::NotRegular { .. })
                if in_directory && self.limits.skip_irregular_in_directories =>
            {
                eprintln!("warning: {}", err.to_string().replace('\n', "\n  "));
                return Ok(());
            }
            read => read?,
        };
        let text = utf8(&shown, bytes)?;
        parse_text(&shown, &text, &mut self.docs)
    }

    fn read_dir(&mut self, path: &Path, shown: &str) -> Result<(), InputError> {
        let read_err = |source| InputError::Read {
            path: shown.to_string(),
            source,
        };
        let canonical = std::fs::canonicalize(path).map_err(read_err)?;
        if !self.seen_dirs.insert(canonical) {
            return Ok(());
        }
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(read_err)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for entry in entries {
            if entry.is_dir() || is_manifest(&entry) {
                self.read_path(&entry, true)?;
            }
        }
        Ok(())
    }
}

/// Whether a file found in a directory is read as manifests: `.yaml`,
/// `.yml` or `.json` (the one definition; `attache watch` watches the same).
pub fn is_manifest(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
}

/// One regular file of at most `limit` bytes, as bytes, checked as `-f`
/// checks its files: for inputs that are not manifests (`package oci
/// --wasm`), so that `/dev/zero` or a FIFO is refused there too.
pub fn read_regular_file(path: &Path, limit: u64) -> Result<Vec<u8>, InputError> {
    let shown = path.display().to_string();
    let meta = metadata(path, &shown)?;
    read_regular(path, &shown, &meta, limit)
}

/// `metadata` follows symlinks: a link to /dev/zero is a device.
fn metadata(path: &Path, shown: &str) -> Result<std::fs::Metadata, InputError> {
    std::fs::metadata(path).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => InputError::Missing {
            path: shown.to_string(),
        },
        _ => InputError::Read {
            path: shown.to_string(),
            source,
        },
    })
}

/// A FIFO or device is refused before it is opened (opening a FIFO blocks),
/// and a file over `limit` before it is read.
fn read_regular(
    path: &Path,
    shown: &str,
    meta: &std::fs::Metadata,
    limit: u64,
) -> Result<Vec<u8>, InputError> {
    if !meta.is_file() {
        return Err(InputError::NotRegular {
            path: shown.to_string(),
            what: file_kind(meta),
        });
    }
    if meta.len() > limit {
        return Err(InputError::TooLarge {
            path: shown.to_string(),
            limit,
        });
    }
    let file = std::fs::File::open(path).map_err(|source| InputError::Read {
        path: shown.to_string(),
        source,
    })?;
    read_bounded_bytes(shown, file, limit)
}

/// Reads at most `limit` bytes; more is an error rather than a file that
/// grows (or a device) filling memory.
fn read_bounded(shown: &str, source: impl Read, limit: u64) -> Result<String, InputError> {
    utf8(shown, read_bounded_bytes(shown, source, limit)?)
}

fn read_bounded_bytes(shown: &str, source: impl Read, limit: u64) -> Result<Vec<u8>, InputError> {
    let mut bytes = Vec::new();
    source
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|source| InputError::Read {
            path: shown.to_string(),
            source,
        })?;
    if bytes.len() as u64 > limit {
        return Err(InputError::TooLarge {
            path: shown.to_string(),
            limit,
        });
    }
    Ok(bytes)
}

fn utf8(shown: &str, bytes: Vec<u8>) -> Result<String, InputError> {
    String::from_utf8(bytes).map_err(|e| InputError::Read {
        path: shown.to_string(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
    })
}

/// What a non-regular file is, for the message.
fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// Splits a YAML stream into objects: `attache_input::parse_text`, the
/// reader the controller shares, with its error as ours.
pub fn parse_text(file: &str, text: &str, docs: &mut Vec<SourceDoc>) -> Result<(), InputError> {
    Ok(attache_input::parse_text(file, text, docs)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("attache-input-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_fifo_is_refused_without_being_opened() {
        let dir = scratch("fifo");
        let fifo = dir.join("in.yaml");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        // Opening a FIFO with no writer would block this test forever.
        let err = read_paths(std::slice::from_ref(&fifo), ReadLimits::default()).unwrap_err();
        assert!(
            err.to_string().contains("is a FIFO, not a regular file"),
            "{err}"
        );
        // Inside a directory, watch's limits skip it and read the rest.
        std::fs::write(dir.join("ok.yaml"), "kind: A\n").unwrap();
        let limits = ReadLimits {
            skip_irregular_in_directories: true,
            ..ReadLimits::default()
        };
        let docs = read_paths(std::slice::from_ref(&dir), limits).unwrap();
        assert_eq!(docs.len(), 1);
        let err = read_paths(std::slice::from_ref(&dir), ReadLimits::default()).unwrap_err();
        assert!(matches!(err, InputError::NotRegular { .. }), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_symlink_to_dev_zero_is_refused() {
        let dir = scratch("zero");
        let link = dir.join("zero.yaml");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let err = read_paths(&[link], ReadLimits::default()).unwrap_err();
        assert!(err.to_string().contains("is a character device"), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_file_over_the_size_limit_is_refused() {
        let dir = scratch("size");
        let file = dir.join("big.yaml");
        std::fs::write(&file, "#".repeat(799) + "\n").unwrap();
        let limits = ReadLimits {
            max_input_bytes: 799,
            ..ReadLimits::default()
        };
        let err = read_paths(std::slice::from_ref(&file), limits).unwrap_err();
        assert!(
            err.to_string().contains("is larger than 799 bytes"),
            "{err}"
        );
        let limits = ReadLimits {
            max_input_bytes: 800,
            ..ReadLimits::default()
        };
        assert!(read_paths(&[file], limits).is_ok());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn reading_stops_at_the_limit_whatever_the_source_claims() {
        let err = read_bounded("-", std::io::repeat(b'a'), 1024).unwrap_err();
        assert!(
            matches!(err, InputError::TooLarge { limit: 1024, .. }),
            "{err}"
        );
    }

    #[test]
    fn a_symlink_loop_between_directories_ends() {
        let dir = scratch("loop");
        std::fs::write(dir.join("a.yaml"), "kind: A\n").unwrap();
        std::os::unix::fs::symlink(&dir, dir.join("again")).unwrap();
        let docs = read_paths(std::slice::from_ref(&dir), ReadLimits::default()).unwrap();
        assert_eq!(docs.len(), 1);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
