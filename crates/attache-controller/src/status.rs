//! The status the controller writes to RoutePolicy and ClusterRoutePolicy
//! (docs/semantics.md section 11): `attache status`'s content (the same
//! function computes it), plus `Programmed` per ancestor once the
//! configuration carrying the policy is applied (per ancestor: from the
//! Gateways that ancestor's targetRef reaches), at most 16 ancestors,
//! `lastTransitionTime` kept while a condition's status holds, and other
//! controllers' ancestors left as they are. Pure: the clock comes in as
//! `now`, the live status with the snapshot.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use attache_core::status::{
    programmed, Condition, GatewayShare, Reaching, StatusReport, CONTROLLER_NAME,
};
use attache_core::topology::ObjectKey;
use attache_core::Inputs;
use serde_json::{json, Value};

use crate::kinds::{named, Role, WatchedKind};
use crate::prune;
use crate::reconcile::Plan;
use crate::scope::Fingerprint;
use crate::served::condition::{confirm, Served};
use crate::served::{policy_key, policy_key_of, Contributions};
use crate::snapshot::Snapshot;

/// GEP-713 bounds `status.ancestors` to 16 entries (PolicyStatus,
/// `+kubebuilder:validation:MaxItems=16`).
pub const MAX_ANCESTORS: usize = 16;

/// One status subresource write.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusPatch {
    pub kind: &'static WatchedKind,
    pub key: ObjectKey,
    /// The version the status was computed from: the write carries it, so
    /// the API server refuses it (409) if the object changed since.
    pub resource_version: String,
    /// The whole new `status`.
    pub status: Value,
}

/// Why a Gateway's configuration is not applied: the reconcile's reason
/// to keep the last one, or the write that failed (its chain of sources
/// kept for the log).
pub type NotApplied = Arc<dyn std::error::Error + Send + Sync>;

/// How each Gateway we serve ended this round: applied (or already live),
/// or the error that kept its last configuration.
pub type Applied = BTreeMap<ObjectKey, Result<(), NotApplied>>;

/// What each served Gateway carries: (index into `inputs.policies`, index
/// of the targetRef) pairs, one per ancestor of the policy's status
/// (attache status writes one ancestor per targetRef, in order).
pub type Reach = BTreeMap<ObjectKey, BTreeSet<(usize, usize)>>;

/// Which targetRefs reach each Gateway: those whose target is one the
/// core says reaches it (`attache_core::reach::targets_reaching`: a route
/// or rule folded into it, delegated children included, or one of its
/// levels). A Gateway that cannot be resolved reaches none that can be
/// listed; its failure is in `applied`.
pub fn reach(inputs: &Inputs, gateways: impl IntoIterator<Item = ObjectKey>) -> Reach {
    gateways
        .into_iter()
        .map(|key| {
            let targets = attache_core::reach::targets_reaching(inputs, &key).unwrap_or_default();
            let found = ancestors_of(inputs, &targets);
            (key, found)
        })
        .collect()
}

/// The (policy, targetRef index) pairs of the (policy, target) pairs.
fn ancestors_of(inputs: &Inputs, targets: &Reaching) -> BTreeSet<(usize, usize)> {
    targets
        .iter()
        .filter_map(|(index, target)| {
            let policy = inputs.policies.get(*index)?;
            Some(
                policy
                    .targets
                    .iter()
                    .enumerate()
                    .filter(|(_, t)| t.resolved.as_ref() == Some(target))
                    .map(|(i, _)| (*index, i))
                    .collect::<Vec<_>>(),
            )
        })
        .flatten()
        .collect()
}

/// [`reach`] and [`patches`] from one fold of each Gateway
/// (`attache_core::status::policy_status_reaching`), as a round from
/// scratch needs them: the same writes, each Gateway resolved for status
/// once instead of twice.
pub fn round_patches(
    inputs: &Inputs,
    snapshot: &Snapshot,
    applied: &Applied,
    now: &str,
) -> Vec<StatusPatch> {
    let (report, reaching) = attache_core::status::policy_status_reaching(inputs);
    let outcomes = (applied, &Served::new());
    patches_reaching(&report, &reaching, inputs, snapshot, outcomes, now, None)
}

