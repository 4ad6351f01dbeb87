//! `resolve`: one Gateway's schema-1 document with provenance; `explain`
//! and the per-policy results behind status fold the same way but keep
//! every losing contribution.

use std::collections::{BTreeMap, BTreeSet};

use crate::attach::{attach, Attachment};
use crate::contract::{
    Document, Header, HeaderChanges, Retry, RouteEntry, Timeouts, SCHEMA_VERSION,
};
use crate::diagnostic::Diagnostic;
use crate::explain::{explain, Explanation};
use crate::field::{Direction, FieldKey, FieldMap, FieldValue};
use crate::fold::Folded;
use crate::fold::levels::RuleFold;
use crate::model::{Gateway, Target};
use crate::parse::Inputs;
use crate::fold::shared::SharedUpper;
use crate::supplier::{Source, Supplier};
use crate::topology::{GatewayResolution, ListenerInfo, ObjectKey};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("the input has no Gateway")]
    NoGateway,
    #[error("Gateway {wanted} is not in the input; Gateways found: {available}")]
    GatewayNotFound {
        wanted: ObjectKey,
        available: String,
    },
    #[error("the input has {count} Gateways, so one must be chosen: {available}")]
    GatewayRequired { count: usize, available: String },
    #[error("Gateway {gateway} would have more than {limit} entries (stopped while expanding {chain}); nothing is written for it\n  hint: look for routes that delegate to the same child from many rules, or raise --max-entries")]
    TooManyEntries {
        gateway: ObjectKey,
        limit: usize,
        chain: String,
    },
}

/// Picks the Gateway to resolve: the one asked for, or the only one.
pub fn select_gateway(
    inputs: &Inputs,
    wanted: Option<&ObjectKey>,
) -> Result<ObjectKey, ResolveError> {
    let available = || {
        inputs
            .gateways
            .keys()
            .map(ObjectKey::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    match wanted {
        Some(key) if inputs.gateways.contains_key(key) => Ok(key.clone()),
        Some(_) if inputs.gateways.is_empty() => Err(ResolveError::NoGateway),
        Some(key) => Err(ResolveError::GatewayNotFound {
            wanted: key.clone(),
            available: available(),
        }),
        None => {
            let mut keys = inputs.gateways.keys();
            match (keys.next(), keys.next()) {
                (None, _) => Err(ResolveError::NoGateway),
                (Some(only), None) => Ok(only.clone()),
                _ => Err(ResolveError::GatewayRequired {
                    count: inputs.gateways.len(),
                    available: available(),
                }),
            }
        }
    }
}

/// What one policy, through one target, did across the entries it reached.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContributionStats {
    /// Route entries the policy reached through this target.
    pub entries: usize,
    /// Fields it set, summed over entries.
    pub fields_set: usize,
    /// Fields that did not end up in the result, summed over entries.
    pub fields_lost: usize,
    /// Who holds the fields it lost.
    pub winners: BTreeSet<String>,
    /// Policies at the same level and with the same operation that beat it
    /// on precedence with a different value.
    pub conflicts_with: BTreeSet<String>,
}

/// Per (index into `Inputs::policies`, target).
pub type StatsByTarget = BTreeMap<(usize, Target), ContributionStats>;

/// One Gateway, resolved.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub resolution: GatewayResolution,
    /// Attachment and fold findings (reading findings are in `Inputs`).
    pub diagnostics: Vec<Diagnostic>,
}

/// The Gateway's attachments in document order, and what attaching found.
struct Prepared<'a> {
    gateway: &'a Gateway,
    attachments: Vec<Attachment<'a>>,
    diagnostics: Vec<Diagnostic>,
}

fn prepare<'a>(inputs: &'a Inputs, gateway: &ObjectKey) -> Result<Prepared<'a>, ResolveError> {
    let Some(gw) = inputs.gateways.get(gateway) else {
        return Err(select_gateway(inputs, Some(gateway))
            .err()
            .unwrap_or(ResolveError::NoGateway));
    };
    let mut diagnostics = Vec::new();
    if !inputs.classes.contains_key(&gw.class) {
        diagnostics.push(
            Diagnostic::note(format!(
                "GatewayClass {} is not in the input; no GatewayClass-level policy applies",
                gw.class
            ))
            .at(&gw.meta.origin)
            .on(format!("Gateway {}", gw.key))
            .field("spec.gatewayClassName"),
        );
    }
    let mut attachments = attach(inputs, gw, &mut diagnostics)?;
    // Document order (see `resolve`).
    attachments.sort_by_cached_key(|a| {
        let (route, rule) = a.leaf().map(|(r, rule)| (r, rule.index)).unzip();
        (
            a.listener.name.clone(),
            route.and_then(|r| r.meta.created.clone()),
            route.map(|r| r.key.clone()),
            rule,
        )
    });
    Ok(Prepared {
        gateway: gw,
        attachments,
        diagnostics,
    })
}

