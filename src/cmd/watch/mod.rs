//! `attache watch`: re-resolve whenever an input changes and swap the
//! output files atomically.
//!
//! Polling, not file-system events: it is portable, needs no dependency, and
//! sees every way a file can change (editors that rename, `kubectl get >`,
//! ConfigMap symlink swaps). Inputs are a handful of small files, so reading
//! them each interval costs nothing worth an event library.
//!
//! The watch never lies (docs/envoy.md, "attache watch"): the files Envoy
//! reads are written before `--out`, `--out` advances only once they all
//! are, and a write that fails is retried with back-off, with each message
//! saying which files were and were not written. With `--xds-dir` it also
//! writes the LDS, RDS and CDS files, in the order
//! [`attache_render::xds::transition`] gives, waiting for Envoy between
//! them ([`apply`]).

mod apply;
mod envoy_admin;
mod fingerprint;
mod generation;
mod last_good;
mod live;
mod steps;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use attache_core::topology::ObjectKey;
use attache_render::xds::{self, Step, XdsLayout, XdsOptions};

use super::filter_flags::FilterArgs;
use super::load::{resolve_docs, ListenerArgs, Loaded};
use super::parse_key;
use super::{CliError, InputArgs};
use crate::input::ReadLimits;
use crate::output::pretty_json;
use crate::output::report;
use apply::{Envoy, Failure, Pending};
use attache_core::{DataPlane, Severity};
use fingerprint::fingerprint;
use generation::generation_of_ecds_file;
use last_good::LastGood;
use steps::{file_steps, Targets};

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  attache watch -f examples/shop/ --out run/attache.json \\
      --ecds run/ecds/attache-ecds.json --wasm attache_filter.wasm
  attache watch -f examples/shop/ --out run/attache.json \\
      --ecds run/xds/ecds/attache-ecds.json --wasm attache_filter.wasm \\
      --xds-dir run/xds --backend '*=127.0.0.1:9000' --listener-port http=8080 \\
      --envoy-admin 127.0.0.1:9901
  attache watch -f examples/shop/ --out run/attache.json \\
      --ecds run/ecds/attache-ecds.json \\
      --filter dynamic-module --module target/release/libattache_module.so

Prints `wrote generation N (R routes)` on standard output after each write.
An object whose edit has errors (an invalid policy or route) keeps its last
good version, as an API server would refuse the edit, and every other change
is written; a new object with errors is left out. Input that cannot be used
at all (unreadable YAML, no such Gateway) is not written: the last good files
stay and standard error says why. The ECDS file
is written first and --out only after it, so --out never claims what Envoy
does not have; a failed write is retried with back-off until it succeeds.
With --xds-dir the LDS, RDS and CDS files (for `attache render envoy
--xds-dir`) are rewritten too: policies and clusters before the routes that
use them, routes before what they stop using (docs/envoy.md). A file Envoy
refuses stops the generation until the input changes.
With --strict, input with any error or warning at start ends the watch (exit
3) before anything is written; later changes are handled as above.
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
    /// when it is renamed into place). YAML when FILE ends in .yaml or
    /// .yml, else JSON; name it .json: Envoy re-reads it on every change,
    /// and reads a large document about 6x cheaper from JSON.
    #[arg(long, value_name = "FILE")]
    pub ecds: Option<PathBuf>,
    /// The filter's .wasm, for the ECDS file.
    #[arg(long, value_name = "FILE", requires = "ecds")]
    pub wasm: Option<String>,
    /// With --ecds: which build the ECDS file (and, with --xds-dir, the
    /// listeners) load.
    #[command(flatten)]
    pub filter: FilterArgs,
    /// How often to look at the inputs. A change is acted on once it has
    /// stayed the same for one more interval (so a file being written is
    /// not read half-way).
    #[arg(long, value_name = "MS", default_value_t = 200, value_parser = clap::value_parser!(u64).range(10..))]
    pub interval_ms: u64,
    /// Also write the LDS, RDS and CDS files of the file-based xDS layout
    /// under DIR (as Envoy sees it), in order.
    #[arg(long, value_name = "DIR", requires = "ecds")]
    pub xds_dir: Option<String>,
    #[command(flatten)]
    pub listeners: ListenerArgs,
    /// Envoy's admin interface (HOST:PORT): with --xds-dir, each file is
    /// written once Envoy reports the one before it applied.
    #[arg(long, value_name = "HOST:PORT")]
    pub envoy_admin: Option<String>,
    /// With --xds-dir and no --envoy-admin (or no answer from it): how long
    /// to wait between two files for Envoy to apply the first.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub settle_ms: u64,
    /// At start only: exit (3) instead of waiting when the input has any
    /// error or warning. Once running, a bad change is reported and the last
    /// good files stay, with or without --strict.
    #[command(flatten)]
    pub strict: super::strict::Strict,
}

