//! `Programmed` in the words of what the replicas serve
//! (docs/status.md, "Programmed means served"): the condition the core
//! computes from what was applied, confirmed or contradicted by each
//! Gateway's [`Verdict`]. Pure.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use attache_core::status::{cut_message, Condition, CONTROLLER_NAME};
use attache_core::topology::ObjectKey;
/// The clock type of `served_cell` (the CLI reads the clock, this module does not).
pub use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

use super::{Contributions, GatewayServed, Verdict};

/// `Programmed` False while a replica serves another document.
pub const PENDING: &str = "Pending";
/// `Programmed` False when a replica refused the document.
pub const REJECTED: &str = "Rejected";

/// One Gateway's published verdict and when its document was applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confirmation {
    pub verdict: Verdict,
    pub applied_at: String,
    /// What the policies whose part did not change read instead; `None`:
    /// every policy reads `verdict`.
    pub kept: Option<Kept>,
}

/// The verdict of the policies whose part is the same in every document
/// applied since the last one every replica served
/// (`crate::served::GatewayServed::kept`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub verdict: Verdict,
    /// When the first of those documents was applied.
    pub since: String,
    /// Each policy's part in the applied document.
    pub parts: Arc<Contributions>,
    /// The policies whose part changed among those documents.
    pub touched: Arc<HashSet<u64>>,
}

impl Confirmation {
    /// What status is to say of a Gateway in `state`.
    pub fn of_state(state: &GatewayServed) -> Self {
        let (parts, touched) = state.parts();
        Confirmation {
            verdict: state.published().clone(),
            applied_at: state.applied.stamp.clone(),
            kept: Some(Kept {
                verdict: state.kept().clone(),
                since: state.kept_since().to_string(),
                parts,
                touched,
            }),
        }
    }

    /// The verdict `policy` ([`crate::served::policy_key`]) reads, and
    /// when the document it is measured against was applied.
    fn of(&self, policy: u64) -> (&Verdict, &str) {
        match &self.kept {
            Some(kept) if kept.parts.contains_key(&policy) && !kept.touched.contains(&policy) => {
                (&kept.verdict, &kept.since)
            }
            _ => (&self.verdict, &self.applied_at),
        }
    }
}

/// Per served Gateway; empty when confirmation is off
/// (`--confirm-served=false`): status is then what was applied.
pub type Served = BTreeMap<ObjectKey, Confirmation>;

/// The condition once the replicas of `gateways` are accounted for;
/// `None` while one of them was not scraped yet (status waits for it).
/// Only a condition that says the configuration is in effect (True) is
/// changed: one that is not applied yet, or overridden, says so already.
/// `policy` ([`crate::served::policy_key`]) picks, per Gateway, the
/// verdict of the applied document or the one of its unchanged part.
pub fn confirm(
    condition: Condition,
    policy: u64,
    gateways: &[&ObjectKey],
    served: &Served,
) -> Option<Condition> {
    if served.is_empty() || condition.status != "True" {
        return Some(condition);
    }
    let mine: Vec<(&ObjectKey, (&Verdict, &str))> = gateways
        .iter()
        .filter_map(|g| Some((*g, served.get(*g)?.of(policy))))
        .collect();
    if mine.iter().any(|(_, (v, _))| **v == Verdict::Unread) {
        return None;
    }
    let mut rejected = Vec::new();
    let mut pending = Vec::new();
    let mut confirmed = Vec::new();
    for (gateway, (verdict, applied_at)) in &mine {
        match verdict {
            Verdict::Served { replicas } => {
                confirmed.push(served_by(*replicas, *replicas, gateway, mine.len()));
            }
            Verdict::Rejected {
                refused,
                replicas,
                classes,
            } => rejected.push(format!(
                "refused by {refused} of {replicas} replicas of Gateway {gateway} ({}: see the proxy's log line `attache: configuration ... rejected`); they keep serving the last document they accepted",
                classes.join(", ")
            )),
            Verdict::Pending {
                serving,
                replicas,
                unknown,
                oldest,
            } => pending.push(lagging(
                (*serving, *replicas, *unknown),
                oldest.as_deref(),
                gateway,
                applied_at,
            )),
            Verdict::NoReplicas => pending.push(format!(
                "no ready proxy pod of Gateway {gateway} was found (pods labelled with its name, `--proxy-selector-label`)"
            )),
            Verdict::Unread => {}
        }
    }
    let mut condition = condition;
    if !rejected.is_empty() {
        condition.status = "False".into();
        condition.reason = REJECTED.into();
        condition.message = cut_message(rejected.join("; "));
    } else if !pending.is_empty() {
        condition.status = "False".into();
        condition.reason = PENDING.into();
        condition.message = cut_message(pending.join("; "));
    } else if !confirmed.is_empty() {
        condition.message = cut_message(format!("{}; {}", condition.message, confirmed.join(", ")));
    }
    Some(condition)
}