/// Each Gateway's share of the status fold, kept while the fingerprint of
/// its scope is the same (`crate::scope`): a round folds for status only
/// the Gateways whose scope changed.
#[derive(Debug, Default)]
pub struct StatusMemo {
    shares: HashMap<ObjectKey, (Fingerprint, GatewayShare, Option<Arc<Contributions>>)>,
    settled: Settled,
}

impl StatusMemo {
    /// Folds again the shares of the Gateways whose fingerprint changed
    /// since the last call, and forgets those gone.
    pub fn refresh(&mut self, plan: &Plan) {
        let inputs = &plan.inputs;
        self.shares
            .retain(|key, _| plan.fingerprints.contains_key(key));
        for (key, fingerprint) in &plan.fingerprints {
            let current = self
                .shares
                .get(key)
                .is_some_and(|(f, _, _)| f == fingerprint);
            if !current {
                let share = tracing::info_span!("share", gateway = %key)
                    .in_scope(|| attache_core::status::gateway_share(inputs, key));
                self.shares.insert(key.clone(), (*fingerprint, share, None));
            }
        }
    }

    /// Each policy's part in `key`'s configuration as [`StatusMemo::refresh`]
    /// last folded it (`crate::served`'s per-policy verdicts), computed
    /// once per share; `None` for a Gateway not folded.
    pub fn contributions(&mut self, key: &ObjectKey, plan: &Plan) -> Option<Arc<Contributions>> {
        let (_, share, parts) = self.shares.get_mut(key)?;
        let parts = parts.get_or_insert_with(|| {
            let by_id = share.contributions(&plan.inputs);
            Arc::new(by_id.iter().map(|(id, h)| (policy_key(id), *h)).collect())
        });
        Some(parts.clone())
    }
}

