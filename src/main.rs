//! `attache`: resolve Gateway API policy attachment for the Attaché filter.
//! A thin shell: argument parsing, file I/O and printing; decisions live in
//! `attache-core`. Installed as `kubectl-attache` it is the kubectl plugin
//! (`cmd::kubectl`).

#![forbid(unsafe_code)]

mod cmd;
mod error;
mod input;
mod output;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};
use cmd::kubectl::{self, Invocation};

// The controller's rounds allocate and free heavily (a 10,000-route Gateway's
// resolution); mimalloc did them faster than glibc at about the same RSS
// (bench/findings.md, "The controller at 10,000 routes", session 4).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    abort_on_panic();
    let mut args = std::env::args_os();
    let invocation = Invocation::from_argv0(args.next().as_deref());
    let command = match invocation {
        Invocation::Complete => {
            // kubectl passes the words after `kubectl attache`.
            let words: Vec<String> = args.map(|a| a.to_string_lossy().into_owned()).collect();
            print!("{}", kubectl::complete(&cmd::Cli::command(), &words));
            return ExitCode::SUCCESS;
        }
        Invocation::Plugin => kubectl::as_plugin(cmd::Cli::command()),
        Invocation::Attache => cmd::Cli::command(),
    };
    let cli = match cmd::Cli::from_arg_matches(&command.get_matches()) {
        Ok(cli) => cli,
        Err(err) => err.exit(),
    };
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

/// The release profile unwinds on panic for the dynamic module's sake
/// (Cargo.toml); the CLI and the controller keep ending on a panic, as they
/// did under `panic = "abort"`: a controller task that panicked must not
/// leave the process running without it (its Deployment restarts it).
fn abort_on_panic() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        report(info);
        std::process::abort();
    }));
}
