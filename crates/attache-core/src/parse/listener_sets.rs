//! ListenerSets (docs/semantics.md, "ListenerSet"): reading one, then, once
//! everything is read, the Gateway's `allowedListeners` gate, the merged
//! listener list in listener precedence and its conflicts, and the
//! parentRefs that name a set.

use super::gateway::read_listeners;
use super::*;
use crate::model::listener_set::{ListenersFrom, RawListenerSet};
use crate::model::{ListenerSet, SetKind, SetRef, SetState};

pub(super) fn read_listener_set(doc: &SourceDoc, kind: SetKind, inputs: &mut Inputs) {
    let name = kind.name();
    let raw: RawListenerSet = match typed(doc, name) {
        Ok(raw) => raw,
        Err(d) => return inputs.diagnostics.push(*d),
    };
    let Some(meta) = meta(
        raw.metadata,
        &doc.origin,
        name,
        true,
        &mut inputs.diagnostics,
    ) else {
        return;
    };
    let namespace = meta.namespace.clone().unwrap_or_default();
    let id = SetRef {
        kind,
        key: ObjectKey {
            namespace: namespace.clone(),
            name: meta.name.clone(),
        },
    };
    let object = id.to_string();
    let mut problems = Vec::new();
    let parent = raw.spec.parent_ref;
    let (group, parent_kind) = (
        parent.group.unwrap_or_else(|| GATEWAY_GROUP.into()),
        parent.kind.unwrap_or_else(|| "Gateway".into()),
    );
    if (group.as_str(), parent_kind.as_str()) != (GATEWAY_GROUP, "Gateway") {
        problems.push(Problem {
            field: "spec.parentRef".into(),
            message: format!(
                "names a {parent_kind} of group {group:?}; a {name}'s parent is a Gateway"
            ),
            hint: "use parentRef {name: <gateway>} (group gateway.networking.k8s.io, kind Gateway); a set never parents a set".into(),
        });
    }
    let listeners = read_listeners(raw.spec.listeners, Some(&id), None, &mut problems);
    if !problems.is_empty() {
        return problems_to_diagnostics(problems, &doc.origin, &object, &mut inputs.diagnostics);
    }
    for (i, l) in listeners.iter().enumerate().filter(|(_, l)| l.port == 0) {
        inputs.diagnostics.push(
            Diagnostic::note(format!(
                "listener {} has no port (v1.4's dynamic port): it matches no parentRef port and takes part in no conflict check",
                l.name
            ))
            .at(&doc.origin)
            .on(object.clone())
            .field(format!("spec.listeners[{i}].port")),
        );
    }
    if let Some(first) = inputs.listener_sets.get(&id) {
        let d = duplicate(name, &id.key.to_string(), &first.meta.origin, &doc.origin);
        return inputs.diagnostics.push(d);
    }
    let parent = ObjectKey {
        namespace: parent.namespace.unwrap_or(namespace),
        name: parent.name,
    };
    inputs.listener_sets.insert(
        id.clone(),
        Arc::new(ListenerSet {
            meta,
            id,
            parent,
            listeners,
            state: SetState::Attached,
            conflicted: Vec::new(),
        }),
    );
}

