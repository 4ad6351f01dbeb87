//! `attache resolve`: the schema-1 document for one Gateway.

use std::path::PathBuf;
use std::process::ExitCode;

use attache_core::topology::ObjectKey;

use super::load::{load_and_resolve_source, Loaded};
use super::source::SourceArgs;
use super::{parse_key, CliError};
use crate::output::{pretty_json, print_stdout, write_atomically};

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
    pub input: SourceArgs,
    /// The Gateway to resolve; may be left out when the input has exactly one.
    #[arg(long, value_name = "NS/NAME", value_parser = parse_key)]
    pub gateway: Option<ObjectKey>,
    /// Write the document to FILE (atomically: temp file + rename) instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub strict: super::strict::Strict,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let Loaded {
        resolved, problems, ..
    } = load_and_resolve_source(&args.input, args.gateway.as_ref())?;
    args.strict.check(problems, 0, "")?;
    let json = pretty_json(&resolved.resolution.document)?;
    match &args.output {
        Some(path) => write_atomically(path, json.as_bytes())?,
        None => print_stdout(&json)?,
    }
    Ok(ExitCode::SUCCESS)
}
