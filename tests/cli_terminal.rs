//! A real terminal: `attache status` and `attache explain` run inside tmux
//! at 80 columns, and the screen is read back. This is where "the table is
//! the default on a terminal" and "explain wraps to the terminal's width"
//! are seen rather than assumed. tmux is installed by scripts/test.sh;
//! without it this test skips, except under CI=true, where it fails.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/standin.rs"]
mod standin;
mod support;
#[path = "support/tools.rs"]
mod tools;

use std::path::Path;
use std::process::Command;

use support::{attache_ok, text, workspace};

const DONE: &str = "__attache_done__";

/// Runs `args` in a fresh tmux server on a terminal `width` columns wide
/// and returns what the screen shows, with the lines the terminal itself
/// wrapped joined back (`capture-pane -J`), so that a line longer than the
/// terminal shows as one long line.
fn on_terminal(tmux: &Path, width: u16, args: &[&str]) -> String {
    let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
    let command = format!("'{}' {}", env!("CARGO_BIN_EXE_attache"), quoted.join(" "));
    on_terminal_running(tmux, width, args[0], &command)
}

/// [`on_terminal`] for a shell command line (standard error not shown).
fn on_terminal_running(tmux: &Path, width: u16, label: &str, command: &str) -> String {
    let socket = format!("attache-test-{}-{label}", std::process::id());
    let tmux_cmd = |extra: &[&str]| {
        let out = Command::new(tmux)
            .args(["-L", &socket, "-f", "/dev/null"])
            .args(extra)
            .current_dir(workspace())
            .env_remove("COLUMNS")
            .env_remove("TMUX")
            .output()
            .unwrap();
        (out.status.success(), text(&out.stdout), text(&out.stderr))
    };
    // COLUMNS unset, so the width can only come from the terminal itself.
    let program = format!("env -u COLUMNS {command} 2>/dev/null; echo {DONE}; sleep 60");
    let (ok, _, err) = tmux_cmd(&[
        "new-session",
        "-d",
        "-x",
        &width.to_string(),
        "-y",
        "200",
        "sh",
        "-c",
        &program,
    ]);
    assert!(ok, "tmux new-session failed: {err}");
    // Wait until the command has printed everything (bounded by tries,
    // not by a measured time).
    let mut screen = String::new();
    for _ in 0..200 {
        let (_, shown, _) = tmux_cmd(&["capture-pane", "-p", "-J", "-S", "0", "-E", "199"]);
        screen = shown;
        if screen.contains(DONE) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    tmux_cmd(&["kill-server"]);
    let (before, _) = screen
        .split_once(DONE)
        .unwrap_or_else(|| panic!("the command never finished on the terminal:\n{screen}"));
    before
        .lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
        .trim_end()
        .to_string()
}

#[test]
fn status_and_explain_at_80_columns_in_tmux() {
    let Some(tmux) = tools::tool("tmux", "tmux") else {
        return;
    };
    // status: on a terminal the default is the table, as -o table prints it.
    let shown = on_terminal(&tmux, 80, &["status", "-f", "examples/shop"]);
    let table = text(&attache_ok(&["status", "-f", "examples/shop", "-o", "table"]).stdout);
    assert_eq!(shown, table.trim_end(), "status on a terminal");
    assert!(shown.starts_with("KIND "), "{shown}");

    // explain: wrapped by attache itself to the terminal's 80 columns, so
    // no line needed the terminal's own wrapping, and every line fits.
    let args = ["explain", "-f", "examples/shop", "--route", "shop/orders"];
    let shown = on_terminal(&tmux, 80, &args);
    let longest = shown.lines().map(|l| l.chars().count()).max().unwrap();
    assert!(longest <= 80, "a line of {longest} columns:\n{shown}");
    let piped = text(&attache_ok(&args).stdout);
    assert!(
        piped.lines().any(|l| l.chars().count() > 80),
        "the piped output should be unwrapped:\n{piped}"
    );
    let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(words(&shown), words(&piped), "the same words, wrapped");
    assert!(
        shown.contains("\n  timeouts.request: 15s\n    from RoutePolicy infra/edge-defaults (defaults @ Gateway infra/edge)\n    lost 30s from ClusterRoutePolicy platform-guardrails (defaults @\n      GatewayClass attache): it fills only unset fields; already set by\n      RoutePolicy infra/edge-defaults at Gateway infra/edge\n"),
        "{shown}"
    );
}

/// `kubectl attache explain` against a live cluster (the stand-in API
/// server serving examples/shop), on a real terminal: kubectl runs the
/// plugin from PATH, which reads the cluster and wraps to the terminal as
/// `attache explain -f` does.
#[test]
fn kubectl_attache_explain_of_the_live_cluster_in_tmux() {
    let (Some(tmux), Some(kubectl)) = (
        tools::tool("tmux", "tmux"),
        tools::tool("kubectl", "kubectl"),
    ) else {
        return;
    };
    let dir = support::scratch("terminal-kubectl");
    let cluster = standin::Cluster::shop(&dir);
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_attache"), dir.join("kubectl-attache")).unwrap();
    let command = format!(
        "env PATH='{}':\"$PATH\" '{}' attache explain --route shop/orders --kubeconfig '{}'",
        dir.display(),
        kubectl.display(),
        cluster.kubeconfig.display()
    );
    let live = on_terminal_running(&tmux, 80, "kubectl", &command);
    // A tmux server of its own: the other test's runs at the same time.
    let files = on_terminal_running(
        &tmux,
        80,
        "kubectl-files",
        &format!(
            "'{}' explain -f examples/shop --route shop/orders",
            env!("CARGO_BIN_EXE_attache")
        ),
    );
    assert_eq!(live, files);
    assert!(live.starts_with("http/shop/orders/0\n"), "{live}");
}
