//! What every per-Gateway pass shares: choosing the Gateway, attaching its
//! routes in document order, folding one attachment at every level, and the
//! clamp of backendRequest to request. `resolve`, `explain_route` and
//! status's counting all start here, so it sits below them.

use crate::attach::{attach, Attachment};
use crate::authored_form::duration;
use crate::diagnostic::Diagnostic;
use crate::error::ResolveError;
use crate::field::{FieldKey, FieldValue};
use crate::fold::levels::RuleFold;
use crate::fold::Folded;
use crate::model::kinds::RouteKind;
use crate::model::{Gateway, Inputs};
use crate::topology::ObjectKey;

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
    // Document order (see `resolve`): the Gateway's own listeners, then
    // each ListenerSet's in listener precedence.
    // The key borrows from `inputs`: 30,000 attachments, no copies.
    attachments.sort_by_cached_key(|a| {
        let (route, rule) = a.leaf().map(|(r, rule)| (r, rule.index)).unzip();
        let set = a
            .listener
            .set
            .as_ref()
            .and_then(|s| inputs.listener_sets.get(s));
        (
            set.map(|s| s.precedence()),
            a.listener.name.as_str(),
            route.and_then(|r| r.meta.created.as_deref()),
            route.map(|r| &r.key),
            rule,
        )
    });
    Ok(Prepared {
        gateway: gw,
        attachments,
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

/// backendRequest may not exceed a non-zero request timeout.
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
            // In the user's words (`5s`, not `5000ms`), as explain prints values.
            let (given, bound) = (duration(ms), duration(request));
            Some(format!(
                "timeouts.backendRequest {given} exceeds timeouts.request {bound}; clamped to {bound}"
            ))
        }
        _ => None,
    }
}

/// `explain`'s note on a request timeout of a GRPCRoute rule: Envoy's
/// request timeout runs from the request's start to the end of the
/// response, so it bounds the whole call, a stream's included
/// (docs/semantics.md, "GRPCRoute").
pub(crate) fn grpc_timeout_note(kind: RouteKind, folded: &Folded) -> Option<String> {
    if kind != RouteKind::Grpc {
        return None;
    }
    match folded.fields.get(&FieldKey::RequestTimeout).map(|e| &e.value) {
        Some(FieldValue::Millis(ms)) if *ms > 0 => Some(format!(
            "timeouts.request {} on a GRPCRoute bounds the whole call, streams included: a server-streaming or bidirectional call is ended (DEADLINE_EXCEEDED) {} after it starts, however long it keeps sending",
            duration(*ms),
            duration(*ms)
        )),
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
        .on(route.object())
        .field(format!("spec.rules[{}]", rule.index))
        .hint("set backendRequest no larger than request")
}
