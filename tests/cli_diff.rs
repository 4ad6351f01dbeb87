//! `attache diff` on copies of examples/shop with real edits: the exact
//! output and the exit codes a CI gate relies on (docs/diff.md).

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // test helpers fail by panicking

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod support;
use support::{attache, copy_dir, scratch, text, workspace};

/// A copy of examples/shop in which `file` has `from` replaced by `to`.
fn edited(label: &str, file: &str, from: &str, to: &str) -> PathBuf {
    let dir = scratch(label).join("shop");
    copy_dir(&workspace().join("examples/shop"), &dir);
    let path = dir.join(file);
    let original = std::fs::read_to_string(&path).unwrap();
    assert!(original.contains(from), "{file} has no {from:?}");
    std::fs::write(&path, original.replacen(from, to, 1)).unwrap();
    dir
}

/// `attache diff examples/shop NEW EXTRA...`: (exit code, stdout).
fn diff(new: &Path, extra: &[&str]) -> (i32, String) {
    diff_between(&workspace().join("examples/shop"), new, extra)
}

/// `attache diff OLD NEW EXTRA...`: (exit code, stdout).
fn diff_between(old: &Path, new: &Path, extra: &[&str]) -> (i32, String) {
    let mut args = vec!["diff", old.to_str().unwrap(), new.to_str().unwrap()];
    args.extend_from_slice(extra);
    let output = attache(&args);
    (output.status.code().unwrap(), text(&output.stdout))
}

/// Every entry of examples/shop's Gateway, in the order diff lists them.
const SHOP_ENTRIES: [&str; 9] = [
    "admin/infra/ops/0",
    "deals/deals-edge/http/deals/coupons/0",
    "deals/deals-edge/http/deals/offers/0",
    "http/catalog/catalog/browse",
    "http/catalog/reviews/0",
    "http/shop/orders/0",
    "http/shop/storefront/beta",
    "http/shop/storefront/checkout",
    "http/shop/storefront/pages",
];

const GUARDRAIL: &str = "from ClusterRoutePolicy platform-guardrails (overrides @ GatewayClass attache)  [retries-increase]";

#[test]
fn a_gateway_class_override_changed_shows_every_route_it_reaches() {
    let new = edited(
        "diff-class",
        "00-cluster.yaml",
        "attempts: 2",
        "attempts: 4",
    );
    let (code, out) = diff(&new, &["--exit-code"]);
    assert_eq!(code, 4);
    let mut expected = String::from(
        "Gateway infra/edge: 9 entries changed, 0 added, 0 removed; 0 policy status changes\n",
    );
    for entry in SHOP_ENTRIES {
        expected.push_str(&format!(
            "\n~ {entry}\n    retry.attempts  2 -> 4  {GUARDRAIL}\n"
        ));
    }
    assert_eq!(out, expected);
    // A gate on shorter timeouts does not fire on more retries ...
    assert_eq!(diff(&new, &["--fail-on", "timeout-shorter"]).0, 0);
    // ... one on more retries does; without a gate the exit code is 0.
    assert_eq!(
        diff(&new, &["--fail-on", "timeout-shorter,retries-increase"]).0,
        4
    );
    assert_eq!(diff(&new, &[]).0, 0);
}

#[test]
fn a_route_added_is_listed_as_added() {
    let route = "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: gifts, namespace: shop}\nspec:\n  parentRefs: [{name: edge, namespace: infra, sectionName: http}]\n  hostnames: [shop.example.com]\n  rules:\n  - matches: [{path: {type: PathPrefix, value: /gifts}}]\n    backendRefs: [{name: storefront, port: 9000}]\n";
    let dir = scratch("diff-added").join("shop");
    copy_dir(&workspace().join("examples/shop"), &dir);
    std::fs::write(dir.join("60-gifts.yaml"), route).unwrap();
    let (code, out) = diff(&dir, &["--exit-code"]);
    assert_eq!(code, 4);
    assert_eq!(
        out,
        "Gateway infra/edge: 0 entries changed, 1 added, 0 removed; 0 policy status changes\n\n+ http/shop/gifts/0  (added)\n"
    );
    assert_eq!(diff(&dir, &["--fail-on", "entry-added"]).0, 4);
    assert_eq!(diff(&dir, &["--fail-on", "entry-removed"]).0, 0);
}