/// The longest wait between two tries of a failed write.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    if args.input.files.iter().any(|f| f.as_os_str() == "-") {
        return Err(CliError::Usage(
            "attache watch reads files, not standard input ('-'): it must read them again".into(),
        ));
    }
    // Checked before anything is read: the ECDS file names the build.
    match &args.ecds {
        Some(_) => drop(args.filter.binary(args.wasm.as_deref())),
        None => args.filter.check(false),
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
    let layout = args.xds_dir.as_deref().map(XdsLayout::new);
    if layout.is_some() && args.envoy_admin.is_none() {
        // Said once, up front: the order of the writes only protects
        // requests if Envoy applied each file before the next one, and
        // without the admin the watch can only guess how long that takes.
        eprintln!(
            "warning: --xds-dir without --envoy-admin: attache watch cannot see when Envoy has applied a file, so between two ordered writes it only waits --settle-ms ({} ms); give --envoy-admin HOST:PORT to wait for Envoy itself",
            args.settle_ms
        );
    }
    let mut envoy = Envoy {
        admin: args.envoy_admin.as_deref().map(envoy_admin::Admin::new),
        admin_answered: false,
        settle: Duration::from_millis(args.settle_ms),
        has: live::read_live(layout.as_ref(), args.ecds.as_deref()),
    };
    let mut last_good = LastGood::default();
    let mut pending: Option<Pending> = None;
    let mut retry = Retry::new(interval);
    let mut acted_on: Option<u64> = None;
    // Said once a run: the name will not change while it runs.
    let mut told_yaml_cost = false;
    loop {
        let seen = fingerprint(&args.input.files, &ours, args.input.limits.max_input_bytes);
        if acted_on != Some(seen) {
            // Debounce: act only on a state that held for a whole interval.
            std::thread::sleep(interval);
            if fingerprint(&args.input.files, &ours, args.input.limits.max_input_bytes) != seen {
                continue;
            }
            let first = acted_on.is_none();
            acted_on = Some(seen);
            match prepare(
                &args,
                layout.as_ref(),
                &envoy,
                &mut last_good,
                generation + 1,
                first,
            ) {
                Ok(next) => {
                    if !told_yaml_cost {
                        if let Some(notice) = next.files.iter().find_map(|f| f.yaml_cost_notice()) {
                            eprintln!("{notice}");
                            told_yaml_cost = true;
                        }
                    }
                    pending = Some(next);
                    retry = Retry::new(interval);
                }
                // Under --strict the input must be clean at start: any
                // problem ends the watch (exit 3, or 1 for unreadable input).
                Err(err) if first && args.strict.strict => return Err(err),
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
            match next.write(&args.out, &mut envoy) {
                Ok(()) => {
                    generation = next.generation;
                    announce(&format!(
                        "wrote generation {generation} ({} routes)",
                        next.routes
                    ));
                    pending = None;
                }
                Err(Failure::Write(failure)) => {
                    let wait = retry.failed();
                    eprintln!(
                        "error: {failure}\n  trying again in {} ms",
                        wait.as_millis()
                    );
                }
                Err(Failure::Refused(failure)) => {
                    eprintln!("error: {failure}");
                    // Its number is used: the next generation is a new one.
                    generation = next.generation;
                    pending = None;
                }
            }
        }
        std::thread::sleep(interval);
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
/// written: the files in the order Envoy must see them, and `--out`.
fn prepare(
    args: &Args,
    layout: Option<&XdsLayout>,
    envoy: &Envoy,
    last_good: &mut LastGood,
    generation: u64,
    first: bool,
) -> Result<Pending, CliError> {
    let read = args.input.read(ReadLimits {
        skip_irregular_in_directories: true,
        ..ReadLimits::default()
    })?;
    // An object whose edit has errors keeps its last good version (or is
    // left out when new); say why, then resolve what is left.
    let inputs = args.input.parse(&read);
    let errors_before = inputs
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    if first && args.strict.strict && errors_before > 0 {
        report(&inputs, &[]);
        args.strict.check(errors_before, 0, "nothing written")?;
    }
    let docs = match last_good.patch(read, &inputs) {
        Some(patched) if !patched.messages.is_empty() => {
            for d in inputs
                .diagnostics
                .iter()
                .filter(|d| d.severity == Severity::Error)
            {
                eprintln!("{}: {d}", d.severity);
            }
            for message in &patched.messages {
                eprintln!("note: {message}");
            }
            patched.docs
        }
        Some(patched) => patched.docs,
        None => {
            report(&inputs, &[]);
            return Err(CliError::InvalidInput(errors_before));
        }
    };
    let Loaded {
        docs,
        resolved,
        errors,
        problems,
        ..
    } = resolve_docs(
        &args.input.limits,
        docs,
        args.gateway.as_ref(),
        DataPlane::Envoy,
    )?;
    if first {
        args.strict.check(problems, 0, "nothing written")?;
    }
    if errors > 0 {
        return Err(CliError::InvalidInput(errors));
    }
    last_good.record(&docs);
    let document = pretty_json(&resolved.resolution.document)?;
    let next_document = resolved.resolution.filter_document();
    let plan = match (layout, &args.ecds) {
        (Some(layout), Some(ecds)) => {
            let options = XdsOptions {
                ecds_path: ecds.to_string_lossy().into_owned(),
                filter_type_url: args.filter.type_url(),
                listeners: args.listeners.options(),
                layout: layout.clone(),
            };
            let book = args.listeners.address_book(&docs)?;
            let (next, (notes, errors)) = xds::xds_state(&resolved.resolution, &book, &options)?;
            for note in notes {
                eprintln!("note: {note}");
            }
            // The listener is left out; the others are served.
            for error in errors {
                eprintln!("error: {error}");
            }
            xds::transition(Some(&envoy.has), &next)
        }
        _ => vec![Step::Ecds(next_document)],
    };
    let binary = args
        .ecds
        .as_ref()
        .map(|_| args.filter.binary(args.wasm.as_deref()));
    let targets = Targets {
        ecds: args.ecds.as_deref().zip(binary.as_ref()),
        xds: layout,
    };
    Ok(Pending::new(
        generation,
        resolved.resolution.document.routes.len(),
        file_steps(plan, &targets, generation)?,
        document,
    ))
}

/// One line on stdout, flushed at once: tests and scripts wait for it.
fn announce(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
}
