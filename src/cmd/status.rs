//! `attache status`: GEP-713 conditions of every policy, as the YAML list
//! `kubectl get routepolicies -o yaml` would show.

use std::process::ExitCode;

use serde::Serialize;

use super::{CliError, InputArgs};
use crate::output::{print_stdout, report};

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  attache status -f examples/shop/
  attache status -f policies.yaml -f gateways/ 2>/dev/null | grep -B3 -A3 reason:

Every policy gets an Accepted condition (reason Accepted, Invalid, TargetNotFound
or Conflicted); each target (status.ancestors) also gets an Attached condition
whose reason says how much of the policy is in effect there: Attached (every
value it sets), Merged (some; the message names who took the rest) or
Overridden (none). Every Gateway in the input is resolved.")]
pub struct Args {
    #[command(flatten)]
    pub input: InputArgs,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct List<T> {
    api_version: &'static str,
    kind: &'static str,
    items: Vec<T>,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let inputs = args.input.load(Default::default())?;
    let status = attache_core::policy_status(&inputs);
    report(&inputs, &status.diagnostics);
    let list = List {
        api_version: "v1",
        kind: "List",
        items: status.policies,
    };
    let yaml = serde_yaml_ng::to_string(&list).map_err(|source| CliError::Yaml { source })?;
    print_stdout(&yaml)?;
    Ok(ExitCode::SUCCESS)
}
