//! Messages a new user meets first: empty input, a misspelt group or kind
//! ("did you mean"), and `--strict` failing on them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
use support::{attache, scratch, text};

#[test]
fn an_empty_input_says_it_is_empty() {
    let dir = scratch("empty-input");
    let out = attache(&["resolve", "-f", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        format!(
            "error: the input is empty: no YAML or JSON document in {}\n  hint: -f takes .yaml, .yml and .json files, directories of them (read recursively), or '-' for standard input\n",
            dir.display()
        )
    );
    let only_comments = dir.join("notes.yaml");
    std::fs::write(&only_comments, "# nothing yet\n---\n").unwrap();
    let out = attache(&["status", "-f", only_comments.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).starts_with("error: the input is empty"),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_dir_all(dir).unwrap();
}

const TYPOS: &str = "\
apiVersion: policy.attache.io/v1alpha1
kind: RoutePolicy
metadata: {name: a, namespace: infra}
spec: {targetRef: {group: gateway.networking.k8s.io, kind: Gateway, name: edge}, defaults: {timeouts: {request: 1s}}}
---
apiVersion: policy.attache.dev/v1alpha1
kind: RoutePolcy
metadata: {name: b, namespace: infra}
spec: {}
---
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: BackendTraficPolicy
metadata: {name: c, namespace: infra}
spec: {}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: d, namespace: infra}
";

#[test]
fn a_near_miss_group_or_kind_says_did_you_mean_and_fails_strict() {
    let dir = scratch("near-miss");
    let file = dir.join("typos.yaml");
    std::fs::write(&file, TYPOS).unwrap();
    let f = file.to_str().unwrap();
    let out = attache(&["resolve", "-f", "examples/shop", "-f", f]);
    assert_eq!(out.status.code(), Some(0));
    let stderr = text(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines,
        [
            format!("warning: {f} (document 1) RoutePolicy: apiVersion: policy.attache.io/v1alpha1 RoutePolicy is not read (did you mean policy.attache.dev/v1alpha1 RoutePolicy?); the object is ignored; fix the spelling; policy.attache.dev kinds read here: RoutePolicy, ClusterRoutePolicy"),
            format!("error: {f} (document 2) RoutePolcy: kind: \"RoutePolcy\" is not a kind of policy.attache.dev; the object is ignored (did you mean RoutePolicy?); policy.attache.dev kinds read here: RoutePolicy, ClusterRoutePolicy (versions v1alpha1); check the spelling"),
            format!("warning: {f} (document 3) BackendTraficPolicy: kind: gateway.envoyproxy.io/v1alpha1 BackendTraficPolicy is not read (did you mean gateway.envoyproxy.io/v1alpha1 BackendTrafficPolicy?); the object is ignored; fix the spelling; gateway.envoyproxy.io kinds read here: BackendTrafficPolicy"),
            format!("note: {f} (document 4): cert-manager.io/v1 Certificate is not read by the resolver; skipped; the resolver reads GatewayClass, Gateway, HTTPRoute (gateway.networking.k8s.io v1/v1beta1), GRPCRoute (v1), ListenerSet (gateway.networking.k8s.io/v1) and XListenerSet (gateway.networking.x-k8s.io/v1alpha1), Namespace, RoutePolicy and ClusterRoutePolicy (policy.attache.dev/v1alpha1), kgateway's TrafficPolicy and Envoy Gateway's BackendTrafficPolicy (v1alpha1)"),
        ]
    );
    for command in [
        vec!["resolve"],
        vec!["status", "-o", "yaml"],
        vec!["explain", "--route", "shop/orders"],
        vec!["graph"],
    ] {
        let mut args = command.clone();
        args.extend(["-f", "examples/shop", "-f", f, "--strict"]);
        let out = attache(&args);
        assert_eq!(
            out.status.code(),
            Some(3),
            "{command:?}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr)
                .lines()
                .last()
                .unwrap()
                .starts_with("error: --strict: "),
            "{command:?}"
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// `attache --help` prints the exit codes, and the README's table has the
/// same codes with the same meanings (backquotes aside).
#[test]
fn help_and_readme_list_the_same_exit_codes() {
    let help = text(&support::attache_ok(&["--help"]).stdout);
    let table = help.split("Exit codes:\n").nth(1).unwrap();
    let mut codes: Vec<(String, String)> = Vec::new();
    for line in table.lines() {
        let trimmed = line.trim_start();
        match trimmed.split_once("  ") {
            Some((code, meaning)) if code.chars().all(|c| c.is_ascii_digit()) => {
                codes.push((code.to_string(), meaning.trim().to_string()));
            }
            _ => {
                if let Some(last) = codes.last_mut() {
                    last.1.push(' ');
                    last.1.push_str(trimmed);
                }
            }
        }
    }
    assert_eq!(
        codes.iter().map(|(c, _)| c.as_str()).collect::<Vec<_>>(),
        ["0", "1", "2", "3", "4"]
    );
    let readme = std::fs::read_to_string(support::workspace().join("README.md")).unwrap();
    for (code, meaning) in codes {
        let row = readme
            .lines()
            .find(|l| l.starts_with(&format!("| {code} |")))
            .unwrap_or_else(|| panic!("README has no row for exit code {code}"));
        assert_eq!(
            row.replace('`', ""),
            format!("| {code} | {} |", meaning.replace('`', ""))
        );
    }
}
