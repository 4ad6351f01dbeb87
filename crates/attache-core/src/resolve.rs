//! `resolve`: one Gateway's schema-1 document with provenance, and
//! `explain`, which folds the same way but keeps every losing contribution.
//! The fold itself is `crate::fold`; what status counts is
//! `crate::status::counting`; turning a fold into a schema-1 entry is
//! `crate::entry`.

use std::collections::BTreeMap;

use crate::attach::{attach, Attachment};
use crate::contract::{Document, SCHEMA_VERSION};
use crate::data_plane::{istio_request_conflicts, DataPlane};
use crate::diagnostic::Diagnostic;
use crate::entry::{to_entry, Adjusted};
use crate::explain::{explain, Explanation};
use crate::field::{FieldKey, FieldValue};
use crate::fold::levels::RuleFold;
use crate::fold::shared::SharedUpper;
use crate::fold::Folded;
use crate::model::Gateway;
use crate::parse::Inputs;
use crate::retries::{self, add_connection_errors};
use crate::topology::{GatewayResolution, ListenerInfo, ObjectKey};

// Status counting lives in `status::counting`; these stay reachable here
// for the tests that compare the shared and the full fold.
#[doc(hidden)]
pub use crate::status::counting::{contributions_full, contributions_shared};
pub use crate::status::counting::{ContributionStats, StatsByTarget};

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

/// One Gateway, resolved.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub resolution: GatewayResolution,
    /// Attachment and fold findings (reading findings are in `Inputs`).
    pub diagnostics: Vec<Diagnostic>,
}

/// The Gateway's attachments in document order, and what attaching found.
pub(crate) struct Prepared<'a> {
    pub gateway: &'a Gateway,
    pub attachments: Vec<Attachment<'a>>,
    pub diagnostics: Vec<Diagnostic>,
}

pub(crate) fn prepare<'a>(
    inputs: &'a Inputs,
    gateway: &ObjectKey,
) -> Result<Prepared<'a>, ResolveError> {
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
    resolve_for(inputs, gateway, DataPlane::Envoy)
}

/// [`resolve`] for a given data plane: under Istio, header operations only
/// a rule's own filter supplies are left to istiod (crate::data_plane).
pub fn resolve_for(
    inputs: &Inputs,
    gateway: &ObjectKey,
    data_plane: DataPlane,
) -> Result<Resolved, ResolveError> {
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
        let (mut folded, suppliers) =
            shared.complete(att.listener, &lower.folded, &lower.gate, lower.suppliers);
        let name = att.entry_name();
        let clamped = clamp(&mut folded);
        if let Some(note) = &clamped {
            diagnostics.push(clamp_warning(note, att, &name));
        }
        if data_plane == DataPlane::Istio {
            let carried = data_plane.carried(&folded, &suppliers);
            diagnostics.extend(istio_request_conflicts(att, &carried, &name));
        }
        let adjusted = Adjusted {
            clamped: clamped.is_some(),
            connection_errors: add_connection_errors(&mut folded),
        };
        let entry = to_entry(att, &name, &folded, &suppliers, adjusted, data_plane);
        backends.insert(name, leaf_rule.backends.clone());
        routes.push(entry);
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
        document.options.listener_ports = gw
            .listeners
            .iter()
            .map(|l| (l.name.clone(), l.port))
            .collect();
    }
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
pub(crate) fn fold_full<'a>(
    inputs: &'a Inputs,
    gw: &Gateway,
    att: &Attachment<'a>,
) -> RuleFold<'a> {
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
        let mut notes: Vec<String> = clamp(&mut fold.folded).into_iter().collect();
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

/// backendRequest may not exceed a non-zero request timeout.
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

pub(crate) fn clamp(folded: &mut Folded) -> Option<String> {
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

pub(crate) fn clamp_warning(note: &str, att: &Attachment<'_>, name: &str) -> Diagnostic {
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

/// Folds every level per rule without sharing the upper levels: the
/// reference `resolve`'s shared fold must agree with (tests only).
#[doc(hidden)]
pub fn resolve_unshared(inputs: &Inputs, gateway: &ObjectKey) -> Result<Document, ResolveError> {
    let prepared = prepare(inputs, gateway)?;
    let mut routes = Vec::new();
    for att in &prepared.attachments {
        let mut fold = fold_full(inputs, prepared.gateway, att);
        let adjusted = Adjusted {
            clamped: clamp(&mut fold.folded).is_some(),
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
