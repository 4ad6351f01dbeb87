//! `attache render ...` (being built).

use std::process::ExitCode;

use super::{CliError, InputArgs};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// An Envoy bootstrap for one Gateway, loading the filter through ECDS.
    Envoy {
        #[command(flatten)]
        input: InputArgs,
    },
}

pub fn run(_command: Command) -> Result<ExitCode, CliError> {
    Err(CliError::Usage("attache render is not built yet".into()))
}
