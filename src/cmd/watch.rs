//! `attache watch`: re-resolve whenever an input changes and swap the
//! output files atomically.
//!
//! Polling, not file-system events: it is portable, needs no dependency, and
//! sees every way a file can change (editors that rename, `kubectl get >`,
//! ConfigMap symlink swaps). Inputs are a handful of small files, so reading
//! them each interval costs nothing worth an event library.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use attache_core::topology::ObjectKey;

use super::pretty_json;
use super::render::{ecds_value, encode_for, load_and_resolve, Loaded};
use super::resolve::{parse_key, write_atomically};
use super::{CliError, InputArgs};

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Example:
  attache watch -f examples/shop/ --out run/attache.json \\
      --ecds run/attache-ecds.yaml --wasm attache_filter.wasm

Prints `wrote generation N (R routes)` on standard output after each write.
Input with errors (unreadable YAML, no such Gateway, an invalid policy) is not
written: the last good files stay and standard error says why. Runs until
stopped.")]
pub struct Args {
    #[command(flatten)]
    pub input: InputArgs,
    /// The Gateway; may be left out when the input has exactly one.
    #[arg(long, value_name = "NS/NAME", value_parser = parse_key)]
    pub gateway: Option<ObjectKey>,
    /// The schema-1 JSON document, replaced atomically on every change.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Also write the ECDS file Envoy watches (atomically: Envoy applies it
    /// when it is renamed into place).
    #[arg(long, value_name = "FILE", requires = "wasm")]
    pub ecds: Option<PathBuf>,
    /// The filter's .wasm, for the ECDS file.
    #[arg(long, value_name = "FILE", requires = "ecds")]
    pub wasm: Option<String>,
    /// How often to look at the inputs. A change is acted on once it has
    /// stayed the same for one more interval (so a file being written is
    /// not read half-way).
    #[arg(long, value_name = "MS", default_value_t = 200, value_parser = clap::value_parser!(u64).range(10..))]
    pub interval_ms: u64,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    if args.input.files.iter().any(|f| f.as_os_str() == "-") {
        return Err(CliError::Usage(
            "attache watch reads files, not standard input ('-'): it must read them again".into(),
        ));
    }
    let interval = Duration::from_millis(args.interval_ms);
    let ours: Vec<&Path> = [Some(args.out.as_path()), args.ecds.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    let mut generation: u64 = 0;
    let mut acted_on: Option<u64> = None;
    loop {
        let seen = fingerprint(&args.input.files, &ours);
        if acted_on != Some(seen) {
            // Debounce: act only on a state that held for a whole interval.
            std::thread::sleep(interval);
            if fingerprint(&args.input.files, &ours) != seen {
                continue;
            }
            acted_on = Some(seen);
            match write_generation(&args) {
                Ok(routes) => {
                    generation += 1;
                    announce(&format!("wrote generation {generation} ({routes} routes)"));
                }
                Err(err) => {
                    let kept = if generation == 0 {
                        "nothing written yet".to_string()
                    } else {
                        format!("keeping generation {generation}")
                    };
                    eprintln!("error: {err:#}\n  {kept}; waiting for the input to change");
                }
            }
        }
        std::thread::sleep(interval);
    }
}

/// Resolves and renders everything first, then writes: either every output
/// is replaced or none is.
fn write_generation(args: &Args) -> Result<usize, CliError> {
    let Loaded {
        resolved, errors, ..
    } = load_and_resolve(
        &args.input,
        args.gateway.as_ref(),
        crate::input::ReadLimits {
            skip_irregular_in_directories: true,
            ..Default::default()
        },
    )?;
    if errors > 0 {
        return Err(CliError::InvalidInput(errors));
    }
    let document = pretty_json(&resolved.resolution.document)?;
    let ecds = match (&args.ecds, &args.wasm) {
        (Some(path), Some(wasm)) => {
            Some((path, encode_for(&ecds_value(&resolved, wasm)?, Some(path))?))
        }
        _ => None,
    };
    write_atomically(&args.out, document.as_bytes())?;
    if let Some((path, text)) = ecds {
        write_atomically(path, text.as_bytes())?;
    }
    Ok(resolved.resolution.document.routes.len())
}

/// One line on stdout, flushed at once: tests and scripts wait for it.
fn announce(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
}

/// A digest of every input file's path and bytes (what `-f` would read:
/// directories recursively, .yaml/.yml/.json), leaving out our own outputs
/// should they sit among the inputs. A missing or unreadable path counts
/// as a state too, so its appearance is a change.
fn fingerprint(paths: &[PathBuf], ours: &[&Path]) -> u64 {
    let mut hasher = DefaultHasher::new();
    for path in paths {
        hash_path(path, ours, &mut hasher);
    }
    hasher.finish()
}

fn hash_path(path: &Path, ours: &[&Path], hasher: &mut DefaultHasher) {
    if ours.iter().any(|o| same_file(o, path)) {
        return;
    }
    path.hash(hasher);
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = match std::fs::read_dir(path) {
            Ok(read) => read.filter_map(|e| e.ok().map(|e| e.path())).collect(),
            Err(err) => return err.kind().hash(hasher),
        };
        entries.sort();
        for entry in entries {
            let manifest = entry
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"));
            if entry.is_dir() || manifest {
                hash_path(&entry, ours, hasher);
            }
        }
        return;
    }
    match std::fs::read(path) {
        Ok(bytes) => bytes.hash(hasher),
        Err(err) => err.kind().hash(hasher),
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
        let print = || fingerprint(&inputs, &[out.as_path()]);
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
}
