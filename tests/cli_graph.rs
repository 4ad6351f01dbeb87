//! `attache graph`: the attachment tree as Graphviz DOT and Mermaid, and
//! the DOT rendered by Graphviz itself.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
#[path = "support/tools.rs"]
mod tools;

use std::io::Write;
use std::process::{Command, Stdio};

use support::{attache, attache_ok, text, workspace};

fn graph(extra: &[&str]) -> String {
    let mut args = vec!["graph", "-f", "examples/shop"];
    args.extend(extra);
    text(&attache_ok(&args).stdout)
}

/// The committed picture is what the command draws today (docs/graph.md
/// shows it; the failure message gives the command that regenerates it).
#[test]
fn the_shop_tree_is_the_committed_dot() {
    for (file, extra) in [
        ("docs/graph/shop.dot", vec![]),
        (
            "docs/graph/shop-checkout.dot",
            vec!["--route", "shop/storefront", "--rule", "checkout"],
        ),
    ] {
        let committed = std::fs::read_to_string(workspace().join(file)).unwrap();
        assert_eq!(
            graph(&extra),
            committed,
            "{file} is stale: attache graph -f examples/shop {} > {file}",
            extra.join(" ")
        );
    }
}

#[test]
fn every_level_and_policy_is_drawn_with_its_edges() {
    let dot = graph(&[]);
    for node in [
        "label=\"GatewayClass\\nattache\"",
        "label=\"Namespace\\ninfra\"",
        "label=\"Gateway\\ninfra/edge\"",
        "label=\"listener\\nadmin\"",
        "label=\"HTTPRoute\\nshop/orders\"",
        "label=\"rule\\ncheckout\"",
        "label=\"ClusterRoutePolicy\\nplatform-guardrails\", shape=note",
        "label=\"ListenerSet\\ndeals/deals-edge\"",
        "label=\"HTTPRoute\\ndeals/offers\"",
        "label=\"RoutePolicy\\ndeals/coupons-atomic\", shape=note",
    ] {
        assert!(dot.contains(node), "{node} missing:\n{dot}");
    }
    // 10 policies, each at its one target; 26 tree edges (GatewayClass to
    // Namespace to Gateway, two listeners, the deals ListenerSet and its
    // listener, the routes and rules, three delegations).
    assert_eq!(dot.matches("style=dashed").count(), 10, "{dot}");
    assert_eq!(
        dot.lines()
            .filter(|l| l.trim_end().ends_with(';') && l.contains(" -> ") && !l.contains('['))
            .count(),
        26,
        "{dot}"
    );
}

/// With --route, the bold edges say which supplier won which field, in the
/// supplier's own words.
#[test]
fn a_chosen_rule_shows_each_winner_and_its_fields() {
    let dot = graph(&["--route", "shop/orders"]);
    let line = dot
        .lines()
        .find(|l| l.contains("penwidth=2") && l.contains("retry.attempts: 2"))
        .unwrap_or_else(|| panic!("{dot}"));
    assert!(
        line.contains("retry.retryOn: [connect-failure, refused-stream, reset]"),
        "{line}"
    );
    let guardrails = dot
        .lines()
        .find(|l| l.contains("platform-guardrails\""))
        .and_then(|l| l.trim_start().split(' ').next())
        .unwrap();
    assert!(
        line.trim_start().starts_with(&format!("{guardrails} -> ")),
        "{line}"
    );
    // The rule's own value is in its box; only the route's path is drawn.
    assert!(dot.contains("label=\"rule\\n0\\nown values:\\nrequestHeaderModifier.set[x-season]: \\\"summer,winter\\\"\""), "{dot}");
    assert!(!dot.contains("catalog"), "{dot}");
}

#[test]
fn mermaid_draws_the_same_tree() {
    let mermaid = graph(&["--route", "shop/orders", "-o", "mermaid"]);
    assert!(mermaid.starts_with("---\ntitle: Gateway infra/edge: policy attachment\n---\nflowchart LR\n  n0(\"GatewayClass<br/>attache\")\n"), "{mermaid}");
    assert!(
        mermaid.contains("  n9[/\"ClusterRoutePolicy<br/>platform-guardrails\"/]\n"),
        "{mermaid}"
    );
    assert!(
        mermaid.contains("  n9 -.->|\"defaults + overrides\"| n0\n"),
        "{mermaid}"
    );
    assert!(
        mermaid.contains(
            "  n10 ==>|\"requestHeaderModifier.set[x-environment]: #quot;demo#quot;\"| n7\n"
        ),
        "{mermaid}"
    );
}

#[test]
fn an_unknown_route_lists_what_exists() {
    let out = attache(&["graph", "-f", "examples/shop", "--route", "shop/nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("error: no entry for HTTPRoute shop/nope in the resolved Gateway infra/edge; entries there: "), "{}", text(&out.stderr));
}

/// Graphviz reads the DOT and draws every node and edge of it.
#[test]
fn graphviz_renders_the_dot_to_svg() {
    let Some(dot) = tools::tool("dot", "graphviz") else {
        return;
    };
    let source = graph(&[]);
    let mut child = Command::new(dot)
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(source.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "dot failed: {}", text(&out.stderr));
    let svg = text(&out.stdout);
    assert!(svg.contains("<svg"), "{svg}");
    assert!(svg.contains("<title>attache</title>"), "{svg}");
    assert_eq!(svg.matches("class=\"node\"").count(), 37, "{svg}");
    assert_eq!(svg.matches("class=\"edge\"").count(), 36, "{svg}");
    for label in [
        "GatewayClass",
        "platform&#45;guardrails",
        "infra/edge&#45;defaults",
        "defaults + overrides",
        "Gateway infra/edge: policy attachment",
    ] {
        assert!(
            svg.contains(&format!(">{label}<")),
            "{label} not drawn:\n{svg}"
        );
    }
}
