//! `kubectl attache`: the same binary installed as a kubectl plugin
//! (kubectl runs `kubectl-attache` found on PATH, a symlink or a copy).
//! Under that name its help and usage lines say `kubectl attache`; under
//! `kubectl_complete-attache` it answers kubectl's shell completion
//! (kubectl 1.26+ asks that executable for a plugin's candidates, in
//! Cobra's `__complete` format: one candidate a line, then `:DIRECTIVE`).

use std::ffi::OsStr;
use std::path::Path;

use clap::{Arg, Command};

/// The plugin's executable name, as kubectl looks it up.
pub const PLUGIN: &str = "kubectl-attache";
/// The completion helper kubectl runs for the plugin.
pub const COMPLETE: &str = "kubectl_complete-attache";
/// What help and usage call the command under the plugin's name.
pub const PLUGIN_COMMAND: &str = "kubectl attache";

/// Cobra's ShellCompDirectiveNoFileComp: the candidates are all there is.
const NO_FILES: u8 = 4;
/// Cobra's ShellCompDirectiveDefault: let the shell complete file names.
const FILES: u8 = 0;

/// How the binary was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Invocation {
    Attache,
    Plugin,
    Complete,
}

impl Invocation {
    /// From `argv[0]`: its file name decides (an `.exe` suffix ignored).
    pub fn from_argv0(argv0: Option<&OsStr>) -> Invocation {
        let name = argv0
            .and_then(|a| Path::new(a).file_stem())
            .and_then(OsStr::to_str)
            .unwrap_or_default();
        match name {
            PLUGIN => Invocation::Plugin,
            COMPLETE => Invocation::Complete,
            _ => Invocation::Attache,
        }
    }
}

/// `command` as `kubectl attache`: the usage lines and every command's
/// examples say so.
pub fn as_plugin(command: Command) -> Command {
    rename(command.bin_name(PLUGIN_COMMAND), PLUGIN_COMMAND)
}

fn rename(mut command: Command, bin: &str) -> Command {
    if let Some(help) = command.get_after_help() {
        let text = help.to_string().replace("  attache ", "  kubectl attache ");
        command = command.after_help(text);
    }
    let names: Vec<String> = command
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for name in names {
        let sub_bin = format!("{bin} {name}");
        command = command.mut_subcommand(&name, |sub| rename(sub.bin_name(&sub_bin), &sub_bin));
    }
    command
}

/// The completion of `words` (what follows `kubectl attache`, the last
/// one being completed), in Cobra's format.
pub fn complete(command: &Command, words: &[String]) -> String {
    let (partial, done) = match words.split_last() {
        Some((last, done)) => (last.as_str(), done),
        None => ("", words),
    };
    let mut current = command;
    let mut value_of: Option<&Arg> = None;
    for word in done {
        if value_of.take().is_some() {
            continue;
        }
        if let Some(long) = word.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((name, _)) => (name, true),
                None => (long, false),
            };
            let arg = current.get_arguments().find(|a| a.get_long() == Some(name));
            value_of = arg.filter(|a| !inline && takes_value(a));
        } else if let Some(short) = word.strip_prefix('-').filter(|s| s.chars().count() == 1) {
            let arg = current
                .get_arguments()
                .find(|a| a.get_short().map(String::from).as_deref() == Some(short));
            value_of = arg.filter(|a| takes_value(a));
        } else if let Some(sub) = current.find_subcommand(word) {
            current = sub;
        }
    }
    let (candidates, directive): (Vec<String>, u8) = match value_of {
        Some(arg) => {
            let values: Vec<String> = arg
                .get_possible_values()
                .iter()
                .filter(|v| !v.is_hide_set())
                .map(|v| v.get_name().to_string())
                .collect();
            if values.is_empty() {
                (Vec::new(), FILES)
            } else {
                (values, NO_FILES)
            }
        }
        None if partial.starts_with('-') => {
            let mut flags: Vec<String> = current
                .get_arguments()
                .filter(|a| !a.is_hide_set())
                .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
                .collect();
            flags.push("--help".into());
            (flags, NO_FILES)
        }
        None if current.has_subcommands() => (
            current
                .get_subcommands()
                .filter(|s| !s.is_hide_set())
                .map(|s| s.get_name().to_string())
                .collect(),
            NO_FILES,
        ),
        None => (Vec::new(), FILES),
    };
    let mut out: String = candidates
        .into_iter()
        .filter(|c| c.starts_with(partial))
        .map(|c| c + "\n")
        .collect();
    out.push_str(&format!(":{directive}\n"));
    out
}

fn takes_value(arg: &Arg) -> bool {
    arg.get_action().takes_values()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn words(text: &str) -> Vec<String> {
        let mut w: Vec<String> = text.split(' ').map(String::from).collect();
        if text.is_empty() {
            w = vec![String::new()];
        }
        w
    }

    #[test]
    fn the_name_decides_how_the_binary_behaves() {
        let of = |p: &str| Invocation::from_argv0(Some(OsStr::new(p)));
        assert_eq!(of("/usr/local/bin/kubectl-attache"), Invocation::Plugin);
        assert_eq!(of("kubectl_complete-attache"), Invocation::Complete);
        assert_eq!(of("C:/bin/kubectl-attache.exe"), Invocation::Plugin);
        assert_eq!(of("/usr/bin/attache"), Invocation::Attache);
        assert_eq!(Invocation::from_argv0(None), Invocation::Attache);
    }

    #[test]
    fn completion_walks_commands_flags_and_values() {
        let cli = crate::cmd::Cli::command();
        assert_eq!(complete(&cli, &words("ex")), "explain\n:4\n");
        assert_eq!(complete(&cli, &words("explain --rou")), "--route\n:4\n");
        assert_eq!(complete(&cli, &words("explain -o ")), "table\njson\n:4\n");
        assert_eq!(
            complete(&cli, &words("explain --output=json -o j")),
            "json\n:4\n"
        );
        // A path: the shell's file completion.
        assert_eq!(complete(&cli, &words("explain -f ")), ":0\n");
        assert_eq!(complete(&cli, &words("render ")).lines().last(), Some(":4"));
        assert!(complete(&cli, &words("")).starts_with("resolve\nexplain\nstatus\n"));
    }
}