#[test]
fn a_parent_rule_renamed_without_its_header_filters() {
    let new = edited(
        "diff-moved",
        "40-api.yaml",
        "    - name: orders\n      matches:\n        - path: {type: PathPrefix, value: /api/orders}\n      filters:\n        - type: RequestHeaderModifier\n          requestHeaderModifier:\n            set:\n              - {name: x-season, value: summer}\n              - {name: x-api-version, value: \"2\"}\n",
        "    - name: orders-v3\n      matches:\n        - path: {type: PathPrefix, value: /api/orders}\n",
    );
    let (code, out) = diff(&new, &["--exit-code"]);
    assert_eq!(code, 4);
    assert_eq!(
        out,
        "Gateway infra/edge: 1 entries changed, 0 added, 0 removed; 0 policy status changes\n\n~ http/shop/orders/0\n    requestHeaders.set.x-api-version  \"2\" -> (unset)  [header-changed]\n    requestHeaders.set.x-season       \"summer,winter\" -> \"winter\"  from HTTPRoute shop/orders rule 0 (inline)  [header-changed]\n"
    );
}

#[test]
fn a_delegated_child_moved_to_another_parent_route() {
    // shop/orders leaves infra/api (api.example.com, whose orders rule sets
    // headers) for a new rule of shop/storefront (shop.example.com).
    let new = edited(
        "diff-moved-parent",
        "40-api.yaml",
        "    - name: orders\n      matches:\n        - path: {type: PathPrefix, value: /api/orders}\n      filters:\n        - type: RequestHeaderModifier\n          requestHeaderModifier:\n            set:\n              - {name: x-season, value: summer}\n              - {name: x-api-version, value: \"2\"}\n      backendRefs:\n        - {group: gateway.networking.k8s.io, kind: HTTPRoute, name: orders, namespace: shop}\n",
        "",
    );
    let path = new.join("30-storefront.yaml");
    let storefront = std::fs::read_to_string(&path).unwrap().replacen(
        "---\n# Level: HTTPRoute. Defaults for every rule of the storefront.",
        "    - name: orders\n      matches:\n        - path: {type: PathPrefix, value: /api/orders}\n      backendRefs:\n        - {group: gateway.networking.k8s.io, kind: HTTPRoute, name: orders}\n---\n# Level: HTTPRoute. Defaults for every rule of the storefront.",
        1,
    );
    std::fs::write(&path, storefront).unwrap();
    let (code, out) = diff(&new, &["--exit-code"]);
    assert_eq!(code, 4);
    let storefront_policy = "RoutePolicy shop/storefront (defaults @ HTTPRoute shop/storefront)";
    assert_eq!(
        out,
        format!(
            "Gateway infra/edge: 1 entries changed, 0 added, 0 removed; 0 policy status changes\n\n~ http/shop/orders/0\n    hostnames                         [api.example.com] -> [shop.example.com]  [match-changed]\n    requestHeaders.set.x-api-version  \"2\" -> (unset)  [header-changed]\n    requestHeaders.set.x-season       \"summer,winter\" -> \"winter\"  from HTTPRoute shop/orders rule 0 (inline)  [header-changed]\n    requestHeaders.set.x-shop-tier    (unset) -> \"web\"  from {storefront_policy}  [header-changed]\n    timeouts.requestMs                15000ms -> 5000ms  from {storefront_policy}  [timeout-shorter]\n"
        )
    );
    assert_eq!(diff(&new, &["--fail-on", "timeout-shorter"]).0, 4);
    assert_eq!(diff(&new, &["--fail-on", "match-changed"]).0, 4);
    assert_eq!(
        diff(&new, &["--fail-on", "retries-increase,entry-removed"]).0,
        0
    );
    // The source is worded as `explain` words the same field.
    let explained = attache(&[
        "explain",
        "-f",
        new.to_str().unwrap(),
        "--route",
        "shop/orders",
    ]);
    let explained = text(&explained.stdout);
    assert!(
        explained.contains(&format!(
            "  timeouts.request: 5s\n    from {storefront_policy}\n"
        )),
        "{explained}"
    );
}

