//! Every route accounted for: which listeners of a Gateway a route's
//! parentRef reaches, and, when it reaches none, why, in Gateway API's own
//! route reasons (`RouteConditionReason`, apis/v1/shared_types.go):
//! `NoMatchingParent`, `NotAllowedByListeners`, `NoMatchingListenerHostname`.
//! The attachment walk (`crate::attach`) uses the same predicates, so the
//! reason given is the reason the walk skipped the route.

use crate::diagnostic::Diagnostic;
use crate::hostname::intersect_lists;
use crate::model::route::ParentRef;
use crate::model::{Gateway, HttpRoute, Inputs, Listener, NamespaceFrom, SetRef, SetState};

/// Whether `parent` names `gateway` at all (group, kind, namespace, name).
pub(crate) fn names_gateway(parent: &ParentRef, gateway: &Gateway) -> bool {
    parent.is_gateway()
        && parent.namespace == gateway.key.namespace
        && parent.name == gateway.key.name
}

/// What a parentRef names among a Gateway's listeners: the Gateway itself
/// (its own listeners) or one of the ListenerSets it takes (that set's
/// listeners only). A parentRef to the Gateway never reaches a set's
/// listener, even one of the same name (docs/semantics.md, "ListenerSet").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parent {
    Gateway,
    Set(SetRef),
}

impl Parent {
    /// What `parent` names on `gateway`, if anything: the Gateway, or a set
    /// attached to it (whether or not any of its listeners survived the
    /// conflict check).
    pub fn of(inputs: &Inputs, parent: &ParentRef, gateway: &Gateway) -> Option<Parent> {
        if names_gateway(parent, gateway) {
            return Some(Parent::Gateway);
        }
        let set = parent.set()?;
        inputs
            .listener_sets
            .get(&set)
            .is_some_and(|s| s.state == SetState::Attached && s.parent == gateway.key)
            .then_some(Parent::Set(set))
    }

    /// What `parent` names, by its kind alone: a set, or else the Gateway.
    fn named_by(parent: &ParentRef) -> Parent {
        parent.set().map_or(Parent::Gateway, Parent::Set)
    }

    /// Whether the listener belongs to this parent.
    pub fn owns(&self, listener: &Listener) -> bool {
        match self {
            Parent::Gateway => listener.set.is_none(),
            Parent::Set(set) => listener.set.as_ref() == Some(set),
        }
    }

    /// `Gateway infra/edge` or `ListenerSet team-a/ls-a`, for messages.
    pub fn describe(&self, gateway: &Gateway) -> String {
        match self {
            Parent::Gateway => format!("Gateway {}", gateway.key),
            Parent::Set(set) => set.to_string(),
        }
    }
}

/// Whether `parent` (a parentRef of a route) reaches this listener of
/// `gateway`: it names the listener's Gateway or set, and its `sectionName`
/// and `port`, when given, are the listener's. A listener without a port
/// (an XListenerSet's dynamic port) matches no `port`.
pub(crate) fn selects(parent: &ParentRef, gateway: &Gateway, listener: &Listener) -> bool {
    // Per listener, per route: compared in place, nothing allocated.
    let owner = match &listener.set {
        None => names_gateway(parent, gateway),
        Some(set) => parent.names_set(set),
    };
    owner
        && parent
            .section_name
            .as_ref()
            .is_none_or(|s| *s == listener.name)
        && parent
            .port
            .is_none_or(|port| port == listener.port && listener.port != 0)
}

/// Whether the listener's `allowedRoutes` admits the route: its namespace
/// (`namespaces.from`) and its kind (`kinds`, else the protocol's default).
pub(crate) fn admits_namespace(
    inputs: &Inputs,
    gateway: &Gateway,
    listener: &Listener,
    route: &HttpRoute,
) -> bool {
    let ns = &route.key.namespace;
    // `Same` is the namespace of the listener's own object: a set's, not
    // its Gateway's (conformance `ListenerSetAllowedRoutesNamespaces`).
    let own = match &listener.set {
        Some(set) => &set.key.namespace,
        None => &gateway.key.namespace,
    };
    match &listener.allowed.from {
        NamespaceFrom::Same => ns == own,
        NamespaceFrom::All => true,
        NamespaceFrom::Selector(sel) => sel.matches(&inputs.namespace_labels(ns)),
    }
}

pub(crate) fn admits_kind(listener: &Listener, route: &HttpRoute) -> bool {
    let info = route.kind.info();
    match &listener.allowed.kinds {
        Some(kinds) => kinds.iter().any(|(g, k)| info.is(g, k)),
        None => info.protocols.contains(&listener.protocol.as_str()),
    }
}

/// Why one parentRef of a route reaches no listener of its Gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No listener has the `sectionName` or `port` the parentRef gives.
    NoMatchingParent,
    /// The listeners it selects do not admit the route's namespace or kind.
    NotAllowedByListeners { namespace: bool },
    /// The listeners that admit it share no hostname with the route.
    NoMatchingListenerHostname,
}

impl Refusal {
    /// Gateway API's reason name.
    pub fn reason(&self) -> &'static str {
        match self {
            Refusal::NoMatchingParent => "NoMatchingParent",
            Refusal::NotAllowedByListeners { .. } => "NotAllowedByListeners",
            Refusal::NoMatchingListenerHostname => "NoMatchingListenerHostname",
        }
    }
}

