//! `attache watch`: re-resolve whenever an input changes and swap the
//! output files atomically.
//!
//! Polling, not file-system events: it is portable, needs no dependency, and
//! sees every way a file can change (editors that rename, `kubectl get >`,
//! ConfigMap symlink swaps). Inputs are a handful of small files, so reading
//! them each interval costs nothing worth an event library.
//!
//! The watch never lies (docs/envoy.md, "attache watch"): the ECDS file Envoy
//! reads is written before `--out`, `--out` advances only once the ECDS file
//! is written, and a write that fails is retried with back-off, with each
//! message saying which files were and were not written.

mod fingerprint;
mod generation;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use attache_core::topology::ObjectKey;

use super::parse_key;
use super::render::{ecds_value, encode_for, load_and_resolve, Loaded};
use super::{CliError, InputArgs};
use crate::input::ReadLimits;
use crate::output::{pretty_json, write_atomically};
use fingerprint::fingerprint;
use generation::{generation_of_ecds_file, stamp_generation};

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Example:
  attache watch -f examples/shop/ --out run/attache.json \\
      --ecds run/attache-ecds.yaml --wasm attache_filter.wasm

Prints `wrote generation N (R routes)` on standard output after each write.
Input with errors (unreadable YAML, no such Gateway, an invalid policy) is not
written: the last good files stay and standard error says why. The ECDS file
is written first and --out only after it, so --out never claims what Envoy
does not have; a failed write is retried with back-off until it succeeds.
Generations continue from the generation in the current ECDS file. A FIFO,
device or socket in an input directory is skipped with a warning. Runs until
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

/// The longest wait between two tries of a failed write.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

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
    let mut generation = args
        .ecds
        .as_deref()
        .and_then(generation_of_ecds_file)
        .unwrap_or(0);
    let mut pending: Option<Pending> = None;
    let mut retry = Retry::new(interval);
    let mut acted_on: Option<u64> = None;
    loop {
        let seen = fingerprint(&args.input.files, &ours, args.input.limits.max_input_bytes);
        if acted_on != Some(seen) {
            // Debounce: act only on a state that held for a whole interval.
            std::thread::sleep(interval);
            if fingerprint(&args.input.files, &ours, args.input.limits.max_input_bytes) != seen {
                continue;
            }
            acted_on = Some(seen);
            match prepare(&args, generation + 1) {
                Ok(next) => {
                    pending = Some(next);
                    retry = Retry::new(interval);
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
        if let Some(next) = pending.as_mut().filter(|_| retry.due()) {
            match next.write(&args.out) {
                Ok(()) => {
                    generation = next.generation;
                    announce(&format!(
                        "wrote generation {generation} ({} routes)",
                        next.routes
                    ));
                    pending = None;
                }
                Err(failure) => {
                    let wait = retry.failed();
                    eprintln!(
                        "error: {failure}\n  trying again in {} ms",
                        wait.as_millis()
                    );
                }
            }
        }
        std::thread::sleep(interval);
    }
}

/// One generation's files, kept until every one of them is written.
struct Pending {
    generation: u64,
    routes: usize,
    /// The ECDS file and its text; `None` once written (or not asked for).
    ecds: Option<(PathBuf, String)>,
    document: String,
}

impl Pending {
    /// ECDS first, then `--out`; on failure says what was and was not
    /// written, and keeps what is left for the next try.
    fn write(&mut self, out: &Path) -> Result<(), String> {
        let generation = self.generation;
        if let Some((path, text)) = &self.ecds {
            write_atomically(path, text.as_bytes()).map_err(|err| {
                format!(
                    "generation {generation} not written: {err}\n  nothing was written: Envoy keeps its current configuration and {} is left as it was",
                    out.display()
                )
            })?;
            self.ecds = None;
        }
        write_atomically(out, self.document.as_bytes()).map_err(|err| {
            format!("generation {generation}: the ECDS file was written (Envoy has it), but {err}")
        })
    }
}

/// Back-off for failed writes: the poll interval, doubled after each
/// failure, at most [`MAX_BACKOFF`].
struct Retry {
    next_try: Instant,
    wait: Duration,
    interval: Duration,
}

impl Retry {
    fn new(interval: Duration) -> Self {
        Retry {
            next_try: Instant::now(),
            wait: interval,
            interval,
        }
    }

    fn due(&self) -> bool {
        Instant::now() >= self.next_try
    }

    /// Records a failure; returns how long until the next try.
    fn failed(&mut self) -> Duration {
        let wait = self.wait.max(self.interval);
        self.next_try = Instant::now() + wait;
        self.wait = (wait * 2).min(MAX_BACKOFF);
        wait
    }
}

/// Resolves and renders everything for `generation` before anything is
/// written: either every output is replaced or none is.
fn prepare(args: &Args, generation: u64) -> Result<Pending, CliError> {
    let Loaded {
        resolved, errors, ..
    } = load_and_resolve(
        &args.input,
        args.gateway.as_ref(),
        ReadLimits {
            skip_irregular_in_directories: true,
            ..ReadLimits::default()
        },
    )?;
    if errors > 0 {
        return Err(CliError::InvalidInput(errors));
    }
    let document = pretty_json(&resolved.resolution.document)?;
    let ecds = match (&args.ecds, &args.wasm) {
        (Some(path), Some(wasm)) => {
            let mut value = ecds_value(&resolved, wasm)?;
            stamp_generation(&mut value, generation);
            Some((path.clone(), encode_for(&value, Some(path))?))
        }
        _ => None,
    };
    Ok(Pending {
        generation,
        routes: resolved.resolution.document.routes.len(),
        ecds,
        document,
    })
}

/// One line on stdout, flushed at once: tests and scripts wait for it.
fn announce(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
}
