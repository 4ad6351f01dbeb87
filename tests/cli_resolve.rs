//! `attache resolve` on real files: exit codes, messages, --strict,
//! atomic output and deterministic bytes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

use attache_contract::Document;

mod support;
use support::{attache, fixture, scratch, text};

#[test]
fn resolves_the_only_gateway_to_schema_1_json() {
    let shop = fixture("shop.yaml");
    let out = attache(&["resolve", "-f", shop.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: Document = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc.gateway, "infra/edge");
    let names: Vec<&str> = doc.routes.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "http/shop/storefront/1",
            "http/shop/api/checkout",
            "http/shop/api/1"
        ]
    );
    let checkout = &doc.routes[1];
    assert_eq!(
        checkout
            .settings
            .timeouts
            .as_ref()
            .and_then(|t| t.request_ms),
        Some(2000)
    );
    assert!(out.stdout.ends_with(b"}\n"), "trailing newline");
    assert!(
        text(&out.stderr).contains("warning: "),
        "the clamp is reported on stderr"
    );
    assert!(text(&out.stderr).contains("clamped to 2s"));
}

#[test]
fn output_is_byte_for_byte_deterministic_whatever_the_document_order() {
    let shop = fixture("shop.yaml");
    let first = attache(&["resolve", "-f", shop.to_str().unwrap()]);
    let second = attache(&["resolve", "-f", shop.to_str().unwrap()]);
    assert_eq!(first.stdout, second.stdout);
    // The same objects, one file each, given in reverse order.
    let dir = scratch("shuffled");
    let source = std::fs::read_to_string(&shop).unwrap();
    let mut args = vec!["resolve".to_string()];
    for (i, doc) in source.split("\n---\n").enumerate() {
        let path = dir.join(format!("{i:02}.yaml"));
        std::fs::write(&path, doc).unwrap();
        args.push("-f".into());
        args.push(path.display().to_string());
    }
    let mut reversed: Vec<&str> = vec!["resolve"];
    let pairs: Vec<&[String]> = args[1..].chunks(2).collect();
    for pair in pairs.iter().rev() {
        reversed.push(&pair[0]);
        reversed.push(&pair[1]);
    }
    let shuffled = attache(&reversed);
    assert_eq!(
        shuffled.status.code(),
        Some(0),
        "{}",
        text(&shuffled.stderr)
    );
    assert_eq!(text(&shuffled.stdout), text(&first.stdout));
}

