//! `resolve`: one Gateway's schema-1 document with provenance, and
//! `explain`, which folds the same way but keeps every losing contribution.
//! The fold itself is `crate::fold`; what status counts is
//! `crate::status::counting`; turning a fold into a schema-1 entry is
//! `crate::entry`.

use std::collections::{BTreeMap, HashMap};

use crate::attach::Attachment;
use crate::contract::{Document, SCHEMA_VERSION};
use crate::diagnostic::Diagnostic;
use crate::entry::{data_plane_entry, folded_settings, route_request_changes, to_entry, Adjusted};
pub use crate::entry_memo::EntryMemo;
use crate::entry_memo::{EntryKeys, FoldedEntry, SharedSettings};
pub use crate::error::ResolveError;
use crate::explain::{explain, strategy_notes, Explanation};
use crate::fold::levels::RuleFold;
use crate::fold::shared::SharedUpper;
use crate::fold::{folds_per_rule, Folded};
pub use crate::gateway_pass::select_gateway;
use crate::gateway_pass::{clamp, clamp_warning, fold_full, grpc_timeout_note, prepare, Prepared};
use crate::model::kinds::RouteKind;
use crate::model::{Gateway, Inputs};
use crate::retries::{self, add_connection_errors};
use crate::steering::{refusal_warning, Steering};
use crate::supplier::Supplier;
use crate::topology::{GatewayResolution, ListenerInfo, ObjectKey};
use crate::who_applies::{istio_request_conflicts, DataPlane};

// Status counting lives in `status::counting`; these stay reachable here
// for the tests that compare the shared and the full fold.
#[doc(hidden)]
pub use crate::status::counting::{contributions_full, contributions_shared};
pub use crate::status::counting::{ContributionStats, StatsByTarget};

/// One Gateway, resolved.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub resolution: GatewayResolution,
    /// Attachment and fold findings (reading findings are in `Inputs`).
    pub diagnostics: Vec<Diagnostic>,
}

/// Resolves one Gateway. Entries are sorted by listener (the Gateway's own
/// by name, then each ListenerSet's in listener precedence), then route
/// creationTimestamp (absent first), then route namespace/name, then rule
/// index: the filter uses document order as the last tie-break of Gateway
/// API match precedence, which ranks older routes first.
pub fn resolve(inputs: &Inputs, gateway: &ObjectKey) -> Result<Resolved, ResolveError> {
    resolve_for(inputs, gateway, DataPlane::Envoy)
}

/// [`resolve`] for a given data plane: under Istio, header operations only
/// a rule's own filter supplies are left to istiod (crate::data_plane).
pub fn resolve_for(
    inputs: &Inputs,
    gateway: &ObjectKey,
    data_plane: DataPlane,
) -> Result<Resolved, ResolveError> {
    resolve_entries(inputs, gateway, data_plane, None)
}

/// [`resolve_for`] for a caller that only encodes the document for the
/// data plane (the controller): each entry carries only what the
/// data-plane encodings keep (`attache_render::plugin_config`): its name,
/// hostnames, matches and settings, not its `sources` nor the parts of its
/// name, and the resolution has no `backends`. Only the entries whose
/// inputs changed since `memo` saw this Gateway are folded again
/// (crate::entry_memo); the others are taken from it. Otherwise the result
/// is the one [`resolve_for`] gives. Keep one memo per Gateway.
pub fn resolve_for_data_plane(
    inputs: &Inputs,
    gateway: &ObjectKey,
    data_plane: DataPlane,
    memo: &mut EntryMemo,
) -> Result<Resolved, ResolveError> {
    resolve_entries(inputs, gateway, data_plane, Some(memo))
}