/// "served by 3 of 3 replicas" (naming the Gateway when there are several).
fn served_by(serving: usize, replicas: usize, gateway: &ObjectKey, gateways: usize) -> String {
    let of = if gateways > 1 {
        format!(" of Gateway {gateway}")
    } else {
        String::new()
    };
    format!("served by {serving} of {replicas} replicas{of}")
}

fn lagging(
    (serving, replicas, unknown): (usize, usize, usize),
    oldest: Option<&str>,
    gateway: &ObjectKey,
    applied_at: &str,
) -> String {
    let behind = replicas - serving - unknown;
    let mut message = format!(
        "{} of Gateway {gateway}; the document applied at {applied_at} is not served yet by {behind}",
        served_by(serving, replicas, gateway, 1)
    );
    if behind > 0 {
        message.push_str(&match oldest {
            Some(at) => format!(", the oldest still served was applied at {at}"),
            None => ", which serve an older document".to_string(),
        });
    }
    if unknown > 0 {
        message.push_str(&format!("; {unknown} could not be read"));
    }
    message
}

/// The SERVED column of `attache status` from a stored `Programmed`
/// condition: `3/3`, `2/3 since 40s`, `rejected`, `-` when the
/// controller does not confirm. `age` is how long the condition has held.
pub fn column(reason: &str, message: &str, age: Option<u64>) -> String {
    let counts = counts(message);
    match (reason, counts) {
        (REJECTED, _) => "rejected".into(),
        (PENDING, Some((serving, replicas))) => match age {
            Some(seconds) => format!("{serving}/{replicas} since {seconds}s"),
            None => format!("{serving}/{replicas}"),
        },
        (PENDING, None) => "0/0".into(),
        (_, Some((serving, replicas))) => format!("{serving}/{replicas}"),
        _ => "-".into(),
    }
}

/// The SERVED cell of a policy from its stored `status`: its ancestors of
/// this controller, the worst first (a refusal, then a lag, then what is
/// served by all, each distinct value once); `-` when none says.
pub fn served_cell(status: &Value, now: Timestamp) -> String {
    worst(programmed_of(status), now)
}

/// What the stored statuses of `policies` say of `gateway`'s replicas (its
/// conditions that name it), as [`served_cell`] says it: what live
/// `attache explain` prints of the Gateway whose values it explains.
pub fn gateway_cell<'a>(
    policies: impl IntoIterator<Item = &'a Value>,
    gateway: &ObjectKey,
    now: Timestamp,
) -> String {
    let named = format!("Gateway {gateway}");
    let conditions = policies
        .into_iter()
        .flat_map(|p| programmed_of(&p["status"]))
        .filter(|c| c["message"].as_str().is_some_and(|m| m.contains(&named)));
    worst(conditions, now)
}

/// The `Programmed` conditions of this controller's ancestors in `status`.
fn programmed_of(status: &Value) -> impl Iterator<Item = &Value> {
    status["ancestors"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| a["controllerName"] == CONTROLLER_NAME)
        .flat_map(|a| a["conditions"].as_array().into_iter().flatten())
        .filter(|c| c["type"] == "Programmed")
}

fn worst<'a>(conditions: impl Iterator<Item = &'a Value>, now: Timestamp) -> String {
    let mut cells: Vec<(u8, String)> = Vec::new();
    for c in conditions {
        let reason = c["reason"].as_str().unwrap_or_default();
        let since = c["lastTransitionTime"]
            .as_str()
            .and_then(|t| t.parse::<Timestamp>().ok())
            .map(|t| u64::try_from(now.as_second() - t.as_second()).unwrap_or(0));
        let cell = column(reason, c["message"].as_str().unwrap_or_default(), since);
        let rank = match reason {
            REJECTED => 0,
            PENDING => 1,
            _ => 2,
        };
        if cell != "-" && !cells.iter().any(|(_, c)| *c == cell) {
            cells.push((rank, cell));
        }
    }
    cells.sort_by_key(|(rank, _)| *rank);
    match cells.first() {
        None => "-".into(),
        Some((rank, cell)) if *rank < 2 => cell.clone(),
        Some(_) => cells
            .into_iter()
            .map(|(_, c)| c)
            .collect::<Vec<_>>()
            .join(","),
    }
}

/// The figures of "served by N of M replicas" in a message.
fn counts(message: &str) -> Option<(usize, usize)> {
    let rest = message.split("served by ").nth(1)?;
    let mut words = rest.split(' ');
    let serving = words.next()?.parse().ok()?;
    let replicas = match (words.next(), words.next()) {
        (Some("of"), Some(m)) => m.parse().ok()?,
        _ => return None,
    };
    Some((serving, replicas))
}

#[cfg(test)]
mod tests;