/// Why `parent` (which names `gateway` or one of its sets) reaches none of
/// its listeners, or `None` when it reaches at least one.
pub fn refusal(
    inputs: &Inputs,
    gateway: &Gateway,
    route: &HttpRoute,
    parent: &ParentRef,
) -> Option<Refusal> {
    let selected: Vec<&Listener> = gateway
        .listeners
        .iter()
        .filter(|l| selects(parent, gateway, l))
        .collect();
    if selected.is_empty() {
        return Some(Refusal::NoMatchingParent);
    }
    let by_namespace: Vec<&Listener> = selected
        .iter()
        .copied()
        .filter(|l| admits_namespace(inputs, gateway, l, route))
        .collect();
    let admitted: Vec<&Listener> = by_namespace
        .iter()
        .copied()
        .filter(|l| admits_kind(l, route))
        .collect();
    if admitted.is_empty() {
        return Some(Refusal::NotAllowedByListeners {
            namespace: by_namespace.is_empty(),
        });
    }
    let shares_host = admitted.iter().any(|l| {
        let hosts: Vec<String> = l.hostname.iter().cloned().collect();
        intersect_lists(&hosts, &route.hostnames).is_some()
    });
    (!shares_host).then_some(Refusal::NoMatchingListenerHostname)
}

/// The listeners of `gateway` that `parent` reaches and that take the
/// route: selected, admitting its namespace and kind, sharing a hostname
/// (the attachment walk's predicates, in `refusal`'s order).
pub fn serving<'g>(
    inputs: &Inputs,
    gateway: &'g Gateway,
    route: &HttpRoute,
    parent: &ParentRef,
) -> Vec<&'g Listener> {
    gateway
        .listeners
        .iter()
        .filter(|l| selects(parent, gateway, l))
        .filter(|l| admits_namespace(inputs, gateway, l, route) && admits_kind(l, route))
        .filter(|l| {
            let hosts: Vec<String> = l.hostname.iter().cloned().collect();
            intersect_lists(&hosts, &route.hostnames).is_some()
        })
        .collect()
}

/// One warning per parentRef of a route that names `gateway` (or a
/// ListenerSet it takes) but reaches none of its listeners
/// (docs/semantics.md, "Attachment").
pub fn report(inputs: &Inputs, gateway: &Gateway, diags: &mut Vec<Diagnostic>) {
    for route in inputs.all_routes() {
        for (index, parent) in route.parent_refs.iter().enumerate() {
            if Parent::of(inputs, parent, gateway).is_none() {
                continue;
            }
            let Some(refusal) = refusal(inputs, gateway, route, parent) else {
                continue;
            };
            diags.push(warning(route, index, parent, gateway, &refusal));
        }
    }
}

/// `attaches to no listener of Gateway infra/edge (sectionName htpp):
/// NoMatchingParent: no listener is named htpp`: the words a route's
/// warning and a policy's status both use.
pub fn refusal_text(
    route: &HttpRoute,
    parent: &ParentRef,
    gateway: &Gateway,
    refusal: &Refusal,
) -> (String, String) {
    let named = Parent::named_by(parent);
    let named_listeners: Vec<&str> = gateway
        .listeners
        .iter()
        .filter(|l| named.owns(l))
        .map(|l| l.name.as_str())
        .collect();
    let (why, hint) = why(route, parent, refusal, &named_listeners);
    (
        format!(
            "attaches to no listener of {}{}: {}: {why}",
            named.describe(gateway),
            selector(parent),
            refusal.reason()
        ),
        hint,
    )
}

fn warning(
    route: &HttpRoute,
    index: usize,
    parent: &ParentRef,
    gateway: &Gateway,
    refusal: &Refusal,
) -> Diagnostic {
    let (message, hint) = refusal_text(route, parent, gateway, refusal);
    Diagnostic::warning(message)
        .at(&route.meta.origin)
        .on(route.object())
        .field(format!("spec.parentRefs[{index}]"))
        .hint(hint)
}

/// ` (sectionName x, port 80)`, or nothing.
fn selector(parent: &ParentRef) -> String {
    let named: Vec<String> = parent
        .section_name
        .iter()
        .map(|s| format!("sectionName {s}"))
        .chain(parent.port.map(|p| format!("port {p}")))
        .collect();
    if named.is_empty() {
        String::new()
    } else {
        format!(" ({})", named.join(", "))
    }
}

/// The reason in words, and the hint.
fn why(
    route: &HttpRoute,
    parent: &ParentRef,
    refusal: &Refusal,
    listeners: &[&str],
) -> (String, String) {
    match refusal {
        Refusal::NoMatchingParent => (
            match (&parent.section_name, parent.port) {
                (Some(s), Some(p)) => format!("no listener is named {s} on port {p}"),
                (Some(s), None) => format!("no listener is named {s}"),
                (None, Some(p)) => format!("no listener is on port {p}"),
                (None, None) => "it has no listeners".to_string(),
            },
            format!("its listeners are: {}", listeners.join(", ")),
        ),
        Refusal::NotAllowedByListeners { namespace: true } => (
            format!(
                "no listener it selects admits routes from namespace {}",
                route.key.namespace
            ),
            "see the listeners' allowedRoutes.namespaces".to_string(),
        ),
        Refusal::NotAllowedByListeners { namespace: false } => (
            format!(
                "no listener it selects admits the kind {}",
                route.kind.name()
            ),
            "see the listeners' allowedRoutes.kinds".to_string(),
        ),
        Refusal::NoMatchingListenerHostname => (
            "it shares no hostname with any listener that admits it".to_string(),
            "compare spec.hostnames with the listeners' hostname".to_string(),
        ),
    }
}