/// Without a memo, whole entries; with one, what the data plane reads.
fn resolve_entries(
    inputs: &Inputs,
    gateway: &ObjectKey,
    data_plane: DataPlane,
    mut memo: Option<&mut EntryMemo>,
) -> Result<Resolved, ResolveError> {
    let Prepared {
        gateway: gw,
        attachments,
        mut diagnostics,
    } = prepare(inputs, gateway)?;
    let mut shared = SharedUpper::new(inputs, gw);
    let steering = Steering::new(&attachments);
    let per_rule = folds_per_rule(inputs);
    // With a policy that folds per rule (`folds_per_rule`) every entry is
    // folded afresh; the memo is for the usual case.
    let mut keys = memo
        .as_ref()
        .filter(|_| !per_rule)
        .map(|_| EntryKeys::new(inputs, gw, data_plane, steering.fingerprint()));
    let mut kept = HashMap::with_capacity(if memo.is_some() { attachments.len() } else { 0 });
    let mut shared_settings = SharedSettings::default();
    if let Some(memo) = memo.as_deref_mut() {
        memo.start();
    }
    let mut routes = Vec::with_capacity(attachments.len());
    let mut backends = BTreeMap::new();
    let mut route_request_headers = BTreeMap::new();
    for att in attachments {
        let Some((_, leaf_rule)) = att.leaf() else {
            continue;
        };
        let name = att.entry_name();
        let mut fold = || {
            let pass = RulePass {
                per_rule,
                data_plane,
                steering: &steering,
            };
            fold_rule(inputs, gw, &att, &mut shared, pass, &name)
        };
        let entry = match memo.as_deref_mut() {
            None => {
                let rule = fold();
                diagnostics.extend(rule.diagnostics);
                if let Some(own) = route_request_changes(&rule.folded, &rule.suppliers, data_plane)
                {
                    route_request_headers.insert(name.clone(), own);
                }
                to_entry(
                    &att,
                    &name,
                    &rule.folded,
                    &rule.suppliers,
                    rule.adjusted,
                    data_plane,
                )
            }
            Some(memo) => {
                let key = keys.as_mut().map(|k| k.of(&att));
                let folded = match key.and_then(|k| memo.take(k)) {
                    Some(folded) => folded,
                    None => {
                        let rule = fold();
                        FoldedEntry {
                            settings: shared_settings.share(folded_settings(
                                &rule.folded,
                                &rule.suppliers,
                                data_plane,
                            )),
                            diagnostics: rule.diagnostics,
                        }
                    }
                };
                diagnostics.extend(folded.diagnostics.iter().cloned());
                let entry = data_plane_entry(name, att.hostnames, att.matches, &folded.settings);
                if let Some(key) = key {
                    kept.insert(key, folded);
                }
                routes.push(entry);
                continue;
            }
        };
        backends.insert(name, leaf_rule.backends.clone());
        routes.push(entry);
    }
    if let Some(memo) = memo {
        memo.replace(kept);
    }
    let mut document = Document {
        schema_version: SCHEMA_VERSION,
        gateway: gw.key.to_string(),
        options: Default::default(),
        routes,
    };
    // Under Istio the filter sees istiod's route names (docs/contract.md).
    if data_plane == DataPlane::Istio {
        document.options.istio_route_names = true;
        document.options.listener_ports = gw.listeners.iter().map(|l| (l.key(), l.port)).collect();
    }
    let listeners = gw
        .listeners
        .iter()
        .map(|l| ListenerInfo {
            name: l.key(),
            port: l.port,
            protocol: l.protocol.clone(),
            hostname: l.hostname.clone(),
            tls: l.tls.clone(),
        })
        .collect();
    diagnostics.sort();
    diagnostics.dedup();
    Ok(Resolved {
        resolution: GatewayResolution {
            gateway: gw.key.clone(),
            gateway_class: gw.class.clone(),
            listeners,
            document,
            backends,
            route_request_headers,
        },
        diagnostics,
    })
}

/// One rule folded at every level, clamped and adjusted, and the notes
/// that gave (a clamp, an Istio header clash).
struct FoldedRule {
    folded: Folded,
    suppliers: Vec<Supplier>,
    adjusted: Adjusted,
    diagnostics: Vec<Diagnostic>,
}

/// How every rule of one resolution is folded.
#[derive(Clone, Copy)]
struct RulePass<'s> {
    per_rule: bool,
    data_plane: DataPlane,
    steering: &'s Steering,
}

fn fold_rule<'a>(
    inputs: &'a Inputs,
    gw: &'a Gateway,
    att: &Attachment<'a>,
    shared: &mut SharedUpper<'a>,
    pass: RulePass<'_>,
    name: &str,
) -> FoldedRule {
    let RulePass {
        per_rule,
        data_plane,
        steering,
    } = pass;
    let mut diagnostics = Vec::new();
    let (mut folded, suppliers) = if per_rule {
        let full = fold_full(inputs, gw, att);
        (full.folded, full.suppliers)
    } else {
        let mut lower = RuleFold::new(inputs);
        lower.lower(att);
        shared.complete(att.listener, &lower.folded, &lower.gate, lower.suppliers)
    };
    let clamped = clamp(&mut folded);
    if let Some(note) = &clamped {
        diagnostics.push(clamp_warning(note, att, name));
    }
    for refusal in steering.refuse(att, &mut folded, &suppliers) {
        diagnostics.extend(refusal_warning(inputs, &refusal, &suppliers, name));
    }
    if data_plane == DataPlane::Istio {
        let carried = data_plane.carried(&folded, &suppliers);
        diagnostics.extend(istio_request_conflicts(att, &carried, name));
    }
    let adjusted = Adjusted {
        clamped: clamped.is_some(),
        connection_errors: add_connection_errors(&mut folded),
    };
    FoldedRule {
        folded,
        suppliers,
        adjusted,
        diagnostics,
    }
}