#[test]
fn a_gateway_deleted_removes_every_entry_and_strands_its_policies() {
    let new = scratch("diff-no-gateway").join("shop");
    copy_dir(&workspace().join("examples/shop"), &new);
    let path = new.join("10-gateway.yaml");
    let manifests = std::fs::read_to_string(&path).unwrap();
    // Keep the infra policies, drop the Gateway (the file's first document).
    let (_, policies) = manifests.split_once("\n---\n").unwrap();
    std::fs::write(&path, policies).unwrap();
    let (code, out) = diff(&new, &["--fail-on", "entry-removed"]);
    assert_eq!(code, 4);
    let mut expected = String::from(
        "Gateway infra/edge: 0 entries changed, 0 added, 9 removed; 4 policy status changes\n",
    );
    for entry in SHOP_ENTRIES {
        expected.push_str(&format!("\n- {entry}  (removed)\n"));
    }
    expected.push_str("\npolicies\n");
    // The deals team's ListenerSet loses its Gateway, and with it its policy's target.
    expected.push_str(
        "    RoutePolicy deals/deals-listeners: Accepted -> TargetNotFound  [policy-target-not-found]\n      none of its targets exists\n      ListenerSet deals/deals-edge: Accepted -> TargetNotFound\n        attached to an invalid target resource: ListenerSet deals/deals-edge is not attached: Gateway infra/edge is not in the input\n",
    );
    for (policy, target, section) in [
        (
            "admin-listener",
            "Gateway infra/edge listener admin",
            " or its section admin",
        ),
        ("edge-defaults", "Gateway infra/edge", ""),
        (
            "public-listener",
            "Gateway infra/edge listener http",
            " or its section http",
        ),
    ] {
        expected.push_str(&format!(
            "    RoutePolicy infra/{policy}: Accepted -> TargetNotFound  [policy-target-not-found]\n      none of its targets exists\n      {target}: Accepted -> TargetNotFound\n        Gateway edge{section} does not exist\n"
        ));
    }
    assert_eq!(out, expected);
    // The other way round every entry is added, and no policy is new.
    let (code, out) = diff_between(&new, &workspace().join("examples/shop"), &["--exit-code"]);
    assert_eq!(code, 4);
    assert!(
        out.starts_with(
            "Gateway infra/edge: 0 entries changed, 9 added, 0 removed; 4 policy status changes\n"
        ),
        "{out}"
    );
}