#[test]
fn output_file_is_written_whole_with_no_temp_left() {
    let dir = scratch("out");
    let target = dir.join("edge.json");
    std::fs::write(&target, "old").unwrap();
    let shop = fixture("shop.yaml");
    let out = attache(&[
        "resolve",
        "-f",
        shop.to_str().unwrap(),
        "-o",
        target.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    let stdout = attache(&["resolve", "-f", shop.to_str().unwrap()]).stdout;
    assert_eq!(std::fs::read(&target).unwrap(), stdout);
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["edge.json"]);
}

#[test]
fn malformed_yaml_and_missing_files_exit_1_naming_file_and_document() {
    let bad = fixture("malformed.yaml");
    let out = attache(&["resolve", "-f", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("malformed.yaml (document 2): not valid YAML"),
        "{err}"
    );
    let out = attache(&["resolve", "-f", "/nonexistent/attache.yaml"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("/nonexistent/attache.yaml: no such file or directory"));
}

#[test]
fn several_gateways_need_gateway_and_errors_list_them() {
    let two = fixture("two-gateways.yaml");
    let two = two.to_str().unwrap();
    let out = attache(&["resolve", "-f", two]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("2 Gateways")
            && err.contains("infra/edge, infra/internal")
            && err.contains("--gateway"),
        "{err}"
    );
    let out = attache(&["resolve", "-f", two, "--gateway", "infra/nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains(
        "Gateway infra/nope is not in the input; Gateways found: infra/edge, infra/internal"
    ));
    let out = attache(&["resolve", "-f", two, "--gateway", "infra/internal"]);
    assert_eq!(out.status.code(), Some(0));
    let doc: Document = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc.routes.len(), 1);
    let out = attache(&["resolve", "-f", two, "--gateway", "internal"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "clap rejects a malformed NS/NAME"
    );
    assert!(text(&out.stderr).contains("is not NAMESPACE/NAME"));
}

#[test]
fn no_gateway_is_an_error() {
    let bad = fixture("bad-policies.yaml");
    let out = attache(&["resolve", "-f", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("the input has no Gateway"));
}

#[test]
fn each_bad_policy_is_reported_precisely_and_the_rest_still_applies() {
    let (shop, bad) = (fixture("shop.yaml"), fixture("bad-policies.yaml"));
    let out = attache(&[
        "resolve",
        "-f",
        shop.to_str().unwrap(),
        "-f",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "without --strict problems are reported, not fatal"
    );
    let err = text(&out.stderr);
    let file = bad.display().to_string();
    for expected in [
        format!("error: {file} (document 1) RoutePolicy shop/fast: spec.defaults.timeouts.request: \"1.5s\" is not a Gateway API duration; use e.g. 1500ms"),
        format!("error: {file} (document 2) RoutePolicy shop/codes: spec.overrides.retry.codes[1]: 302 is not a retriable HTTP status code; use a code from 400 to 599"),
        format!("error: {file} (document 3) RoutePolicy shop/reach: spec.targetRefs[0].namespace: cross-namespace target infra/edge from a policy in shop"),
        format!("warning: {file} (document 4) RoutePolicy shop/ghost: spec.targetRef: target HTTPRoute shop/nope does not exist (TargetNotFound); HTTPRoutes in shop: api, storefront"),
        format!("error: {file} (document 5) RoutePolicy shop/mixed: spec: settings directly under spec are mixed with a defaults/overrides stanza"),
        format!("error: {file} (document 6) RoutePolicy shop/typo: spec.defaults.retries: unknown field `retries`, expected one of"),
        format!("error: {file} (document 7) RoutePolicy shop/header: spec.defaults.responseHeaderModifier.remove[0]: \"x:bad\" is not an RFC 9110 header name (token)"),
    ] {
        assert!(err.contains(&expected), "missing {expected:?} in:\n{err}");
    }
    let doc: Document = serde_json::from_slice(&out.stdout).unwrap();
    for entry in doc.routes.iter().filter(|r| r.route_name == "api") {
        let set = &entry.settings.response_headers.as_ref().unwrap().set;
        assert_eq!(
            (set[0].name.as_str(), set[0].value.as_str()),
            ("x-served-by", "attache"),
            "the good policy applies"
        );
        assert_ne!(
            entry.settings.timeouts.as_ref().and_then(|t| t.request_ms),
            Some(1500),
            "the invalid one does not"
        );
    }
}

#[test]
fn strict_turns_problems_into_exit_3_and_writes_nothing() {
    let (shop, bad) = (fixture("shop.yaml"), fixture("bad-policies.yaml"));
    let dir = scratch("strict");
    let target = dir.join("out.json");
    let out = attache(&[
        "resolve",
        "-f",
        shop.to_str().unwrap(),
        "-f",
        bad.to_str().unwrap(),
        "--strict",
        "-o",
        target.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(3));
    let err = text(&out.stderr);
    assert!(
        err.contains("RoutePolicy shop/fast: spec.defaults.timeouts.request"),
        "{err}"
    );
    assert!(err.contains("--strict"), "{err}");
    assert!(!target.exists());
    // The shop alone draws a clamp warning, which --strict also refuses.
    let out = attache(&["resolve", "-f", shop.to_str().unwrap(), "--strict"]);
    assert_eq!(out.status.code(), Some(3));
    let two = fixture("two-gateways.yaml");
    let out = attache(&[
        "resolve",
        "-f",
        two.to_str().unwrap(),
        "--gateway",
        "infra/internal",
        "--strict",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn help_teaches_with_examples() {
    let out = attache(&["resolve", "--help"]);
    let help = text(&out.stdout);
    assert!(
        help.contains("Examples:")
            && help.contains("--gateway infra/edge")
            && help.contains("--strict"),
        "{help}"
    );
}

#[test]
fn reads_standard_input_with_dash() {
    use std::io::Write;
    let shop = std::fs::read(fixture("shop.yaml")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_attache"))
        .args(["resolve", "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&shop).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let from_file = attache(&["resolve", "-f", fixture("shop.yaml").to_str().unwrap()]);
    assert_eq!(out.stdout, from_file.stdout);
    assert!(
        text(&out.stderr).contains("- (document 5) HTTPRoute shop/api"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn invalid_gateways_and_routes_are_reported_precisely_and_dropped() {
    let bad = fixture("bad-objects.yaml");
    let file = bad.display().to_string();
    let out = attache(&["resolve", "-f", &file, "--gateway", "infra/edge"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    for expected in [
        format!("error: {file} (document 2) Gateway infra/twins: spec.listeners[1].name: listener name \"http\" is used twice; give every listener of a Gateway a distinct name"),
        format!("error: {file} (document 3) HTTPRoute shop/slow: spec.rules[0].timeouts.request: \"1d\" is not a Gateway API duration"),
        format!("error: {file} (document 4) HTTPRoute shop/typed: spec.parentRefs[0].port: invalid type: string \"eighty\", expected u16"),
        format!("note: {file} (document 6): v1 ConfigMap is not read by the resolver; skipped"),
    ] {
        assert!(err.contains(&expected), "missing {expected:?} in:\n{err}");
    }
    let doc: Document = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = doc.routes.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["http/shop/fine/0"]);
}

/// `attache resolve | head -1`: the reader goes away after one line; the
/// command ends quietly with exit 0, as `cat` would.
#[test]
fn a_closed_pipe_ends_quietly_with_exit_0() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    // Enough output (about 1.5 MB) that it cannot all sit in the pipe.
    let mut yaml = String::from(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: gc}\n---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw, namespace: a}\nspec:\n  gatewayClassName: gc\n  listeners: [{name: http, port: 80, protocol: HTTP}]\n",
    );
    for i in 0..3000 {
        yaml.push_str(&format!(
            "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: r{i}, namespace: a}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules: [{{matches: [{{path: {{type: PathPrefix, value: /r{i}}}}}]}}]\n"
        ));
    }
    let dir = support::scratch("closed-pipe");
    let input = dir.join("routes.yaml");
    std::fs::write(&input, yaml).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_attache"))
        .args(["resolve", "-f"])
        .arg(&input)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert_eq!(first, "{\n");
    // The reader is dropped here: the pipe is closed.
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(support::text(&output.stderr), "");
    std::fs::remove_dir_all(dir).unwrap();
}
