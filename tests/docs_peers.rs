//! docs/peers.md lists exactly the mappings the reader uses
//! (crates/attache-core/src/model/peers.rs), in the same order.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use attache_core::model::peers::{Mapping, BACKEND_TRAFFIC_POLICY, TRAFFIC_POLICY};

/// The "enforced" rows of the table that follows `heading`.
fn enforced_rows(doc: &str, heading: &str) -> Vec<(String, String)> {
    let section = doc.split(heading).nth(1).unwrap();
    let section = section.split("\n## ").next().unwrap();
    section
        .lines()
        .filter(|l| l.starts_with("| `") && l.trim_end().ends_with("| enforced |"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (
                cells[1].trim_matches('`').to_string(),
                cells[2].trim_matches('`').to_string(),
            )
        })
        .collect()
}

fn table(mappings: &[Mapping]) -> Vec<(String, String)> {
    mappings
        .iter()
        .map(|m| (m.theirs.to_string(), m.ours.to_string()))
        .collect()
}

#[test]
fn docs_peers_lists_every_mapping_and_no_other() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/peers.md")).unwrap();
    assert_eq!(
        enforced_rows(&doc, "## kgateway `TrafficPolicy`"),
        table(TRAFFIC_POLICY)
    );
    assert_eq!(
        enforced_rows(&doc, "## Envoy Gateway `BackendTrafficPolicy`"),
        table(BACKEND_TRAFFIC_POLICY)
    );
}
