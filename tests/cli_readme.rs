//! The README and docs/status.md show what `explain` (at 80 columns) and
//! `status -o table` really print for examples/shop.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
use support::{attache_ok, text, workspace};

fn doc(path: &str) -> String {
    std::fs::read_to_string(workspace().join(path)).unwrap()
}

#[test]
fn the_readme_shows_what_explain_and_status_print() {
    let explain = std::process::Command::new(env!("CARGO_BIN_EXE_attache"))
        .current_dir(workspace())
        .env("COLUMNS", "80")
        .args(["explain", "-f", "examples/shop", "--route", "shop/orders"])
        .output()
        .unwrap();
    let status =
        text(&attache_ok(&["status", "-f", "examples/shop", "-n", "shop", "-o", "table"]).stdout);
    let readme = doc("README.md");
    for (command, shown) in [
        (
            "attache explain -f examples/shop --route shop/orders",
            text(&explain.stdout),
        ),
        ("attache status -f examples/shop -n shop", status.clone()),
    ] {
        let block = format!("$ {command}\n{}\n```", shown.trim_end());
        assert!(
            readme.contains(&block),
            "README.md no longer shows what `{command}` prints:\n{block}"
        );
    }
    let block = format!(
        "$ attache status -f examples/shop -o table -n shop\n{}\n```",
        status.trim_end()
    );
    assert!(
        doc("docs/status.md").contains(&block),
        "docs/status.md is stale:\n{block}"
    );
}
