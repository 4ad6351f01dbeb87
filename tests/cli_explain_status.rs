//! `attache explain` and `attache status` on real files.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
use support::{attache, fixture, text};

fn shop() -> String {
    fixture("shop.yaml").display().to_string()
}

/// `attache explain` with COLUMNS set, as a shell on a terminal exports it.
fn explain_at(columns: &str, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_attache"))
        .current_dir(support::workspace())
        .env("COLUMNS", columns)
        .arg("explain")
        .args(args)
        .output()
        .unwrap()
}

/// Fields and values as the policies write them, who set each, who lost and
/// why, each name said once, wrapped at 80 columns.
#[test]
fn explain_table_speaks_the_policies_words_wrapped_to_the_width() {
    let out = explain_at(
        "80",
        &["-f", &shop(), "--route", "shop/api", "--rule", "checkout"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "\
http/shop/api/checkout
  listener http, HTTPRoute shop/api rule checkout, via HTTPRoute shop/storefront
    rule api
  timeouts.request: 2s
    from RoutePolicy shop/checkout-fast (defaults @ HTTPRoute shop/api rule
      checkout)
    lost 30s from ClusterRoutePolicy class-defaults (defaults @ GatewayClass
      attache): it fills only unset fields; already set by RoutePolicy
      shop/checkout-fast at HTTPRoute shop/api rule checkout
  timeouts.backendRequest: 2s
    from RoutePolicy infra/edge-limits (overrides @ Gateway infra/edge)
  retry.attempts: 3
    from RoutePolicy shop/api-retries (defaults @ HTTPRoute shop/storefront rule
      api)
    lost 1 from ClusterRoutePolicy class-defaults (defaults @ GatewayClass
      attache): it fills only unset fields; already set by RoutePolicy
      shop/api-retries at HTTPRoute shop/storefront rule api
  retry.codes: [502, 503]
    from RoutePolicy shop/api-retries (defaults @ HTTPRoute shop/storefront rule
      api)
  retry.backoff: 100ms
    from RoutePolicy shop/api-retries (defaults @ HTTPRoute shop/storefront rule
      api)
  retry.retryOn: [connect-failure, refused-stream, reset]
    from ClusterRoutePolicy class-defaults (defaults @ GatewayClass attache)
  requestHeaderModifier.set[x-checkout]: \"1\"
    from HTTPRoute shop/api rule checkout (inline)
  note: timeouts.backendRequest 5s exceeds timeouts.request 2s; clamped to 2s
  note: retry.retryOn: connect-failure, refused-stream and reset added: a retry
    stanza in effect retries connection errors (Gateway API, GEP-1731)
"
    );
    // Piped without COLUMNS: one line per fact, for grep.
    let piped = attache(&[
        "explain",
        "-f",
        &shop(),
        "--route",
        "shop/api",
        "--rule",
        "checkout",
    ]);
    let piped = text(&piped.stdout);
    assert!(piped.lines().any(|l| l == "    lost 30s from ClusterRoutePolicy class-defaults (defaults @ GatewayClass attache): it fills only unset fields; already set by RoutePolicy shop/checkout-fast at HTTPRoute shop/api rule checkout"), "{piped}");
}

/// A rule's own value that wins is named once, not as "X at X (inline)".
#[test]
fn a_rule_that_set_a_value_itself_is_named_once() {
    let out = explain_at(
        "200",
        &[
            "-f",
            "examples/shop",
            "--route",
            "shop/storefront",
            "--rule",
            "checkout",
        ],
    );
    let table = text(&out.stdout);
    assert!(
        table.contains("already set by HTTPRoute shop/storefront rule checkout\n"),
        "{table}"
    );
    assert!(
        !table.contains("checkout at HTTPRoute shop/storefront rule checkout"),
        "{table}"
    );
}

/// A BackendTrafficPolicy's value reads as Envoy Gateway writes it.
#[test]
fn a_peer_policy_field_is_written_in_its_own_kind() {
    let out = explain_at(
        "200",
        &[
            "-f",
            "examples/peers/envoy-gateway",
            "--route",
            "apps/orders",
        ],
    );
    let table = text(&out.stdout);
    assert!(
        table.contains(
            "  timeout.http.requestTimeout: 5s\n    from BackendTrafficPolicy apps/orders"
        ),
        "{table}"
    );
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
fn a_missing_rule_of_a_grpc_route_names_its_kind() {
    let out = attache(&[
        "explain",
        "-f",
        "examples/grpc",
        "--gateway",
        "infra/grpc-edge",
        "--route",
        "shop/cart",
        "--rule",
        "nope",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains(
            "no entry for GRPCRoute shop/cart rule nope in the resolved Gateway infra/grpc-edge"
        ),
        "{err}"
    );
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
