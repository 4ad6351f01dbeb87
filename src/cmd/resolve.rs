//! `attache resolve`: the schema-1 document for one Gateway. Also home of
//! the input helpers the other read-only subcommands share.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use attache_core::topology::ObjectKey;
use attache_core::{Diagnostic, Inputs, Severity};

use super::{CliError, InputArgs};

/// Exit code of `--strict` when any policy (or other input) problem was found.
pub const STRICT_FAILURE: u8 = 3;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  attache resolve -f examples/shop/                       # the only Gateway in there
  attache resolve -f gw.yaml -f routes/ --gateway infra/edge -o edge.json
  kubectl get gateways,httproutes,routepolicies -A -o yaml | attache resolve -f - --strict

Diagnostics go to standard error. Exit codes: 0 ok; 1 unreadable or malformed
input, or no such Gateway; 3 with --strict when any error or warning was found
(the output is then not written).")]
pub struct Args {
    #[command(flatten)]
    pub input: InputArgs,
    /// The Gateway to resolve; may be left out when the input has exactly one.
    #[arg(long, value_name = "NS/NAME", value_parser = parse_key)]
    pub gateway: Option<ObjectKey>,
    /// Write the document to FILE (atomically: temp file + rename) instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Fail (exit 3) when any policy or object is invalid, targets nothing
    /// that exists, or draws a warning.
    #[arg(long)]
    pub strict: bool,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let inputs = load(&args.input)?;
    let gateway = attache_core::select_gateway(&inputs, args.gateway.as_ref())?;
    let resolved = attache_core::resolve(&inputs, &gateway)?;
    let problems = report(&inputs, &resolved.diagnostics);
    if args.strict && problems > 0 {
        eprintln!("error: --strict: {problems} problem(s) above; nothing written");
        return Ok(ExitCode::from(STRICT_FAILURE));
    }
    let json = super::pretty_json(&resolved.resolution.document)?;
    match &args.output {
        Some(path) => write_atomically(path, json.as_bytes())?,
        None => print_stdout(&json)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Reads and parses every input.
pub fn load(input: &InputArgs) -> Result<Inputs, CliError> {
    input.load(crate::input::ReadLimits::default())
}

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

/// `NAMESPACE/NAME`.
pub fn parse_key(text: &str) -> Result<ObjectKey, String> {
    match text.split_once('/') {
        Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok(ObjectKey {
                namespace: ns.to_string(),
                name: name.to_string(),
            })
        }
        _ => Err(format!("{text:?} is not NAMESPACE/NAME (e.g. infra/edge)")),
    }
}

pub fn print_stdout(text: &str) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|source| CliError::Write {
            path: "-".into(),
            source,
        })
}

/// Writes a temp file next to `path` and renames it over, so a reader
/// (Envoy, the filter loader) never sees half a file.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
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
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(err)
}
