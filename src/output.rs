//! What every subcommand writes: diagnostics to stderr, text to stdout,
//! files atomically. One place, so that every subcommand behaves the same
//! when its reader goes away or its disk is full.

use std::io::Write;
use std::path::{Path, PathBuf};

use attache_core::{Diagnostic, Inputs, Severity};

use crate::error::CliError;

/// Prints every diagnostic to stderr; returns how many are errors or warnings.
pub fn report(inputs: &Inputs, more: &[Diagnostic]) -> usize {
    let mut problems = 0;
    for d in inputs.diagnostics.iter().chain(more) {
        if d.severity != Severity::Note {
            problems += 1;
        }
        eprintln!("{}: {d}", d.severity);
    }
    problems
}

/// Writes `text` to stdout. A reader that went away (`attache resolve |
/// head`) is not an error: it is [`CliError::ClosedPipe`], which ends the
/// command quietly with exit 0, as `cat` and `grep` do.
pub fn print_stdout(text: &str) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|source| match source.kind() {
            std::io::ErrorKind::BrokenPipe => CliError::ClosedPipe,
            _ => CliError::Write {
                path: "-".into(),
                source,
            },
        })
}

/// Pretty JSON with a trailing newline, as every subcommand prints it; the
/// same value gives the same bytes.
pub fn pretty_json<T: serde::Serialize + ?Sized>(value: &T) -> Result<String, CliError> {
    let mut json =
        serde_json::to_string_pretty(value).map_err(|source| CliError::Json { source })?;
    json.push('\n');
    Ok(json)
}

/// Writes a temp file next to `path` and renames it over, so a reader
/// (Envoy, the filter loader) never sees half a file.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    write_atomically_as(path, bytes, None)
}

/// [`write_atomically`], the file created with `mode` (unix) before a byte
/// is written, so secret content is never readable by others, even briefly.
pub fn write_atomically_with_mode(path: &Path, bytes: &[u8], mode: u32) -> Result<(), CliError> {
    write_atomically_as(path, bytes, Some(mode))
}

fn write_atomically_as(path: &Path, bytes: &[u8], mode: Option<u32>) -> Result<(), CliError> {
    let shown = path.display().to_string();
    let err = |source| CliError::Write {
        path: shown.clone(),
        source,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let tmp = dir.join(format!(".{file_name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        if let Some(mode) = mode {
            use std::os::unix::fs::OpenOptionsExt;
            // A leftover temporary file of another mode must not be reused.
            let _ = std::fs::remove_file(&tmp);
            options.mode(mode);
        }
        #[cfg(not(unix))]
        let _ = mode;
        let mut f = options.open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(err)
}

/// Writes `text` atomically, creating the file's directory first.
pub fn write_file(path: &Path, text: &str) -> Result<(), CliError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| CliError::Write {
            path: dir.display().to_string(),
            source,
        })?;
    }
    write_atomically(path, text.as_bytes())
}

/// Writes `text` atomically with mode 0600 (a private key is in it), in a
/// directory only its owner can enter.
pub fn write_private_file(path: &Path, text: &str) -> Result<(), CliError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let err = |source| CliError::Write {
            path: dir.display().to_string(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(err)?;
        set_mode(dir, 0o700).map_err(err)?;
    }
    write_atomically_with_mode(path, text.as_bytes(), 0o600)
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(_: &Path, _: u32) -> std::io::Result<()> {
    Ok(())
}