/// Once everything is read: which sets each Gateway takes, their listeners
/// joined to its own in listener precedence, and the conflicts among them.
pub(super) fn link_listener_sets(inputs: &mut Inputs) {
    drop_shadowed_x_sets(inputs);
    gate(inputs);
    let mut order: Vec<&ListenerSet> = inputs
        .listener_sets
        .values()
        .map(|s| &**s)
        .filter(|s| s.state == SetState::Attached)
        .collect();
    order.sort_by(|a, b| a.precedence().cmp(&b.precedence()));
    let mut joined: BTreeMap<ObjectKey, Vec<Listener>> = BTreeMap::new();
    for set in order {
        joined
            .entry(set.parent.clone())
            .or_default()
            .extend(set.listeners.iter().cloned());
    }
    let mut findings = Vec::new();
    for (key, set_listeners) in joined {
        let Some(gw) = inputs.gateways.get_mut(&key) else {
            continue;
        };
        // Only a Gateway that takes sets is changed (and so copied).
        let gw = Arc::make_mut(gw);
        gw.listeners.extend(set_listeners);
        for (loser, why) in conflicts(&gw.listeners) {
            findings.push((key.clone(), loser, why));
        }
    }
    // Gateways that take no set still have their own listeners checked.
    for gw in inputs.gateways.values() {
        if !inputs
            .listener_sets
            .values()
            .any(|s| s.state == SetState::Attached && s.parent == gw.key)
        {
            for (loser, why) in conflicts(&gw.listeners) {
                findings.push((gw.key.clone(), loser, why));
            }
        }
    }
    for (gateway, loser, why) in findings {
        mark_conflicted(inputs, &gateway, loser, why);
    }
    drop_conflicted(inputs);
}

/// An XListenerSet and a ListenerSet of one namespace/name on one Gateway:
/// the XListenerSet is dropped, with an error naming both.
fn drop_shadowed_x_sets(inputs: &mut Inputs) {
    let mut dropped = Vec::new();
    for set in inputs.listener_sets.values() {
        if set.id.kind != SetKind::XListenerSet {
            continue;
        }
        let twin = SetRef {
            kind: SetKind::ListenerSet,
            key: set.id.key.clone(),
        };
        let Some(other) = inputs.listener_sets.get(&twin) else {
            continue;
        };
        if other.parent != set.parent {
            continue;
        }
        let why = format!("{twin} of the same name is on Gateway {}", set.parent);
        inputs.diagnostics.push(
            Diagnostic::error(format!("{why}; this {} is dropped", set.id))
                .at(&set.meta.origin)
                .on(set.id.to_string())
                .hint(format!(
                    "remove one of the two (the ListenerSet is in {}); the XListenerSet kind was removed in Gateway API v1.5",
                    other.meta.origin
                )),
        );
        dropped.push((set.id.clone(), why));
    }
    for (id, why) in dropped {
        if let Some(set) = inputs.listener_sets.get_mut(&id) {
            Arc::make_mut(set).state = SetState::Dropped(why);
        }
    }
}

/// The Gateway's `allowedListeners` gate: a set whose Gateway is missing or
/// does not admit its namespace is detached, with one warning naming the
/// Gateway, the cause and the routes that name the set.
fn gate(inputs: &mut Inputs) {
    let mut detached = Vec::new();
    for set in inputs.listener_sets.values() {
        if set.state != SetState::Attached {
            continue;
        }
        let ns = &set.id.key.namespace;
        let why = match inputs.gateways.get(&set.parent) {
            None => format!("Gateway {} is not in the input", set.parent),
            Some(gw) => {
                let admitted = match &gw.allowed_listeners {
                    ListenersFrom::None => false,
                    ListenersFrom::Same => *ns == gw.key.namespace,
                    ListenersFrom::All => true,
                    ListenersFrom::Selector(sel) => sel.matches(&inputs.namespace_labels(ns)),
                };
                if admitted {
                    continue;
                }
                format!(
                    "NotAllowed: Gateway {} takes ListenerSets from {} (spec.allowedListeners.namespaces.from: {})",
                    gw.key,
                    match &gw.allowed_listeners {
                        ListenersFrom::None => "no namespace".to_string(),
                        ListenersFrom::Same => format!("namespace {} only", gw.key.namespace),
                        ListenersFrom::Selector(_) => "the namespaces its selector matches".into(),
                        ListenersFrom::All => "every namespace".into(),
                    },
                    gw.allowed_listeners.as_str()
                )
            }
        };
        let routes: Vec<String> = inputs
            .routes
            .values()
            .filter(|r| {
                r.parent_refs
                    .iter()
                    .any(|p| p.set().as_ref() == Some(&set.id))
            })
            .map(|r| format!("HTTPRoute {}", r.key))
            .collect();
        let hint = if inputs.gateways.contains_key(&set.parent) {
            "the Gateway's owner sets spec.allowedListeners.namespaces.from (Same, All or Selector) to take it"
        } else {
            "add the Gateway to what is read (its manifest to -f, or the Gateway to the cluster; a live read with -n sees one namespace), or fix spec.parentRef"
        };
        inputs.diagnostics.push(
            Diagnostic::warning(format!(
                "not attached: {why}; its listeners serve nothing{}",
                if routes.is_empty() {
                    String::new()
                } else {
                    format!(" (routes that name it: {})", routes.join(", "))
                }
            ))
            .at(&set.meta.origin)
            .on(set.id.to_string())
            .field("spec.parentRef")
            .hint(hint),
        );
        detached.push((set.id.clone(), why));
    }
    for (id, why) in detached {
        if let Some(set) = inputs.listener_sets.get_mut(&id) {
            Arc::make_mut(set).state = SetState::Detached(why);
        }
    }
}

