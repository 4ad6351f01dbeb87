//! `--strict` on every command that resolves: one misspelt Gateway-level
//! policy makes each of them exit 3 and write nothing, where without
//! `--strict` they report it and write the rest (issue 25).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
use support::{attache, scratch, text};

/// A Gateway-level RoutePolicy with a typo (`timeout:` for `timeouts:`).
const TYPO: &str = "\
apiVersion: policy.attache.dev/v1alpha1
kind: RoutePolicy
metadata: {name: edge-typo, namespace: infra}
spec:
  targetRef: {group: gateway.networking.k8s.io, kind: Gateway, name: edge}
  defaults:
    timeout: {request: 5s}
";

fn typo_file(label: &str) -> std::path::PathBuf {
    let dir = scratch(label);
    std::fs::write(dir.join("typo.yaml"), TYPO).unwrap();
    dir
}

/// Each render, with the typo: without --strict it writes, with it exit 3,
/// one `error: --strict` line last, and no output.
#[test]
fn every_render_fails_under_strict_on_a_gateway_level_typo() {
    let dir = typo_file("strict-render");
    let typo = dir.join("typo.yaml");
    let typo = typo.to_str().unwrap();
    let xds = dir.join("xds");
    // Under Istio examples/shop also draws a warning of its own (a header
    // both a policy and the rule's own filter set): two problems there.
    let renders: Vec<(Vec<&str>, usize)> = vec![
        (vec!["render", "wasmplugin"], 2),
        (vec!["render", "ecds", "--wasm", "/attache.wasm"], 1),
        (vec!["render", "envoy", "--xds-dir", "/xds"], 1),
        (
            vec![
                "render",
                "xds",
                "--xds-dir",
                xds.to_str().unwrap(),
                "--ecds",
                "/ecds.yaml",
                "--backend",
                "*=127.0.0.1:9000",
            ],
            1,
        ),
    ];
    for (render, problems) in renders {
        let mut args = render.clone();
        args.extend(["-f", "examples/shop", "-f", typo]);
        let lenient = attache(&args);
        assert_eq!(
            lenient.status.code(),
            Some(0),
            "{render:?}: {}",
            text(&lenient.stderr)
        );
        assert!(
            text(&lenient.stderr).contains(
                "RoutePolicy infra/edge-typo: spec.defaults.timeout: unknown field `timeout`"
            ),
            "{render:?}: {}",
            text(&lenient.stderr)
        );
        let _ = std::fs::remove_dir_all(&xds);
        args.push("--strict");
        let strict = attache(&args);
        assert_eq!(
            strict.status.code(),
            Some(3),
            "{render:?}: {}",
            text(&strict.stderr)
        );
        assert_eq!(
            text(&strict.stdout),
            "",
            "{render:?} wrote output under --strict"
        );
        assert!(!xds.exists(), "{render:?} wrote files under --strict");
        let stderr = text(&strict.stderr);
        assert_eq!(
            stderr.lines().last().unwrap(),
            format!("error: --strict: {problems} problem(s) reported above"),
            "{render:?}: {stderr}"
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// `watch --strict` refuses to start on input with a problem: exit 3, and
/// neither --out nor the ECDS file is written.
#[test]
fn watch_strict_stops_at_start() {
    let dir = typo_file("strict-watch");
    let out = dir.join("attache.json");
    let ecds = dir.join("attache-ecds.json");
    let result = attache(&[
        "watch",
        "-f",
        "examples/shop",
        "-f",
        dir.join("typo.yaml").to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--ecds",
        ecds.to_str().unwrap(),
        "--wasm",
        "/attache.wasm",
        "--interval-ms",
        "10",
        "--strict",
    ]);
    assert_eq!(result.status.code(), Some(3), "{}", text(&result.stderr));
    assert!(!out.exists() && !ecds.exists());
    assert!(
        text(&result.stderr).ends_with("error: --strict: 1 problem(s) reported above\n"),
        "{}",
        text(&result.stderr)
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// A route whose parentRef names a listener the Gateway lacks (`htpp`): a
/// warning with Gateway API's reason, exit 0; under --strict, exit 3.
#[test]
fn a_route_that_attaches_to_no_listener_fails_under_strict() {
    let dir = scratch("strict-htpp");
    let shop = support::workspace().join("examples/shop");
    support::copy_dir(&shop, &dir);
    std::fs::write(
        dir.join("60-lost.yaml"),
        "\
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: lost, namespace: infra}
spec:
  parentRefs: [{name: edge, sectionName: htpp}]
  rules:
  - backendRefs: [{name: svc, port: 80}]
",
    )
    .unwrap();
    let path = dir.to_str().unwrap();
    let plain = attache(&["resolve", "-f", path]);
    assert_eq!(plain.status.code(), Some(0), "{}", text(&plain.stderr));
    assert!(
        text(&plain.stderr).lines().any(|l| l.starts_with("warning: ")
            && l.ends_with("60-lost.yaml (document 1) HTTPRoute infra/lost: spec.parentRefs[0]: attaches to no listener of Gateway infra/edge (sectionName htpp): NoMatchingParent: no listener is named htpp; its listeners are: http, admin")),
        "{}",
        text(&plain.stderr)
    );
    let strict = attache(&["resolve", "--strict", "-f", path]);
    assert_eq!(strict.status.code(), Some(3), "{}", text(&strict.stderr));
}
