//! A policy's request-header change that would move a request to another
//! rule is refused (docs/semantics.md, "A policy never changes which rule
//! serves a request"), and every command says so: a warning naming file,
//! policy and field (`--strict` exits 3), `status`, `explain` and `diff`.
//! The same fixture drives the real-Envoy test (tests/e2e/steering.rs).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
use support::{attache, copy_dir, scratch, text, workspace};

const FIXTURE: &str = "tests/fixtures/e2e/steering";

#[test]
fn resolve_warns_naming_file_policy_field_and_rule_and_strict_exits_3() {
    let lenient = attache(&["resolve", "-f", FIXTURE]);
    assert_eq!(lenient.status.code(), Some(0), "{}", text(&lenient.stderr));
    let stderr = text(&lenient.stderr);
    let line = stderr
        .lines()
        .find(|l| l.contains("steer-set"))
        .unwrap_or_else(|| panic!("no warning for steer-set in {stderr}"));
    for needle in [
        "warning:",
        "policies.yaml (document 1)",
        "RoutePolicy team-a/steer-set",
        "requestHeaders.set.x-tier",
        "HTTPRoute team-b/gold rule 0",
    ] {
        assert!(line.contains(needle), "{needle}: {line}");
    }
    // The document keeps the policy's other header and drops x-tier.
    let doc: serde_json::Value = serde_yaml_ng::from_slice(&lenient.stdout).unwrap();
    let set = doc["routes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "http/team-a/shop/set")
        .unwrap();
    let names: Vec<&str> = set["requestHeaders"]["set"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["x-other"]);

    let strict = attache(&["resolve", "-f", FIXTURE, "--strict"]);
    assert_eq!(strict.status.code(), Some(3), "{}", text(&strict.stderr));
    assert!(strict.stdout.is_empty());
}

#[test]
fn status_says_partially_programmed_with_the_refusal() {
    let out = attache(&["status", "-f", FIXTURE, "-o", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let policy = report["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["metadata"]["name"] == "steer-remove")
        .unwrap();
    let conditions = policy["status"]["ancestors"][0]["conditions"]
        .as_array()
        .unwrap();
    let programmed = conditions
        .iter()
        .find(|c| c["type"] == "Programmed")
        .unwrap();
    assert_eq!(programmed["reason"], "PartiallyProgrammed", "{programmed}");
    let message = programmed["message"].as_str().unwrap();
    assert!(
        message.contains("requestHeaders.remove x-vip refused: HTTPRoute team-b/vip rule 0"),
        "{message}"
    );
}

#[test]
fn explain_notes_the_refusal_and_shows_only_what_applies() {
    let out = attache(&[
        "explain",
        "-f",
        FIXTURE,
        "--gateway",
        "infra/edge",
        "--route",
        "team-a/shop",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let all = text(&out.stdout);
    let stdout = all
        .split("\n\n")
        .find(|block| block.starts_with("http/team-a/shop/set"))
        .unwrap_or_else(|| panic!("no entry http/team-a/shop/set in {all}"));
    assert!(
        stdout.contains("note: RoutePolicy team-a/steer-set")
            && stdout.contains("requestHeaders.set.x-tier refused: HTTPRoute team-b/gold rule 0"),
        "{stdout}"
    );
    assert!(!stdout.contains("set[x-tier]"), "{stdout}");
    assert!(stdout.contains("set[x-other]"), "{stdout}");
}

#[test]
fn diff_shows_a_new_route_turning_a_policy_header_off_and_why() {
    // Before: without team-b's gold route, nothing matches on x-tier.
    let dir = scratch("steering-diff").join("before");
    copy_dir(&workspace().join(FIXTURE), &dir);
    let routes = std::fs::read_to_string(dir.join("routes.yaml")).unwrap();
    let start = routes.find("---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata:\n  name: gold").unwrap();
    let end = start + 3 + routes[start + 3..].find("---").unwrap();
    std::fs::write(
        dir.join("routes.yaml"),
        format!("{}{}", &routes[..start], &routes[end..]),
    )
    .unwrap();

    let out = attache(&["diff", dir.to_str().unwrap(), FIXTURE]);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("+ http/team-b/gold/0"), "{stdout}");
    assert!(
        stdout.contains("requestHeaders.set.x-tier  \"gold\" -> (unset)"),
        "{stdout}"
    );
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("RoutePolicy team-a/steer-set")
            && stderr.contains("HTTPRoute team-b/gold rule 0"),
        "{stderr}"
    );
}