/// Why two listeners on one port conflict (GEP-1713 "Listener
/// Validation", as for one Gateway): different protocols, except UDP beside
/// any and HTTPS beside TLS (Envoy Gateway, internal/gatewayapi/validate.go
/// `validateConflictedProtocolsListeners`); or one protocol and one
/// hostname, absent equal to absent. `tls` plays no part. A listener
/// without a port (port 0) conflicts with none.
fn conflict(a: &Listener, b: &Listener) -> Option<&'static str> {
    if a.port == 0 || a.port != b.port {
        return None;
    }
    let (pa, pb) = (a.protocol.as_str(), b.protocol.as_str());
    if pa != pb {
        let coexist =
            pa == "UDP" || pb == "UDP" || matches!((pa, pb), ("HTTPS", "TLS") | ("TLS", "HTTPS"));
        return (!coexist).then_some("ProtocolConflict");
    }
    (a.hostname == b.hostname).then_some("HostnameConflict")
}

/// The Conflicted listeners of one merged list, in listener precedence:
/// two of one object both lose ("MUST NOT pick one conflicting Listener as
/// the winner"); across objects the later one loses to the earlier that
/// kept its place. Each: (index, message naming both keys and the reason).
fn conflicts(listeners: &[Listener]) -> Vec<(usize, String)> {
    let mut lost: Vec<Option<String>> = vec![None; listeners.len()];
    let message = |l: &Listener, other: &Listener, reason: &str| {
        format!(
            "{reason}: listener {} and listener {} are both on port {}",
            l.key(),
            other.key(),
            l.port
        )
    };
    for (j, b) in listeners.iter().enumerate() {
        for (i, a) in listeners.iter().enumerate().take(j) {
            if a.set != b.set {
                continue;
            }
            if let Some(reason) = conflict(a, b) {
                if let Some(slot) = lost.get_mut(i) {
                    slot.get_or_insert_with(|| message(a, b, reason));
                }
                if let Some(slot) = lost.get_mut(j) {
                    slot.get_or_insert_with(|| message(b, a, reason));
                }
            }
        }
    }
    for j in 0..listeners.len() {
        if lost[j].is_some() {
            continue;
        }
        let Some(b) = listeners.get(j) else { continue };
        let earlier = listeners[..j]
            .iter()
            .zip(&lost)
            .filter(|(a, gone)| gone.is_none() && a.set != b.set)
            .find_map(|(a, _)| conflict(a, b).map(|reason| message(b, a, reason)));
        lost[j] = earlier;
    }
    lost.into_iter()
        .enumerate()
        .filter_map(|(i, why)| why.map(|w| (i, w)))
        .collect()
}

