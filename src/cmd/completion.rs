//! `attache completion SHELL` and `attache man`: shell completion scripts
//! and man pages generated from the clap definition itself, so that they
//! cannot drift from the flags.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::CommandFactory;
use clap_complete::Shell;

use super::{Cli, CliError};
use crate::output::{print_stdout, write_atomically};

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  attache completion bash > ~/.local/share/bash-completion/completions/attache
  attache completion zsh > \"${fpath[1]}/_attache\"
  attache completion fish > ~/.config/fish/completions/attache.fish")]
pub struct CompletionArgs {
    /// The shell to write the completion script for.
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  attache man | man -l -                     # read attache(1) now
  attache man --out-dir /usr/local/share/man/man1   # attache.1, attache-<command>.1, attache-render-envoy.1, ...")]
pub struct ManArgs {
    /// Write attache.1 and one attache-<command>.1 per subcommand (nested ones too: attache-render-envoy.1) into DIR
    /// (which must exist) instead of printing attache.1.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

pub fn completion(args: CompletionArgs) -> Result<ExitCode, CliError> {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "attache", &mut out);
    print_stdout(&String::from_utf8_lossy(&out))?;
    Ok(ExitCode::SUCCESS)
}

/// One page as roff.
fn page(cmd: clap::Command) -> Result<Vec<u8>, CliError> {
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd)
        .render(&mut out)
        .map_err(|source| CliError::Write {
            path: "-".into(),
            source,
        })?;
    Ok(out)
}

pub fn man(args: ManArgs) -> Result<ExitCode, CliError> {
    let cli = Cli::command();
    let Some(dir) = args.out_dir else {
        print_stdout(&String::from_utf8_lossy(&page(cli)?))?;
        return Ok(ExitCode::SUCCESS);
    };
    write_atomically(&dir.join("attache.1"), &page(cli.clone())?)?;
    write_pages(&dir, &cli, "attache", "attache")?;
    Ok(ExitCode::SUCCESS)
}

/// One page per subcommand of `command`, and per subcommand of those
/// (`attache-render-envoy.1`): the flags of `render envoy` are on a page.
fn write_pages(
    dir: &std::path::Path,
    command: &clap::Command,
    name: &str,
    bin: &str,
) -> Result<(), CliError> {
    for sub in command.get_subcommands() {
        let sub_name = format!("{name}-{}", sub.get_name());
        let sub_bin = format!("{bin} {}", sub.get_name());
        let page_of = sub
            .clone()
            .display_name(sub_name.clone())
            .bin_name(sub_bin.clone())
            .version(env!("CARGO_PKG_VERSION"));
        write_atomically(&dir.join(format!("{sub_name}.1")), &page(page_of)?)?;
        write_pages(dir, sub, &sub_name, &sub_bin)?;
    }
    Ok(())
}
