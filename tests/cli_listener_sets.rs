//! ListenerSets through the CLI (docs/semantics.md, "ListenerSet"): explain
//! names the set's levels and heads the entry with its listener, `--listener`
//! takes a listener key, diff reports a change to a set's policy on the set's
//! entries only, and status counts the set as a policy's ancestor.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
use support::{attache, copy_dir, scratch, text, workspace};

fn fixture() -> String {
    workspace()
        .join("tests/fixtures/e2e/listener_sets")
        .display()
        .to_string()
}

#[test]
fn explain_heads_a_sets_entry_with_its_listener_and_names_the_sets_level() {
    let out = attache(&[
        "explain",
        "-f",
        &fixture(),
        "--route",
        "gifts/cards",
        "--listener",
        "gifts/gifts-edge/http",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "\
gifts/gifts-edge/http/gifts/cards/0
  listener http of ListenerSet gifts/gifts-edge, HTTPRoute gifts/cards rule 0
  timeouts.request: 500ms
    from RoutePolicy gifts/gifts-set (defaults @ ListenerSet gifts/gifts-edge)
    lost 3s from RoutePolicy infra/gateway-defaults (defaults @ Gateway infra/edge): it fills only unset fields; already set by RoutePolicy gifts/gifts-set at ListenerSet gifts/gifts-edge
  requestHeaderModifier.set[x-team]: \"gifts\"
    from RoutePolicy gifts/gifts-set (defaults @ ListenerSet gifts/gifts-edge)
  responseHeaderModifier.set[x-gateway]: \"edge\"
    from RoutePolicy infra/gateway-defaults (defaults @ Gateway infra/edge)
"
    );
    // The bare name is the Gateway's own listener, which does not serve it.
    let bare = attache(&[
        "explain",
        "-f",
        &fixture(),
        "--route",
        "gifts/cards",
        "--listener",
        "http",
    ]);
    assert_eq!(bare.status.code(), Some(1));
    let json = attache(&[
        "explain",
        "-f",
        &fixture(),
        "--route",
        "gifts/cards",
        "-o",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v[0]["listener"], "http");
    assert_eq!(v[0]["listenerSet"], "ListenerSet gifts/gifts-edge");
}

#[test]
fn diff_reports_a_change_to_a_sets_policy_on_that_sets_entries_only() {
    let dir = scratch("diff-sets").join("sets");
    copy_dir(&workspace().join("tests/fixtures/e2e/listener_sets"), &dir);
    let path = dir.join("tenants.yaml");
    let original = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, original.replacen("request: 500ms", "request: 2s", 1)).unwrap();
    let out = attache(&["diff", &fixture(), dir.to_str().unwrap(), "-o", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let changed: Vec<&str> = v["entriesChanged"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["entry"].as_str().unwrap())
        .collect();
    assert_eq!(changed, ["gifts/gifts-edge/http/gifts/cards/0"], "{v:#}");
    assert_eq!(
        v["entriesChanged"][0]["fields"][0]["source"],
        "RoutePolicy gifts/gifts-set (defaults @ ListenerSet gifts/gifts-edge)"
    );
}

#[test]
fn status_names_the_set_as_the_ancestor_and_counts_its_rules() {
    let out = attache(&[
        "status",
        "-f",
        &fixture(),
        "-o",
        "json",
        "--name",
        "gifts-set",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ancestor = &v["items"][0]["status"]["ancestors"][0];
    assert_eq!(
        ancestor["ancestorRef"],
        serde_json::json!({"group": "gateway.networking.k8s.io", "kind": "ListenerSet",
                           "name": "gifts-edge", "namespace": "gifts"})
    );
    assert_eq!(
        ancestor["conditions"][1]["message"],
        "supplies every field it sets on 1 route rule(s)"
    );
    let table = attache(&["status", "-f", &fixture(), "-o", "table"]);
    assert!(
        text(&table.stdout).contains(
            "HTTPRoute   gifts       cards    ListenerSet/gifts-edge:http   True       Accepted\n"
        ),
        "{}",
        text(&table.stdout)
    );
}

#[test]
fn explain_on_a_route_nothing_serves_says_why_in_its_parent_refs_words() {
    let dir = scratch("explain-why").join("sets");
    copy_dir(&workspace().join("tests/fixtures/e2e/listener_sets"), &dir);
    let path = dir.join("tenants.yaml");
    let original = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        original.replacen(
            "      name: toys-edge\n",
            "      name: toys-edge\n      sectionName: web\n",
            1,
        ),
    )
    .unwrap();
    let out = attache(&[
        "explain",
        "-f",
        dir.to_str().unwrap(),
        "--route",
        "toys/blocks",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains(
            "error: no entry for HTTPRoute toys/blocks in the resolved Gateway infra/edge: route toys/blocks \
             attaches to no listener of ListenerSet toys/toys-edge (sectionName web): NoMatchingParent: \
             no listener is named web; entries there: "
        ),
        "{}",
        text(&out.stderr)
    );
}