/// Takes one Conflicted listener out of its Gateway's list, records it on
/// its object for status, and reports it at its own object.
fn mark_conflicted(inputs: &mut Inputs, gateway: &ObjectKey, index: usize, why: String) {
    let Some(gw) = inputs.gateways.get(gateway) else {
        return;
    };
    let Some(listener) = gw.listeners.get(index).cloned() else {
        return;
    };
    let (origin, object, position) = match &listener.set {
        Some(set) => match inputs.listener_sets.get(set) {
            Some(s) => (
                s.meta.origin.clone(),
                set.to_string(),
                s.listeners.iter().position(|l| l.name == listener.name),
            ),
            None => return,
        },
        None => (
            gw.meta.origin.clone(),
            format!("Gateway {gateway}"),
            gw.listeners
                .iter()
                .position(|l| l.name == listener.name && l.set.is_none()),
        ),
    };
    inputs.diagnostics.push(
        Diagnostic::error(format!(
            "{why}; {} is Conflicted and serves no route",
            listener.describe()
        ))
        .at(&origin)
        .on(object)
        .field(format!("spec.listeners[{}]", position.unwrap_or_default()))
        .hint("give it another port or hostname; the earlier listener (the Gateway's own, then sets by creationTimestamp, then namespace/name) keeps its routes"),
    );
    match &listener.set {
        Some(set) => {
            if let Some(s) = inputs.listener_sets.get_mut(set) {
                Arc::make_mut(s)
                    .conflicted
                    .push((listener.name.clone(), why));
            }
        }
        None => {
            if let Some(g) = inputs.gateways.get_mut(gateway) {
                Arc::make_mut(g)
                    .conflicted
                    .push((listener.name.clone(), why));
            }
        }
    }
}

/// Removes the Conflicted listeners from every Gateway's list, once all are
/// marked (indexes stay valid while marking). A Gateway with none is left
/// as it is, not copied.
fn drop_conflicted(inputs: &mut Inputs) {
    let Inputs {
        gateways,
        listener_sets,
        ..
    } = inputs;
    for gw in gateways.values_mut() {
        let lost = |l: &Listener, own: &[(String, String)]| match &l.set {
            None => own.iter().any(|(n, _)| *n == l.name),
            Some(set) => listener_sets
                .get(set)
                .is_some_and(|s| s.conflicted.iter().any(|(n, _)| *n == l.name)),
        };
        if !gw.listeners.iter().any(|l| lost(l, &gw.conflicted)) {
            continue;
        }
        let gw = Arc::make_mut(gw);
        let own = std::mem::take(&mut gw.conflicted);
        gw.listeners.retain(|l| !lost(l, &own));
        gw.conflicted = own;
    }
}

/// parentRefs that name a ListenerSet the input does not have, or pair a
/// set kind with the wrong group: a warning each (a set the input has but
/// that is not attached is reported once, at the set).
pub(super) fn check_set_parents(inputs: &mut Inputs) {
    let mut found = Vec::new();
    for route in inputs.routes.values() {
        for (index, parent) in route.parent_refs.iter().enumerate() {
            let at = |d: Diagnostic| {
                d.at(&route.meta.origin)
                    .on(format!("HTTPRoute {}", route.key))
                    .field(format!("spec.parentRefs[{index}]"))
            };
            if let Some(set) = parent.set() {
                if !inputs.listener_sets.contains_key(&set) {
                    found.push(at(Diagnostic::warning(format!(
                        "names {set}, which the input does not have; not attached through it"
                    ))
                    .hint("add that ListenerSet to what is read (its manifest to -f, or the ListenerSet to the cluster; a live read with -n sees one namespace), or check the parentRef's kind, name and namespace")));
                }
            } else if let Some(kind) = SetKind::named(&parent.kind) {
                found.push(at(Diagnostic::warning(format!(
                    "kind {} with group {:?} names nothing; not attached through it",
                    parent.kind, parent.group
                ))
                .hint(format!(
                    "use group: {} for kind {}",
                    kind.group(),
                    kind.name()
                ))));
            }
        }
    }
    inputs.diagnostics.extend(found);
}