/// The policies whose computed status needed no write last round, by kind
/// and key, with a digest of what that was decided from: the computed
/// status, its `Programmed` conditions and the stored object's
/// resourceVersion. The same digest decides the same (the merge keeps the
/// stored times while each condition holds), so the merge with the stored
/// status, the pruning and the comparison are skipped for it.
type Settled = HashMap<(&'static str, ObjectKey), u64>;

/// [`round_patches`] for a round's plan, folding again only the Gateways
/// whose fingerprint changed since `memo` saw them; the writes are the
/// ones [`round_patches`] gives.
pub fn round_patches_with(
    plan: &Plan,
    snapshot: &Snapshot,
    applied: &Applied,
    now: &str,
    memo: &mut StatusMemo,
) -> Vec<StatusPatch> {
    round_patches_served(plan, snapshot, (applied, &Served::new()), now, memo)
}

/// [`round_patches_with`] with what each Gateway's replicas serve
/// (`crate::served`): `Programmed` is True only where they serve the
/// applied document.
pub fn round_patches_served(
    plan: &Plan,
    snapshot: &Snapshot,
    (applied, served): (&Applied, &Served),
    now: &str,
    memo: &mut StatusMemo,
) -> Vec<StatusPatch> {
    let inputs = &plan.inputs;
    memo.refresh(plan);
    let shares = plan
        .fingerprints
        .keys()
        .filter_map(|key| Some((key, &memo.shares.get(key)?.1)));
    let (report, reaching) = tracing::info_span!("fold")
        .in_scope(|| attache_core::status::policy_status_of_shares(inputs, shares));
    let settled = Some(&mut memo.settled);
    tracing::info_span!("patches").in_scope(|| {
        let outcomes = (applied, served);
        patches_reaching(&report, &reaching, inputs, snapshot, outcomes, now, settled)
    })
}

fn patches_reaching(
    report: &StatusReport,
    reaching: &BTreeMap<ObjectKey, Reaching>,
    inputs: &Inputs,
    snapshot: &Snapshot,
    (applied, served): (&Applied, &Served),
    now: &str,
    settled: Option<&mut Settled>,
) -> Vec<StatusPatch> {
    let reach: Reach = applied
        .keys()
        .map(|key| {
            let found = reaching
                .get(key)
                .map(|targets| ancestors_of(inputs, targets))
                .unwrap_or_default();
            (key.clone(), found)
        })
        .collect();
    let outcomes = (applied, served);
    patches_for(report, inputs, snapshot, &reach, outcomes, now, settled)
}

/// The status writes this round needs: only policies of our own kinds, and
/// only those whose status differs from the live one.
pub fn patches(
    inputs: &Inputs,
    snapshot: &Snapshot,
    reach: &Reach,
    applied: &Applied,
    now: &str,
) -> Vec<StatusPatch> {
    let report = attache_core::policy_status(inputs);
    let served = &Served::new();
    patches_for(
        &report,
        inputs,
        snapshot,
        reach,
        (applied, served),
        now,
        None,
    )
}

fn patches_for(
    report: &StatusReport,
    inputs: &Inputs,
    snapshot: &Snapshot,
    reach: &Reach,
    (applied, served): (&Applied, &Served),
    now: &str,
    settled: Option<&mut Settled>,
) -> Vec<StatusPatch> {
    let mut still_settled = Settled::new();
    let live: BTreeMap<(String, ObjectKey), &Value> = snapshot
        .docs
        .iter()
        .filter_map(|d| {
            let kind = d.doc.value["kind"].as_str()?.to_string();
            Some(((kind, crate::snapshot::key_of(&d.doc.value)), &d.doc.value))
        })
        .collect();
    let mut out = Vec::new();
    for (index, policy) in report.policies.iter().enumerate() {
        let Some(kind) = named(&policy.kind).filter(|k| k.role == Role::InputWithStatus) else {
            continue;
        };
        let key = ObjectKey {
            namespace: policy.metadata.namespace.clone().unwrap_or_default(),
            name: policy.metadata.name.clone(),
        };
        let Some(object) = live.get(&(policy.kind.clone(), key.clone())) else {
            continue;
        };
        // Programmed per ancestor (GEP-713, 2025: the core's words), from
        // the Gateways that ancestor's targetRef reaches, each with its own
        // outcome.
        let source = &inputs.policies[index];
        let part = policy_key_of(&source.kind, &source.meta.namespace, &source.meta.name);
        let mut programmed: Vec<Option<Value>> = Vec::new();
        // A Gateway whose replicas were not read yet: no write this round
        // (crate::served::condition::confirm).
        let mut undecided = false;
        for (ancestor, status) in policy.status.ancestors.iter().enumerate() {
            let gateways: Vec<&ObjectKey> = reach
                .iter()
                .filter(|(_, found)| found.contains(&(index, ancestor)))
                .map(|(k, _)| k)
                .collect();
            let condition = programmed::programmed(
                status,
                &programmed::strategies(inputs, source, ancestor),
                &self::applied(&gateways, applied),
                source.meta.generation,
            )
            .map(|c| confirm(with_gateways(c, &gateways), part, &gateways, served));
            undecided |= matches!(condition, Some(None));
            programmed.push(
                condition
                    .flatten()
                    .and_then(|c| serde_json::to_value(c).ok()),
            );
        }
        if undecided {
            continue;
        }
        let computed = serde_json::to_value(&policy.status).unwrap_or(Value::Null);
        let resource_version = object["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default();
        let id = (kind.kind, key.clone());
        let digest = settled
            .is_some()
            .then(|| digest(&computed, &programmed, resource_version));
        let before = settled.as_deref().and_then(|s| s.get(&id));
        if let (Some(before), Some(digest)) = (before, digest) {
            if *before == digest {
                still_settled.insert(id, digest);
                continue;
            }
        }
        let mut status = merge(&computed, &object["status"], &programmed, now);
        // Compared as the API server would store it: a field its schema
        // lacks would otherwise differ on every round (docs/controller.md,
        // "Writes only on change").
        if let Some(schema) = prune::status_schema(kind.kind) {
            prune::prune(&mut status, schema);
        }
        if status != object["status"] {
            out.push(StatusPatch {
                kind,
                key,
                resource_version: resource_version.to_string(),
                status,
            });
        } else if let Some(digest) = digest {
            still_settled.insert(id, digest);
        }
    }
    if let Some(settled) = settled {
        *settled = still_settled;
    }
    out
}

/// A hash of what a policy's status write is decided from (see
/// [`Settled`]).
fn digest(computed: &Value, programmed: &[Option<Value>], resource_version: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    crate::content_hash::hash_value(computed, &mut hasher);
    for condition in programmed {
        match condition {
            Some(condition) => crate::content_hash::hash_value(condition, &mut hasher),
            None => 6u8.hash(&mut hasher),
        }
    }
    resource_version.hash(&mut hasher);
    hasher.finish()
}

/// Whether the configuration of every Gateway an ancestor's targetRef
/// reaches is applied: pending when no Gateway we serve carries it (or one
/// was not reconciled), failed with each Gateway's error.
fn applied(gateways: &[&ObjectKey], applied: &Applied) -> programmed::Applied {
    if gateways.is_empty() {
        return programmed::Applied::Pending;
    }
    let mut failed = Vec::new();
    let mut pending = false;
    for gateway in gateways {
        match applied.get(*gateway) {
            Some(Ok(())) => {}
            Some(Err(why)) => failed.push(why.to_string()),
            None => pending = true,
        }
    }
    if !failed.is_empty() {
        programmed::Applied::Failed(failed.join("; "))
    } else if pending {
        programmed::Applied::Pending
    } else {
        programmed::Applied::Yes
    }
}

/// The controller's part of the message: which Gateways carry it, or that
/// none it serves does.
fn with_gateways(mut condition: Condition, gateways: &[&ObjectKey]) -> Condition {
    let names: Vec<String> = gateways.iter().map(ToString::to_string).collect();
    condition.message = attache_core::status::cut_message(if names.is_empty() {
        "no Gateway served by this controller carries it".to_string()
    } else if condition.status == "True" {
        format!(
            "{} (applied to Gateway {})",
            condition.message,
            names.join(", ")
        )
    } else {
        condition.message
    });
    condition
}

/// The new status from the computed one and the live one.
fn merge(computed: &Value, live: &Value, programmed: &[Option<Value>], now: &str) -> Value {
    let conditions = stamp(&computed["conditions"], &live["conditions"], now);
    let live_ancestors = live["ancestors"].as_array().cloned().unwrap_or_default();
    // Other controllers' entries are theirs (GEP-713): kept, first.
    let mut ancestors: Vec<Value> = live_ancestors
        .iter()
        .filter(|a| a["controllerName"] != CONTROLLER_NAME)
        .cloned()
        .collect();
    let ours = computed["ancestors"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for (mut ancestor, programmed) in ours.into_iter().zip(programmed) {
        if ancestors.len() == MAX_ANCESTORS {
            break;
        }
        if let (Some(condition), Some(list)) = (programmed, ancestor["conditions"].as_array_mut()) {
            list.push(condition.clone());
        }
        let before = live_ancestors
            .iter()
            .find(|a| {
                a["ancestorRef"] == ancestor["ancestorRef"]
                    && a["controllerName"] == CONTROLLER_NAME
            })
            .map(|a| a["conditions"].clone())
            .unwrap_or(Value::Null);
        ancestor["conditions"] = stamp(&ancestor["conditions"], &before, now);
        ancestors.push(ancestor);
    }
    json!({"conditions": conditions, "ancestors": ancestors})
}

/// Each condition gets `lastTransitionTime`: the live one's when a
/// condition of the same type had the same status, else `now` (Kubernetes
/// API conventions, "Typical status properties").
fn stamp(conditions: &Value, live: &Value, now: &str) -> Value {
    let live = live.as_array().cloned().unwrap_or_default();
    let stamped: Vec<Value> = conditions
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut c| {
            let kept = live
                .iter()
                .find(|l| l["type"] == c["type"] && l["status"] == c["status"])
                .and_then(|l| l.get("lastTransitionTime").cloned());
            c["lastTransitionTime"] = kept.unwrap_or_else(|| json!(now));
            c
        })
        .collect();
    Value::Array(stamped)
}

/// Our status laid over a fresher live one (after a 409): the policy-level
/// conditions and our ancestors from `ours`, other controllers' ancestors
/// from `fresh`, at most 16 in all.
pub fn rebase(ours: &Value, fresh: &Value) -> Value {
    let mine = |a: &&Value| a["controllerName"] == CONTROLLER_NAME;
    let theirs = fresh["ancestors"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| !mine(a));
    let ours_list = ours["ancestors"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(mine);
    let ancestors: Vec<Value> = theirs
        .chain(ours_list)
        .take(MAX_ANCESTORS)
        .cloned()
        .collect();
    json!({"conditions": ours["conditions"], "ancestors": ancestors})
}