/// The explanation of every rule of `route` (leaf route of the entry) that
/// the Gateway serves, in document order.
pub fn explain_route(
    inputs: &Inputs,
    gateway: &ObjectKey,
    route: &ObjectKey,
) -> Result<Vec<Explanation>, ResolveError> {
    let prepared = prepare(inputs, gateway)?;
    let steering = Steering::new(&prepared.attachments);
    let mut out = Vec::new();
    for att in &prepared.attachments {
        let Some((leaf_route, leaf_rule)) = att.leaf() else {
            continue;
        };
        if leaf_route.key != *route {
            continue;
        }
        let mut fold = fold_full(inputs, prepared.gateway, att);
        let name = att.entry_name();
        let mut notes: Vec<String> = clamp(&mut fold.folded).into_iter().collect();
        for refusal in steering.refuse(att, &mut fold.folded, &fold.suppliers) {
            let who: Vec<String> = refusal
                .policies
                .iter()
                .filter_map(|&i| fold.suppliers.get(i).map(ToString::to_string))
                .collect();
            notes.push(format!("{}: {}", who.join(" + "), refusal.describe()));
        }
        notes.extend(grpc_timeout_note(leaf_route.kind, &fold.folded));
        if add_connection_errors(&mut fold.folded) {
            notes.push(retries::NOTE.to_string());
        }
        notes.extend(leaf_rule.backends.iter().filter_map(backend_filters_note));
        notes.extend(fold.replaced.iter().filter_map(|r| {
            let p = inputs.policies.get(r.index)?;
            Some(format!(
                "{} @ {} does not apply: {} replaces it whole (Envoy Gateway applies the most \
                 specific BackendTrafficPolicy, one per target; mergeType on that one would merge them)",
                p.display_name(),
                r.target,
                r.by
            ))
        }));
        notes.extend(strategy_notes(&fold.folded, &fold.suppliers, |i| {
            inputs.policy(i)
        }));
        let head = Explanation {
            entry: name,
            listener: att.listener.name.clone(),
            listener_set: att.listener.set.as_ref().map(ToString::to_string),
            route: leaf_route.key.to_string(),
            route_kind: (leaf_route.kind != RouteKind::Http)
                .then(|| leaf_route.kind.name().to_string()),
            rule: leaf_rule.label(),
            via: att.chain[..att.chain.len() - 1]
                .iter()
                .map(|(r, rule)| format!("{} rule {}", r.object(), rule.label()))
                .collect(),
            fields: Vec::new(),
            lost: Vec::new(),
            notes,
        };
        out.push(explain(&fold.folded, &fold.suppliers, head, |i| {
            inputs.policies.get(i).map(|p| p.kind)
        }));
    }
    Ok(out)
}

/// The entry names the Gateway serves (for messages).
pub fn entry_names(inputs: &Inputs, gateway: &ObjectKey) -> Result<Vec<String>, ResolveError> {
    Ok(prepare(inputs, gateway)?
        .attachments
        .iter()
        .map(Attachment::entry_name)
        .collect())
}

/// `explain`'s line for a backendRef with filters of its own: what they do
/// and that they apply to that backend's requests only.
fn backend_filters_note(target: &crate::topology::BackendTarget) -> Option<String> {
    let describe = |what: &str, c: &Option<crate::contract::HeaderChanges>| {
        let c = c.as_ref()?;
        let mut parts: Vec<String> = Vec::new();
        parts.extend(
            c.set
                .iter()
                .map(|h| format!("set {}: {:?}", h.name, h.value)),
        );
        parts.extend(
            c.add
                .iter()
                .map(|h| format!("add {}: {:?}", h.name, h.value)),
        );
        parts.extend(c.remove.iter().map(|n| format!("remove {n}")));
        Some(format!("{what} {}", parts.join(", ")))
    };
    let changes: Vec<String> = [
        describe("request headers", &target.request_headers),
        describe("response headers", &target.response_headers),
    ]
    .into_iter()
    .flatten()
    .collect();
    if changes.is_empty() {
        return None;
    }
    let port = target.port.map(|p| format!(":{p}")).unwrap_or_default();
    Some(format!(
        "backendRef {}/{}{port} (its own filters, for its requests only; on its weighted cluster in plain Envoy, applied by istiod under Istio): {}",
        target.namespace,
        target.name,
        changes.join("; ")
    ))
}

/// Folds every level per rule without sharing the upper levels: the
/// reference `resolve`'s shared fold must agree with (tests only).
#[doc(hidden)]
pub fn resolve_unshared(inputs: &Inputs, gateway: &ObjectKey) -> Result<Document, ResolveError> {
    let prepared = prepare(inputs, gateway)?;
    let steering = Steering::new(&prepared.attachments);
    let mut routes = Vec::new();
    for att in &prepared.attachments {
        let mut fold = fold_full(inputs, prepared.gateway, att);
        let clamped = clamp(&mut fold.folded).is_some();
        steering.refuse(att, &mut fold.folded, &fold.suppliers);
        let adjusted = Adjusted {
            clamped,
            connection_errors: add_connection_errors(&mut fold.folded),
        };
        let entry = to_entry(
            att,
            &att.entry_name(),
            &fold.folded,
            &fold.suppliers,
            adjusted,
            DataPlane::Envoy,
        );
        routes.push(entry);
    }
    Ok(Document {
        schema_version: SCHEMA_VERSION,
        gateway: prepared.gateway.key.to_string(),
        options: Default::default(),
        routes,
    })
}
