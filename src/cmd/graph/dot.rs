//! The graph as Graphviz DOT (`dot -Tsvg`).

use std::fmt::Write as _;

use super::model::{EdgeKind, Graph, Level, NodeKind};

/// A DOT string literal.
fn quoted(lines: &[String]) -> String {
    let escaped: Vec<String> = lines
        .iter()
        .map(|l| l.replace('\\', "\\\\").replace('"', "\\\""))
        .collect();
    format!("\"{}\"", escaped.join("\\n"))
}

fn style(kind: NodeKind) -> &'static str {
    match kind {
        NodeKind::Policy => "shape=note, style=filled, fillcolor=\"#fff4d6\"",
        NodeKind::Level(Level::Rule) => {
            "shape=box, style=\"rounded,filled\", fillcolor=\"#eef7ee\""
        }
        NodeKind::Level(_) => "shape=box, style=\"rounded,filled\", fillcolor=\"#e8eef7\"",
    }
}

pub fn render(g: &Graph) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "digraph attache {{");
    let _ = writeln!(out, "  label={};", quoted(std::slice::from_ref(&g.title)));
    out.push_str("  labelloc=t;\n  rankdir=LR;\n  fontname=\"Helvetica\";\n");
    out.push_str("  node [fontname=\"Helvetica\", fontsize=10];\n");
    out.push_str("  edge [fontname=\"Helvetica\", fontsize=9];\n");
    for n in &g.nodes {
        let _ = writeln!(
            out,
            "  {} [label={}, {}];",
            n.id,
            quoted(&n.lines),
            style(n.kind)
        );
    }
    for e in &g.edges {
        let attrs = match e.kind {
            EdgeKind::Tree => String::new(),
            EdgeKind::Attach => format!(
                " [label={}, style=dashed, color=\"#b07d00\"]",
                quoted(&e.label)
            ),
            EdgeKind::Wins => format!(
                " [label={}, color=\"#2a7a2a\", fontcolor=\"#2a7a2a\", penwidth=2]",
                quoted(&e.label)
            ),
        };
        let _ = writeln!(out, "  {} -> {}{attrs};", e.from, e.to);
    }
    out.push_str("}\n");
    out
}