/// Resolves one Gateway. Entries are sorted by listener name, then route
/// creationTimestamp (absent first), then route namespace/name, then rule
/// index: the filter uses document order as the last tie-break of Gateway
/// API match precedence, which ranks older routes first.
pub fn resolve(inputs: &Inputs, gateway: &ObjectKey) -> Result<Resolved, ResolveError> {
    let Prepared {
        gateway: gw,
        attachments,
        mut diagnostics,
    } = prepare(inputs, gateway)?;
    let mut shared = SharedUpper::new(inputs, gw);
    let mut routes = Vec::with_capacity(attachments.len());
    let mut backends = BTreeMap::new();
    for att in &attachments {
        let Some((_, leaf_rule)) = att.leaf() else {
            continue;
        };
        let mut lower = RuleFold::new(inputs);
        lower.lower(att);
        let (mut folded, suppliers) = shared.complete(att.listener, &lower.folded, lower.suppliers);
        let name = att.entry_name();
        let clamped = clamp(&mut folded);
        if let Some(note) = &clamped {
            diagnostics.push(clamp_warning(note, att, &name));
        }
        let mut entry = to_entry(att, &name, &folded, &suppliers);
        if clamped.is_some() {
            if let Some(source) = entry
                .sources
                .get_mut(&FieldKey::BackendRequestTimeout.to_string())
            {
                source.push_str(", clamped to timeouts.requestMs");
            }
        }
        backends.insert(name, leaf_rule.backends.clone());
        routes.push(entry);
    }
    let document = Document {
        schema_version: SCHEMA_VERSION,
        gateway: gw.key.to_string(),
        options: Default::default(),
        routes,
    };
    let listeners = gw
        .listeners
        .iter()
        .map(|l| ListenerInfo {
            name: l.name.clone(),
            port: l.port,
            protocol: l.protocol.clone(),
            hostname: l.hostname.clone(),
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
        },
        diagnostics,
    })
}

/// Every level folded for one attachment, keeping all losses.
fn fold_full<'a>(inputs: &'a Inputs, gw: &Gateway, att: &Attachment<'a>) -> RuleFold<'a> {
    let mut fold = RuleFold::new(inputs);
    fold.lower(att);
    fold.upper(gw, att.listener);
    fold
}

