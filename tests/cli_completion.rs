//! `attache completion` and `attache man`: generated from the clap
//! definition, checked by the programs that read them (bash, man).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
#[path = "support/tools.rs"]
mod tools;

use std::process::Command;

use support::{attache_ok, scratch, text};

/// Bash loads the script, and completing `attache st` and `attache status
/// --st` offers the subcommand and the flag.
#[test]
fn bash_completes_subcommands_and_flags() {
    let script = text(&attache_ok(&["completion", "bash"]).stdout);
    assert!(script.contains("_attache()"), "{script}");
    let dir = scratch("completion-bash");
    let file = dir.join("attache.bash");
    std::fs::write(&file, &script).unwrap();
    let complete = |words: &str| -> String {
        let program = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); _attache attache \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            file.display()
        );
        let out = Command::new("bash")
            .arg("-c")
            .arg(program)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    assert_eq!(complete("attache st"), "status\n");
    assert_eq!(complete("attache status --st"), "--strict\n");
    let outputs = complete("attache status -o ''");
    assert_eq!(outputs, "table\nyaml\njson\n");
    assert!(complete("attache g").lines().any(|l| l == "graph"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn zsh_and_fish_scripts_name_every_subcommand() {
    let zsh = text(&attache_ok(&["completion", "zsh"]).stdout);
    assert!(zsh.starts_with("#compdef attache\n"), "{zsh}");
    let fish = text(&attache_ok(&["completion", "fish"]).stdout);
    for sub in [
        "resolve",
        "explain",
        "status",
        "graph",
        "diff",
        "watch",
        "render",
        "completion",
        "man",
    ] {
        assert!(zsh.contains(&format!("'{sub}:")), "zsh lacks {sub}");
        assert!(fish.contains(&format!("-a \"{sub}\"")), "fish lacks {sub}");
    }
}

/// The page carries the exit-code table; `man` formats every page written.
#[test]
fn man_pages_for_the_tool_and_each_command() {
    let page = text(&attache_ok(&["man"]).stdout);
    assert!(
        page.starts_with(".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n.TH attache 1"),
        "{page}"
    );
    assert!(page.contains("Exit codes:"), "{page}");
    let dir = scratch("man-pages");
    attache_ok(&["man", "--out-dir", dir.to_str().unwrap()]);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "attache-completion.1",
            "attache-controller.1",
            "attache-crds.1",
            "attache-deploy.1",
            "attache-diff.1",
            "attache-explain.1",
            "attache-graph.1",
            "attache-man.1",
            "attache-package-controller.1",
            "attache-package-oci.1",
            "attache-package.1",
            "attache-render-ecds.1",
            "attache-render-envoy.1",
            "attache-render-envoyextensionpolicy.1",
            "attache-render-envoyfilter.1",
            "attache-render-trafficextension.1",
            "attache-render-wasmplugin.1",
            "attache-render-xds.1",
            "attache-render.1",
            "attache-resolve.1",
            "attache-status.1",
            "attache-watch.1",
            "attache.1"
        ]
    );
    // A nested command's flags are on its own page: `render envoy`'s
    // choice of filter build among them.
    let render_envoy = std::fs::read_to_string(dir.join("attache-render-envoy.1")).unwrap();
    for flag in ["\\-\\-filter", "dynamic\\-module", "\\-\\-module"] {
        assert!(
            render_envoy.contains(flag),
            "{flag} not in attache-render-envoy.1"
        );
    }
    // The dynamic module's delivery objects: each page has its flags.
    for (page, flags) in [
        (
            "attache-render-envoyextensionpolicy.1",
            &["\\-\\-module\\-name", "\\-\\-envoy\\-proxy", "\\-\\-module"][..],
        ),
        ("attache-render-envoyfilter.1", &["\\-\\-module"][..]),
    ] {
        let text = std::fs::read_to_string(dir.join(page)).unwrap();
        for flag in flags {
            assert!(text.contains(flag), "{flag} not in {page}");
        }
    }
    if let Some(man) = tools::tool("man", "man-db") {
        let out = Command::new(man)
            .env("MANWIDTH", "80")
            .env("MAN_KEEP_FORMATTING", "0")
            .arg("-l")
            .arg(dir.join("attache-status.1"))
            .output()
            .unwrap();
        let shown = text(&out.stdout);
        assert!(
            shown.contains("attache-status - Print the status conditions of every policy"),
            "{shown}"
        );
        assert!(shown.contains("--strict"), "{shown}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}