#[test]
fn a_child_moved_without_effect_is_no_effective_change() {
    // reviews hangs under infra/api directly instead of under catalog/catalog,
    // which adds nothing to it: the tree changed, the traffic does not.
    let new = edited(
        "diff-noop",
        "40-api.yaml",
        "    - name: catalog\n      matches:\n        - path: {type: PathPrefix, value: /api/catalog}\n      backendRefs:\n        - {group: gateway.networking.k8s.io, kind: HTTPRoute, name: catalog, namespace: catalog}\n",
        "    - name: reviews\n      matches:\n        - path: {type: PathPrefix, value: /api/catalog/reviews}\n      backendRefs:\n        - {group: gateway.networking.k8s.io, kind: HTTPRoute, name: reviews, namespace: catalog}\n    - name: catalog\n      matches:\n        - path: {type: PathPrefix, value: /api/catalog}\n      backendRefs:\n        - {group: gateway.networking.k8s.io, kind: HTTPRoute, name: catalog, namespace: catalog}\n",
    );
    let path = new.join("40-api.yaml");
    let without = std::fs::read_to_string(&path).unwrap().replacen(
        "    - name: reviews\n      matches:\n        - path: {type: PathPrefix, value: /api/catalog/reviews}\n      backendRefs:\n        - {group: gateway.networking.k8s.io, kind: HTTPRoute, name: reviews}\n",
        "",
        1,
    );
    std::fs::write(&path, without).unwrap();
    let (code, out) = diff(&new, &["--exit-code"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out,
        "Gateway infra/edge: 0 entries changed, 0 added, 0 removed; 0 policy status changes\nno effective change\n"
    );
}

#[test]
fn a_policy_made_invalid_shows_its_status_and_what_its_routes_lose() {
    let new = edited(
        "diff-invalid",
        "40-api.yaml",
        "request: 20s",
        "request: 20 seconds",
    );
    let (code, out) = diff(&new, &["--fail-on", "policy-invalid"]);
    assert_eq!(code, 4);
    // retry.retryOn does not change: without the policy's connect-failure,
    // the connection errors a retry stanza retries (GEP-1731) still include it.
    assert_eq!(
        out,
        "Gateway infra/edge: 1 entries changed, 0 added, 0 removed; 1 policy status changes\n\n~ http/catalog/reviews/0\n    timeouts.backendRequestMs  6000ms -> 4000ms  from RoutePolicy infra/edge-defaults (defaults @ Gateway infra/edge)  [timeout-shorter]\n    timeouts.requestMs         20000ms -> 15000ms  from RoutePolicy infra/edge-defaults (defaults @ Gateway infra/edge)  [timeout-shorter]\n\npolicies\n    RoutePolicy catalog/reviews: Accepted -> Invalid  [policy-invalid]\n      dropped: spec.timeouts.request: \"20 seconds\" is not a Gateway API duration\n"
    );
    // --strict: NEW has an error, so exit 3 whatever changed.
    assert_eq!(diff(&new, &["--strict", "--exit-code"]).0, 3);
}

/// checkout-retries also targets the storefront's `beta` rule.
fn two_targets(label: &str) -> PathBuf {
    edited(
        label,
        "30-storefront.yaml",
        "      sectionName: checkout\n",
        "      sectionName: checkout\n    - group: gateway.networking.k8s.io\n      kind: HTTPRoute\n      name: storefront\n      sectionName: beta\n",
    )
}

#[test]
fn a_policy_losing_one_of_two_targets_shows_that_target() {
    let old = two_targets("diff-target-old");
    let new = two_targets("diff-target-new");
    let path = new.join("30-storefront.yaml");
    let renamed = std::fs::read_to_string(&path).unwrap().replacen(
        "    - name: beta\n",
        "    - name: preview\n",
        1,
    );
    std::fs::write(&path, renamed).unwrap();
    let (code, out) = diff_between(&old, &new, &["--exit-code"]);
    assert_eq!(code, 4);
    assert_eq!(
        out,
        "Gateway infra/edge: 0 entries changed, 1 added, 1 removed; 1 policy status changes\n\n+ http/shop/storefront/preview  (added)\n\n- http/shop/storefront/beta  (removed)\n\npolicies\n    RoutePolicy shop/checkout-retries: still Accepted  [policy-target-not-found]\n      HTTPRoute shop/storefront rule beta: Accepted -> TargetNotFound\n        HTTPRoute storefront or its section beta does not exist\n"
    );
    assert_eq!(
        diff_between(&old, &new, &["--fail-on", "policy-target-not-found"]).0,
        4
    );
    assert_eq!(
        diff_between(&old, &new, &["--fail-on", "policy-invalid"]).0,
        0
    );
    // Renamed back, the target recovers.
    let (code, out) = diff_between(&new, &old, &["--fail-on", "policy-recovered"]);
    assert_eq!(code, 4);
    assert!(
        out.ends_with("    RoutePolicy shop/checkout-retries: still Accepted  [policy-recovered]\n      HTTPRoute shop/storefront rule beta: TargetNotFound -> Accepted\n"),
        "{out}"
    );
    assert_valid(&diff_between(&old, &new, &["-o", "json"]).1);
}

/// Validates `diff -o json` output against docs/schema/diff-1.json.
fn assert_valid(json: &str) -> Value {
    let value: Value = serde_json::from_str(json).unwrap();
    let errors: Vec<String> = validator()
        .iter_errors(&value)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}\n{json}");
    value
}

fn validator() -> jsonschema::Validator {
    let schema = std::fs::read_to_string(workspace().join("docs/schema/diff-1.json")).unwrap();
    jsonschema::validator_for(&serde_json::from_str(&schema).unwrap()).unwrap()
}

#[test]
fn json_output_matches_its_schema_and_the_text() {
    let new = edited(
        "diff-json",
        "40-api.yaml",
        "request: 20s",
        "request: 20 seconds",
    );
    let (code, out) = diff(&new, &["-o", "json"]);
    assert_eq!(code, 0);
    let value = assert_valid(&out);
    let validator = validator();
    assert_eq!(
        value["entriesChanged"][0]["entry"],
        "http/catalog/reviews/0"
    );
    assert_eq!(value["policies"][0]["new"], "Invalid");
    assert_eq!(value["policies"][0]["kinds"][0], "policy-invalid");
    // The schema rejects what it must: an unknown kind.
    let mut bad = value.clone();
    bad["policies"][0]["kinds"][0] = Value::from("policy-sad");
    assert!(!validator.is_valid(&bad));
}

/// A git repository holding a copy of examples/shop in `shop/`, committed.
fn git_repo(label: &str) -> PathBuf {
    let repo = scratch(label);
    copy_dir(&workspace().join("examples/shop"), &repo.join("shop"));
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "shop"]);
    repo
}

