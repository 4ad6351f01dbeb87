//! `attache explain` and `attache status` on real files.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
use support::{attache, fixture, text};

fn shop() -> String {
    fixture("shop.yaml").display().to_string()
}

#[test]
fn explain_table_shows_value_supplier_level_and_losers() {
    let out = attache(&[
        "explain",
        "-f",
        &shop(),
        "--route",
        "shop/api",
        "--rule",
        "checkout",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines[0], "http/shop/api/checkout");
    assert_eq!(
        lines[1],
        "  listener http, HTTPRoute shop/api rule checkout, via HTTPRoute shop/storefront rule api"
    );
    assert!(
        lines[2].starts_with("  FIELD") && lines[2].contains("VALUE") && lines[2].contains("FROM"),
        "{table}"
    );
    let request = lines
        .iter()
        .position(|l| l.trim_start().starts_with("timeouts.requestMs"))
        .unwrap();
    assert!(
        lines[request].contains("2000ms")
            && lines[request].ends_with(
                "RoutePolicy shop/checkout-fast (defaults @ HTTPRoute shop/api rule checkout)"
            ),
        "{table}"
    );
    assert!(lines[request + 1].contains("lost: 30000ms from ClusterRoutePolicy class-defaults (defaults @ GatewayClass attache)"), "{table}");
    assert!(table.contains("note: timeouts.backendRequest 5000ms exceeds timeouts.request 2000ms; clamped to 2000ms"), "{table}");
}

#[test]
fn explain_json_is_for_tools_and_covers_every_rule_of_the_route() {
    let out = attache(&[
        "explain",
        "-f",
        &shop(),
        "--route",
        "shop/api",
        "-o",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let entries: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["entry"].as_str().unwrap())
        .collect();
    assert_eq!(entries, ["http/shop/api/checkout", "http/shop/api/1"]);
    let retry = v[1]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["field"] == "retry.attempts")
        .unwrap();
    assert_eq!(retry["value"], "3");
    assert_eq!(retry["from"][0]["source"], "RoutePolicy shop/api-retries");
    assert_eq!(
        retry["from"][0]["level"],
        "HTTPRoute shop/storefront rule api"
    );
}

#[test]
fn explain_of_an_unknown_route_lists_what_exists() {
    let out = attache(&["explain", "-f", &shop(), "--route", "shop/nope"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("no entry for HTTPRoute shop/nope in the resolved Gateway infra/edge"),
        "{err}"
    );
    assert!(err.contains("http/shop/api/checkout"), "{err}");
}

#[test]
fn status_is_a_kubectl_style_list_with_reasons() {
    let bad = fixture("bad-policies.yaml").display().to_string();
    let out = attache(&["status", "-f", &shop(), "-f", &bad]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let list: serde_json::Value = serde_yaml_ng::from_slice(&out.stdout).unwrap();
    assert_eq!(list["kind"], "List");
    let reason = |name: &str| {
        let item = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["metadata"]["name"] == name)
            .unwrap();
        item["status"]["conditions"][0]["reason"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(reason("checkout-fast"), "Accepted");
    assert_eq!(reason("fast"), "Invalid");
    assert_eq!(reason("ghost"), "TargetNotFound");
    assert_eq!(reason("class-defaults"), "Accepted");
    let item = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["metadata"]["name"] == "class-defaults")
        .unwrap();
    assert_eq!(item["kind"], "ClusterRoutePolicy");
    assert!(item["metadata"].get("namespace").is_none());
    let attached = &item["status"]["ancestors"][0]["conditions"][1];
    assert_eq!(attached["type"], "Attached");
    assert_eq!(
        attached["reason"], "Merged",
        "its timeout is beaten on some rules"
    );
    // Deterministic: same bytes twice.
    assert_eq!(
        attache(&["status", "-f", &shop(), "-f", &bad]).stdout,
        out.stdout
    );
}

#[test]
fn explain_and_status_help_teach_with_examples() {
    for sub in ["explain", "status"] {
        let help = text(&attache(&[sub, "--help"]).stdout);
        assert!(help.contains("Examples:"), "{sub}: {help}");
    }
    let help = text(&attache(&["status", "--help"]).stdout);
    assert!(
        help.contains("Conflicted") && help.contains("Overridden"),
        "{help}"
    );
}

#[test]
fn explain_filters_by_listener() {
    let out = attache(&[
        "explain",
        "-f",
        &shop(),
        "--route",
        "shop/api",
        "--listener",
        "admin",
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "shop/api is not served on admin"
    );
    assert!(text(&out.stderr).contains("HTTPRoute shop/api on listener admin"));
    let out = attache(&[
        "explain",
        "-f",
        &shop(),
        "--route",
        "shop/api",
        "--listener",
        "http",
        "--rule",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout).lines().next(), Some("http/shop/api/1"));
}
