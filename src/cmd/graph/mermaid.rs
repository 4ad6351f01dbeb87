//! The graph as a Mermaid flowchart (renders in GitHub Markdown).

use std::fmt::Write as _;

use super::model::{EdgeKind, Graph, NodeKind};

/// A Mermaid label: quoted, `"` as an entity, lines joined by `<br/>`.
fn label(lines: &[String]) -> String {
    let escaped: Vec<String> = lines
        .iter()
        .map(|l| {
            l.replace('&', "#amp;")
                .replace('"', "#quot;")
                .replace('<', "#lt;")
                .replace('>', "#gt;")
        })
        .collect();
    format!("\"{}\"", escaped.join("<br/>"))
}

pub fn render(g: &Graph) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "---\ntitle: {}\n---", g.title);
    out.push_str("flowchart LR\n");
    for n in &g.nodes {
        let text = label(&n.lines);
        let _ = match n.kind {
            NodeKind::Policy => writeln!(out, "  {}[/{text}/]", n.id),
            NodeKind::Level(_) => writeln!(out, "  {}({text})", n.id),
        };
    }
    for e in &g.edges {
        let _ = match e.kind {
            EdgeKind::Tree => writeln!(out, "  {} --> {}", e.from, e.to),
            EdgeKind::Attach => writeln!(out, "  {} -.->|{}| {}", e.from, label(&e.label), e.to),
            EdgeKind::Wins => writeln!(out, "  {} ==>|{}| {}", e.from, label(&e.label), e.to),
        };
    }
    out
}
