//! `attache status -o table`: one line per policy, kubectl's habit.

use attache_core::status::{AncestorRef, Condition, PolicyStatus};

/// Whether the policy as a whole is Accepted.
pub fn accepted(p: &PolicyStatus) -> bool {
    accepted_condition(&p.status.conditions).is_some_and(|c| c.status == "True")
}

fn accepted_condition(conditions: &[Condition]) -> Option<&Condition> {
    conditions.iter().find(|c| c.kind == "Accepted")
}

/// `Gateway/edge:http`, `GatewayClass/attache`.
fn target(r: &AncestorRef) -> String {
    let mut out = format!("{}/{}", r.kind, r.name);
    if let Some(section) = &r.section_name {
        out.push(':');
        out.push_str(section);
    }
    out
}

/// How much of the policy is in effect, per target (the `Attached`
/// condition's reason), joined when the targets differ.
fn in_effect(p: &PolicyStatus) -> String {
    let mut reasons: Vec<&str> = Vec::new();
    for a in &p.status.ancestors {
        let reason = a
            .conditions
            .iter()
            .find(|c| c.kind == "Attached")
            .map_or("-", |c| c.reason.as_str());
        if !reasons.contains(&reason) {
            reasons.push(reason);
        }
    }
    if reasons.is_empty() {
        "-".into()
    } else {
        reasons.join(",")
    }
}

/// The table; columns as wide as their widest cell, the last one unpadded.
pub fn render(policies: &[&PolicyStatus]) -> String {
    if policies.is_empty() {
        return "No policies found.\n".into();
    }
    let mut rows: Vec<[String; 7]> = vec![[
        "KIND".into(),
        "NAMESPACE".into(),
        "NAME".into(),
        "ACCEPTED".into(),
        "REASON".into(),
        "TARGETS".into(),
        "IN EFFECT".into(),
    ]];
    for p in policies {
        let accepted = accepted_condition(&p.status.conditions);
        let targets: Vec<String> = p
            .status
            .ancestors
            .iter()
            .map(|a| target(&a.ancestor_ref))
            .collect();
        rows.push([
            p.kind.clone(),
            p.metadata.namespace.clone().unwrap_or_else(|| "-".into()),
            p.metadata.name.clone(),
            accepted.map_or("-", |c| c.status.as_str()).into(),
            accepted.map_or("-", |c| c.reason.as_str()).into(),
            if targets.is_empty() {
                "-".into()
            } else {
                targets.join(",")
            },
            in_effect(p),
        ]);
    }
    let mut widths = [0usize; 7];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<w$}   ", w = widths[i]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
