//! `kubectl attache`: the binary under the plugin's name (a symlink, as
//! krew and `ln -s` install it) behaves as `attache`, with help and usage
//! saying `kubectl attache`; `kubectl_complete-attache` answers kubectl's
//! shell completion; and a real kubectl finds both on PATH.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
#[path = "support/tools.rs"]
mod tools;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::{fixture, scratch, text, workspace};

/// A directory holding the binary under both plugin names.
fn plugin_dir(label: &str) -> PathBuf {
    let dir = scratch(label);
    for name in ["kubectl-attache", "kubectl_complete-attache"] {
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_attache"), dir.join(name)).unwrap();
    }
    dir
}

fn run(program: &Path, args: &[&str]) -> Output {
    Command::new(program)
        .current_dir(workspace())
        .env("COLUMNS", "100")
        .args(args)
        .output()
        .unwrap()
}

fn attache(args: &[&str]) -> Output {
    run(Path::new(env!("CARGO_BIN_EXE_attache")), args)
}

#[test]
fn under_the_plugin_name_help_and_usage_say_kubectl_attache() {
    let dir = plugin_dir("kubectl-help");
    let plugin = dir.join("kubectl-attache");
    let help = run(&plugin, &["--help"]);
    assert_eq!(help.status.code(), Some(0));
    // Everything as `attache --help`, but the name.
    assert_eq!(
        text(&help.stdout),
        text(&attache(&["--help"]).stdout).replace("Usage: attache ", "Usage: kubectl attache ")
    );
    let explain = text(&run(&plugin, &["explain", "--help"]).stdout);
    assert!(
        explain.contains("\nUsage: kubectl attache explain [OPTIONS] --route <NS/NAME>\n"),
        "{explain}"
    );
    assert!(
        explain.contains("\n  kubectl attache explain -f examples/shop/ --route shop/orders\n"),
        "{explain}"
    );
    assert!(!explain.contains("\n  attache "), "{explain}");
    let usage = run(&plugin, &["explain"]);
    assert_eq!(usage.status.code(), Some(2));
    assert_eq!(
        text(&usage.stderr),
        "error: the following required arguments were not provided:\n  --route <NS/NAME>\n\nUsage: kubectl attache explain --route <NS/NAME>\n\nFor more information, try '--help'.\n"
    );
    // Under its own name nothing changed.
    let own = text(&attache(&["explain"]).stderr);
    assert!(
        own.contains("\nUsage: attache explain --route <NS/NAME>\n"),
        "{own}"
    );
}

#[test]
fn the_plugin_does_what_attache_does() {
    let dir = plugin_dir("kubectl-same");
    let shop = fixture("shop.yaml").display().to_string();
    for args in [
        vec![
            "explain", "-f", &shop, "--route", "shop/api", "--rule", "checkout",
        ],
        vec!["resolve", "-f", &shop],
        vec!["status", "-f", &shop, "-o", "yaml"],
    ] {
        let plugin = run(&dir.join("kubectl-attache"), &args);
        let own = attache(&args);
        assert_eq!(plugin.status.code(), Some(0), "{args:?}");
        assert_eq!(text(&plugin.stdout), text(&own.stdout), "{args:?}");
        assert_eq!(text(&plugin.stderr), text(&own.stderr), "{args:?}");
    }
}

#[test]
fn completion_answers_in_kubectls_format() {
    let dir = plugin_dir("kubectl-complete");
    let complete = dir.join("kubectl_complete-attache");
    let cases: &[(&[&str], &str)] = &[
        (&["ex"], "explain\n:4\n"),
        (&["status", "-o", ""], "table\nyaml\njson\n:4\n"),
        (&["explain", "--rou"], "--route\n:4\n"),
        (&["explain", "-f", ""], ":0\n"),
    ];
    for (words, expected) in cases {
        let out = run(&complete, words);
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(text(&out.stdout), *expected, "{words:?}");
    }
}

/// A real kubectl runs the plugin and asks it for completions.
#[test]
fn kubectl_finds_the_plugin_and_its_completion_on_path() {
    let Some(kubectl) = tools::tool("kubectl", "kubectl") else {
        return;
    };
    let dir = plugin_dir("kubectl-real");
    let path = std::env::join_paths(
        std::iter::once(dir.clone())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let kubectl_run = |args: &[&str]| {
        Command::new(&kubectl)
            .current_dir(workspace())
            .env("PATH", &path)
            .env("COLUMNS", "100")
            .args(args)
            .output()
            .unwrap()
    };
    let shop = fixture("shop.yaml").display().to_string();
    let explained = kubectl_run(&["attache", "explain", "-f", &shop, "--route", "shop/api"]);
    assert_eq!(
        explained.status.code(),
        Some(0),
        "{}",
        text(&explained.stderr)
    );
    assert_eq!(
        text(&explained.stdout),
        text(&attache(&["explain", "-f", &shop, "--route", "shop/api"]).stdout)
    );
    let help = kubectl_run(&["attache", "--help"]);
    assert!(text(&help.stdout).contains("\nUsage: kubectl attache <COMMAND>\n"));
    let completed = kubectl_run(&["__complete", "attache", "gr"]);
    assert_eq!(
        text(&completed.stdout),
        "graph\n:4\n",
        "{}",
        text(&completed.stderr)
    );
}