/// The explanation of every rule of `route` (leaf route of the entry) that
/// the Gateway serves, in document order.
pub fn explain_route(
    inputs: &Inputs,
    gateway: &ObjectKey,
    route: &ObjectKey,
) -> Result<Vec<Explanation>, ResolveError> {
    let prepared = prepare(inputs, gateway)?;
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
        let notes: Vec<String> = clamp(&mut fold.folded).into_iter().collect();
        let head = Explanation {
            entry: name,
            listener: att.listener.name.clone(),
            route: leaf_route.key.to_string(),
            rule: leaf_rule.label(),
            via: att.chain[..att.chain.len() - 1]
                .iter()
                .map(|(r, rule)| format!("HTTPRoute {} rule {}", r.key, rule.label()))
                .collect(),
            fields: Vec::new(),
            lost: Vec::new(),
            notes,
        };
        out.push(explain(&fold.folded, &fold.suppliers, head));
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

/// Per (policy index, target): what it did on this Gateway; plus the
/// Gateway's diagnostics. Like `resolve`, the listener-and-up levels are
/// folded once per shape (`shared`), so status stays linear too; the
/// lower levels are counted per rule.
pub(crate) fn contributions(
    inputs: &Inputs,
    gateway: &ObjectKey,
) -> Result<(StatsByTarget, Vec<Diagnostic>), ResolveError> {
    let mut prepared = prepare(inputs, gateway)?;
    let gw = prepared.gateway;
    let mut stats = StatsByTarget::new();
    let mut shared = SharedUpper::new(inputs, gw).counting();
    let mut rules_on: BTreeMap<&str, usize> = BTreeMap::new();
    for att in &prepared.attachments {
        *rules_on.entry(att.listener.name.as_str()).or_default() += 1;
        let mut lower = RuleFold::new(inputs);
        lower.lower(att);
        let (mut merged, suppliers) =
            shared.complete(att.listener, &lower.folded, lower.suppliers.clone());
        if let Some(note) = clamp(&mut merged) {
            prepared
                .diagnostics
                .push(clamp_warning(&note, att, &att.entry_name()));
        }
        record_lower_stats(
            &lower,
            &merged,
            &suppliers,
            |field| shared.removed_by(att.listener, &lower.folded, field),
            &mut stats,
        );
    }
    // Every rule on a listener reaches every policy of its upper levels.
    for listener in &gw.listeners {
        let rules = rules_on.get(listener.name.as_str()).copied().unwrap_or(0);
        if rules == 0 {
            continue;
        }
        for target in [
            Target::Gateway(gw.key.clone(), Some(listener.name.clone())),
            Target::Gateway(gw.key.clone(), None),
            Target::Namespace(gw.key.namespace.clone()),
            Target::GatewayClass(gw.class.clone()),
        ] {
            for &index in inputs
                .by_target
                .get(&target)
                .map(Vec::as_slice)
                .unwrap_or_default()
            {
                let Some(p) = inputs.policies.get(index) else {
                    continue;
                };
                let set: usize = [&p.defaults, &p.overrides, &p.plain]
                    .iter()
                    .filter_map(|m| m.as_ref())
                    .map(|m| m.len())
                    .sum();
                if set == 0 {
                    continue;
                }
                let s = stats.entry((index, target.clone())).or_default();
                s.entries += rules;
                s.fields_set += rules * set;
            }
        }
    }
    for (key, (lost, winners, conflicts)) in shared.totals() {
        let s = stats.entry(key).or_default();
        s.fields_lost += lost;
        s.winners.extend(winners);
        s.conflicts_with.extend(conflicts);
    }
    Ok((stats, prepared.diagnostics))
}

/// Stats of the lower-level suppliers of one rule: what they lost inside
/// the lower fold, and what the upper levels then took from them.
fn record_lower_stats(
    lower: &RuleFold<'_>,
    merged: &Folded,
    suppliers: &[Supplier],
    removed_by: impl Fn(&FieldKey) -> Option<String>,
    stats: &mut StatsByTarget,
) {
    let label = |i: usize| suppliers.get(i).map(Supplier::to_string);
    let mut touched: BTreeSet<(usize, Target)> = BTreeSet::new();
    for (id, supplier) in lower.suppliers.iter().enumerate() {
        let Source::Policy { index, target, .. } = &supplier.source else {
            continue;
        };
        let key = (*index, target.clone());
        let s = stats.entry(key.clone()).or_default();
        if touched.insert(key) {
            s.entries += 1;
        }
        s.fields_set += lower.maps.get(id).map_or(0, |m| m.len());
        let mut lost = BTreeSet::new();
        let holders = |field: &FieldKey| merged.fields.get(field).map(|e| e.suppliers.clone());
        for loss in lower.folded.losses.iter().filter(|l| l.loser == id) {
            lost.insert(loss.field.clone());
            match holders(&loss.field) {
                Some(ids) => s.winners.extend(ids.into_iter().filter_map(label)),
                None => s.winners.extend(label(loss.winner)),
            }
            let Some(winner) = lower.suppliers.get(loss.winner) else {
                continue;
            };
            if is_conflict(supplier, winner, &lower.maps, loss) {
                s.conflicts_with.insert(winner.who());
            }
        }
        for (field, e) in &lower.folded.fields {
            if !e.suppliers.contains(&id) {
                continue;
            }
            match holders(field) {
                Some(ids) if ids.contains(&id) => {}
                Some(ids) => {
                    lost.insert(field.clone());
                    s.winners.extend(ids.into_iter().filter_map(label));
                }
                None => {
                    lost.insert(field.clone());
                    s.winners.extend(removed_by(field));
                }
            }
        }
        s.fields_lost += lost.len();
    }
}

/// Folds every level per rule: the reference `contributions` must agree
/// with (tests only).
#[doc(hidden)]
pub fn contributions_full(
    inputs: &Inputs,
    gateway: &ObjectKey,
) -> Result<StatsByTarget, ResolveError> {
    let prepared = prepare(inputs, gateway)?;
    let mut stats = BTreeMap::new();
    for att in &prepared.attachments {
        let mut fold = fold_full(inputs, prepared.gateway, att);
        clamp(&mut fold.folded);
        record_stats(&fold.folded, &fold.suppliers, &fold.maps, &mut stats);
    }
    Ok(stats)
}

/// The shared-fold `contributions` (tests only).
#[doc(hidden)]
pub fn contributions_shared(
    inputs: &Inputs,
    gateway: &ObjectKey,
) -> Result<StatsByTarget, ResolveError> {
    contributions(inputs, gateway).map(|(stats, _)| stats)
}

/// backendRequest may not exceed a non-zero request timeout.
fn clamp(folded: &mut Folded) -> Option<String> {
    let request = match folded
        .fields
        .get(&FieldKey::RequestTimeout)
        .map(|e| &e.value)
    {
        Some(FieldValue::Millis(ms)) if *ms > 0 => *ms,
        _ => return None,
    };
    let backend = folded.fields.get_mut(&FieldKey::BackendRequestTimeout)?;
    match backend.value {
        FieldValue::Millis(ms) if ms > request => {
            backend.value = FieldValue::Millis(request);
            Some(format!("timeouts.backendRequest {ms}ms exceeds timeouts.request {request}ms; clamped to {request}ms"))
        }
        _ => None,
    }
}

fn clamp_warning(note: &str, att: &Attachment<'_>, name: &str) -> Diagnostic {
    let (route, rule) = match att.leaf() {
        Some((route, rule)) => (route, rule),
        None => return Diagnostic::warning(note.to_string()),
    };
    Diagnostic::warning(format!("{note} (entry {name})"))
        .at(&route.meta.origin)
        .on(format!("HTTPRoute {}", route.key))
        .field(format!("spec.rules[{}]", rule.index))
        .hint("set backendRequest no larger than request")
}

/// The `Conflicted` rule (docs/status.md): the loser lost a field to a
/// policy at the same level, folding with the same operation, that set a
/// different value. One definition for both the shared and the full fold.
fn is_conflict(
    loser: &Supplier,
    winner: &Supplier,
    maps: &[&FieldMap],
    loss: &crate::fold::Loss,
) -> bool {
    let same_level = winner.level == loser.level && matches!(winner.source, Source::Policy { .. });
    let same_op = winner.role.op() == loser.role.op();
    let differs = maps.get(loss.winner).and_then(|m| m.get(&loss.field)) != Some(&loss.value);
    same_level && same_op && differs
}

fn record_stats(
    folded: &Folded,
    suppliers: &[Supplier],
    maps: &[&FieldMap],
    stats: &mut BTreeMap<(usize, Target), ContributionStats>,
) {
    // Losses by loser, and supplier labels made once: both are per rule
    // and would otherwise cost suppliers x losses.
    let mut losses_of: Vec<Vec<&crate::fold::Loss>> = vec![Vec::new(); suppliers.len()];
    for loss in &folded.losses {
        if let Some(list) = losses_of.get_mut(loss.loser) {
            list.push(loss);
        }
    }
    let mut labels: Vec<Option<String>> = vec![None; suppliers.len()];
    let mut label = |i: usize| -> Option<String> {
        let slot = labels.get_mut(i)?;
        if slot.is_none() {
            *slot = suppliers.get(i).map(Supplier::to_string);
        }
        slot.clone()
    };
    let mut touched: BTreeSet<(usize, Target)> = BTreeSet::new();
    for (id, supplier) in suppliers.iter().enumerate() {
        let Source::Policy { index, target, .. } = &supplier.source else {
            continue;
        };
        let key = (*index, target.clone());
        let s = stats.entry(key.clone()).or_default();
        if touched.insert(key) {
            s.entries += 1;
        }
        s.fields_set += maps.get(id).map_or(0, |m| m.len());
        let mut lost = BTreeSet::new();
        for loss in losses_of.get(id).map(Vec::as_slice).unwrap_or_default() {
            lost.insert(&loss.field);
            let Some(winner) = suppliers.get(loss.winner) else {
                continue;
            };
            // Status names who holds the field in the end; the loss itself
            // may have been to an intermediate holder.
            let holders: Vec<usize> = match folded.fields.get(&loss.field) {
                Some(e) => e.suppliers.clone(),
                None => vec![loss.winner],
            };
            for holder in holders {
                if let Some(name) = label(holder) {
                    if !s.winners.contains(&name) {
                        s.winners.insert(name);
                    }
                }
            }
            if is_conflict(supplier, winner, maps, loss) {
                s.conflicts_with.insert(winner.who());
            }
        }
        s.fields_lost += lost.len();
    }
}

fn to_entry(
    att: &Attachment<'_>,
    name: &str,
    folded: &Folded,
    suppliers: &[Supplier],
) -> RouteEntry {
    let (route, rule) = match att.leaf() {
        Some(leaf) => leaf,
        None => return RouteEntry::default(),
    };
    let get = |key: &FieldKey| folded.fields.get(key).map(|e| &e.value);
    let millis = |key: &FieldKey| match get(key) {
        Some(FieldValue::Millis(ms)) => Some(*ms),
        _ => None,
    };
    let timeouts = Timeouts {
        request_ms: millis(&FieldKey::RequestTimeout),
        backend_request_ms: millis(&FieldKey::BackendRequestTimeout),
    };
    let retry = Retry {
        attempts: match get(&FieldKey::RetryAttempts) {
            Some(FieldValue::Count(n)) => Some(*n),
            _ => None,
        },
        codes: match get(&FieldKey::RetryCodes) {
            Some(FieldValue::Codes(c)) => Some(c.clone()),
            _ => None,
        },
        backoff_ms: millis(&FieldKey::RetryBackoff),
        retry_on: match get(&FieldKey::RetryOn) {
            Some(FieldValue::Words(w)) => Some(w.clone()),
            _ => None,
        },
    };
    let headers = |dir: Direction| {
        let mut changes = HeaderChanges::default();
        for (key, e) in &folded.fields {
            match (key, &e.value) {
                (FieldKey::HeaderSet(d, name), FieldValue::Text(v)) if *d == dir => {
                    changes.set.push(Header {
                        name: name.clone(),
                        value: v.clone(),
                    })
                }
                (FieldKey::HeaderAdd(d, name), FieldValue::Text(v)) if *d == dir => {
                    changes.add.push(Header {
                        name: name.clone(),
                        value: v.clone(),
                    })
                }
                (FieldKey::HeaderRemove(d), FieldValue::Words(w)) if *d == dir => {
                    changes.remove = w.clone()
                }
                _ => {}
            }
        }
        (!changes.is_empty()).then_some(changes)
    };
    let sources = folded
        .fields
        .iter()
        .map(|(key, e)| {
            let who: Vec<String> = e
                .suppliers
                .iter()
                .filter_map(|i| suppliers.get(*i))
                .map(Supplier::to_string)
                .collect();
            (key.to_string(), who.join(" + "))
        })
        .collect();
    RouteEntry {
        name: name.to_string(),
        listener: att.listener.name.clone(),
        route_namespace: route.key.namespace.clone(),
        route_name: route.key.name.clone(),
        rule: rule.label(),
        hostnames: att.hostnames.clone(),
        matches: att.matches.clone(),
        timeouts: (timeouts != Timeouts::default()).then_some(timeouts),
        retry: (retry != Retry::default()).then_some(retry),
        request_headers: headers(Direction::Request),
        response_headers: headers(Direction::Response),
        sources,
    }
}

/// Folds every level per rule without sharing the upper levels: the
/// reference `resolve`'s shared fold must agree with (tests only).
#[doc(hidden)]
pub fn resolve_unshared(inputs: &Inputs, gateway: &ObjectKey) -> Result<Document, ResolveError> {
    let prepared = prepare(inputs, gateway)?;
    let mut routes = Vec::new();
    for att in &prepared.attachments {
        let mut fold = fold_full(inputs, prepared.gateway, att);
        let clamped = clamp(&mut fold.folded);
        let mut entry = to_entry(att, &att.entry_name(), &fold.folded, &fold.suppliers);
        if clamped.is_some() {
            if let Some(source) = entry
                .sources
                .get_mut(&FieldKey::BackendRequestTimeout.to_string())
            {
                source.push_str(", clamped to timeouts.requestMs");
            }
        }
        routes.push(entry);
    }
    Ok(Document {
        schema_version: SCHEMA_VERSION,
        gateway: prepared.gateway.key.to_string(),
        options: Default::default(),
        routes,
    })
}
