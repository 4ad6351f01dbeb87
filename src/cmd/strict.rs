//! `--strict` and the exit codes every subcommand shares: one definition,
//! printed in `attache --help` and the README.

/// The exit codes, as `attache --help` and the README list them.
pub const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  the input or the environment: unreadable or empty input, no such
     Gateway, a file that cannot be written, a failing git read, a
     cluster that cannot be read
  2  usage: an unknown flag or a bad flag value
  3  --strict: an error or warning was reported (each printed on standard
     error), or a policy shown by `status` is not Accepted or, read from
     the cluster, drifts from the status written there
  4  `diff --exit-code` or `--fail-on`: a change of a listed kind";

/// Exit code of `--strict` when any policy (or other input) problem was found.
pub const STRICT_FAILURE: u8 = 3;

/// The `--strict` flag of every command that resolves.
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct Strict {
    /// Exit 3 when any error or warning is reported (an invalid or
    /// misspelt policy, a target that does not exist, a near-miss kind or
    /// group); without it those are reported and the rest still applies.
    #[arg(long)]
    pub strict: bool,
}

impl Strict {
    /// Under `--strict`, `problems` (errors and warnings already printed)
    /// or `more` (the command's own findings, described by `what`) end the
    /// command with [`CliError::Strict`](super::CliError::Strict): exit 3,
    /// one `error:` line saying why.
    pub fn check(self, problems: usize, more: usize, what: &str) -> Result<(), super::CliError> {
        if !self.strict || problems + more == 0 {
            return Ok(());
        }
        let mut why = Vec::new();
        if problems > 0 {
            why.push(format!("{problems} problem(s) reported above"));
        }
        if more > 0 {
            why.push(what.to_string());
        }
        Err(super::CliError::Strict(why.join("; ")))
    }
}