fn git(repo: &Path, args: &[&str]) {
    let out = Command::new("git")
        .current_dir(repo)
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(["-c", "commit.gpgsign=false"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
}

/// `attache ARGS` run inside `repo`: (exit code, stdout, stderr).
fn attache_in(repo: &Path, args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_attache"))
        .current_dir(repo)
        .args(args)
        .output()
        .unwrap();
    let code = output.status.code().unwrap();
    (code, text(&output.stdout), text(&output.stderr))
}

#[test]
fn git_reads_old_at_a_revision_as_the_files_would_read() {
    let repo = git_repo("diff-git");
    let cluster = repo.join("shop/00-cluster.yaml");
    let edited = std::fs::read_to_string(&cluster).unwrap();
    std::fs::write(&cluster, edited.replacen("attempts: 2", "attempts: 1", 1)).unwrap();
    let args = ["--fail-on", "retries-decrease"];
    let (code, from_git, stderr) = attache_in(
        &repo,
        &[&["diff", "--git", "HEAD", "shop"][..], &args].concat(),
    );
    assert_eq!(code, 4, "{stderr}\n{from_git}");
    assert!(from_git.contains("retry.attempts  2 -> 1"), "{from_git}");
    assert!(from_git.contains("[retries-decrease]"), "{from_git}");
    // The same comparison from two directories prints the same bytes.
    let shop = repo.join("shop");
    let (code, from_files) = diff_between(&workspace().join("examples/shop"), &shop, &args);
    assert_eq!((code, from_files), (4, from_git));
}

#[test]
fn git_refuses_what_it_cannot_read_safely() {
    let repo = git_repo("diff-git-refuse");
    // A revision that does not exist: exit 1 with git's reason.
    let (code, _, stderr) = attache_in(&repo, &["diff", "--git", "no-such-rev", "shop"]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("git rev-parse --verify no-such-rev^{tree} failed"),
        "{stderr}"
    );
    // A revision that git would take as an option is never passed to it.
    let (code, _, stderr) = attache_in(&repo, &["diff", "--git=--output=x", "shop"]);
    assert_eq!(code, 1);
    assert!(
        stderr.starts_with("error: --git \"--output=x\": a revision cannot start with '-'"),
        "{stderr}"
    );
    assert!(!repo.join("x").exists());
    // A manifest committed as a symbolic link is not followed.
    std::os::unix::fs::symlink("/etc/hostname", repo.join("shop/link.yaml")).unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "link"]);
    let (code, _, stderr) = attache_in(&repo, &["diff", "--git", "HEAD", "shop"]);
    assert_eq!(code, 1);
    assert!(
        stderr.starts_with("error: HEAD:shop/link.yaml: is a symbolic link in git; not followed"),
        "{stderr}"
    );
    // A blob over --max-input-bytes is refused before it is read.
    let (code, _, stderr) = attache_in(
        &repo,
        &[
            "diff",
            "--git",
            "HEAD~1",
            "shop",
            "--max-input-bytes",
            "100",
        ],
    );
    assert_eq!(code, 1);
    assert!(
        stderr.starts_with("error: HEAD~1:shop/00-cluster.yaml: is larger than 100 bytes"),
        "{stderr}"
    );
}

/// `-o json` carries values in the API's types: durations as Gateway API
/// durations, counts and codes as numbers, header values as strings.
#[test]
fn json_values_are_typed_as_the_api_writes_them() {
    let new = edited(
        "diff-json-types",
        "10-gateway.yaml",
        "      request: 15s\n",
        "      request: 1m30s\n",
    );
    let new = {
        let path = new.join("30-storefront.yaml");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(
            &path,
            text.replacen("codes: [502, 503]", "codes: [502, 503, 504]", 1),
        )
        .unwrap();
        new
    };
    let (code, out) = diff(&new, &["-o", "json"]);
    assert_eq!(code, 0);
    let json = assert_valid(&out);
    let fields: Vec<&serde_json::Value> = json["entriesChanged"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|e| e["fields"].as_array().unwrap())
        .collect();
    let request = fields
        .iter()
        .find(|f| f["field"] == "timeouts.requestMs")
        .unwrap();
    assert_eq!(request["old"], serde_json::json!("15s"));
    assert_eq!(request["new"], serde_json::json!("1m30s"));
    let codes = fields.iter().find(|f| f["field"] == "retry.codes").unwrap();
    assert_eq!(codes["old"], serde_json::json!([502, 503]));
    assert_eq!(codes["new"], serde_json::json!([502, 503, 504]));
    // The text output keeps its words.
    let (_, text_out) = diff(&new, &[]);
    assert!(
        text_out.contains("timeouts.requestMs  15000ms -> 90000ms"),
        "{text_out}"
    );
}
