//! `attache status -o table`: one line per policy, kubectl's habit.

use attache_core::status::drift::Drift;
use attache_core::status::routes::ParentReference;
use attache_core::status::{AncestorRef, Condition, PolicyStatus, RouteStatus};

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

/// One condition's reason per target (`Attached`: how much of the policy
/// is in effect; `Programmed`: the same in GEP-713's 2025 words), joined
/// when the targets differ.
fn reasons_per_target(p: &PolicyStatus, condition: &str) -> String {
    let mut reasons: Vec<&str> = Vec::new();
    for a in &p.status.ancestors {
        let reason = a
            .conditions
            .iter()
            .find(|c| c.kind == condition)
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

/// What a live read adds per policy: the SERVED cell and the DRIFT word.
pub struct Live<'a> {
    pub served: &'a [String],
    pub drifts: &'a [Drift],
}

/// The policies' table (with SERVED and DRIFT columns when the status was
/// read from the cluster), then (after a blank line) the routes' table:
/// one line per parentRef.
pub fn render(
    policies: &[&PolicyStatus],
    live: Option<&Live<'_>>,
    routes: &[&RouteStatus],
) -> String {
    let mut out = render_policies(policies, live);
    if !routes.is_empty() {
        out.push('\n');
        out.push_str(&render_routes(routes));
    }
    out
}

/// `Gateway/edge:http`, `ListenerSet/gifts-edge`, with the port when given.
fn parent(r: &ParentReference) -> String {
    let mut out = format!("{}/{}", r.kind, r.name);
    if let Some(section) = &r.section_name {
        out.push(':');
        out.push_str(section);
    }
    if let Some(port) = r.port {
        out.push_str(&format!(" port {port}"));
    }
    out
}

fn render_routes(routes: &[&RouteStatus]) -> String {
    let mut rows: Vec<Vec<String>> = vec![vec![
        "ROUTE".into(),
        "NAMESPACE".into(),
        "NAME".into(),
        "PARENT".into(),
        "ACCEPTED".into(),
        "REASON".into(),
    ]];
    for r in routes {
        if r.status.parents.is_empty() {
            rows.push(vec![
                r.kind.clone(),
                r.metadata.namespace.clone().unwrap_or_default(),
                r.metadata.name.clone(),
                "-".into(),
                "-".into(),
                "-".into(),
            ]);
        }
        for p in &r.status.parents {
            let accepted = accepted_condition(&p.conditions);
            rows.push(vec![
                r.kind.clone(),
                r.metadata.namespace.clone().unwrap_or_default(),
                r.metadata.name.clone(),
                parent(&p.parent_ref),
                accepted.map_or("-", |c| c.status.as_str()).into(),
                accepted.map_or("-", |c| c.reason.as_str()).into(),
            ]);
        }
    }
    columns(&rows)
}

/// The policies' table; columns as wide as their widest cell, the last one unpadded.
fn render_policies(policies: &[&PolicyStatus], live: Option<&Live<'_>>) -> String {
    if policies.is_empty() {
        return "No policies found.\n".into();
    }
    let mut rows: Vec<Vec<String>> = vec![vec![
        "KIND".into(),
        "NAMESPACE".into(),
        "NAME".into(),
        "ACCEPTED".into(),
        "REASON".into(),
        "TARGETS".into(),
        "IN EFFECT".into(),
        "PROGRAMMED".into(),
    ]];
    if live.is_some() {
        rows[0].push("SERVED".into());
        rows[0].push("DRIFT".into());
    }
    for (i, p) in policies.iter().enumerate() {
        let accepted = accepted_condition(&p.status.conditions);
        let targets: Vec<String> = p
            .status
            .ancestors
            .iter()
            .map(|a| target(&a.ancestor_ref))
            .collect();
        let mut row = vec![
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
            reasons_per_target(p, "Attached"),
            reasons_per_target(p, "Programmed"),
        ];
        if let Some(live) = live {
            row.push(live.served.get(i).map_or("-", String::as_str).into());
            row.push(live.drifts.get(i).map_or("-", |d| d.word()).into());
        }
        rows.push(row);
    }
    columns(&rows)
}

/// Rows as columns as wide as their widest cell, the last one unpadded.
fn columns(rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = Vec::new();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if widths.len() <= i {
                widths.push(0);
            }
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                let w = widths.get(i).copied().unwrap_or_default();
                line.push_str(&format!("{cell:<w$}   "));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
