//! `attache`: resolve Gateway API policy attachment for the Attaché filter.
//! A thin shell: argument parsing, file I/O and printing; decisions live in
//! `attache-core`.

mod cmd;
mod input;
mod output;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cmd::Cli::parse();
    match cmd::run(cli) {
        Ok(code) => code,
        // The reader went away (`attache resolve | head`): nothing to say.
        Err(cmd::CliError::ClosedPipe) => ExitCode::SUCCESS,
        Err(err @ cmd::CliError::Strict(_)) => {
            eprintln!("error: {err}");
            ExitCode::from(cmd::strict::STRICT_FAILURE)
        }
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(1)
        }
    }
}
