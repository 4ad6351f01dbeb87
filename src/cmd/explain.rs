//! `attache explain` (being built).

use std::process::ExitCode;

use super::{CliError, InputArgs};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub input: InputArgs,
}

pub fn run(_args: Args) -> Result<ExitCode, CliError> {
    Err(CliError::Usage("attache explain is not built yet".into()))
}
