//! From [`SourceDoc`]s to the validated model ([`Inputs`]). Every problem
//! becomes a [`Diagnostic`] naming file, document, object and field; a bad
//! object is dropped (policies are kept as invalid for status) and never
//! stops the others from being read.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::de::DeserializeOwned;

use crate::contract::{HttpRouteMatch, PathMatch, PathMatchType};
use crate::diagnostic::Diagnostic;
use crate::field::{Direction, FieldMap};
use crate::model::gateway::{RawFrom, RawGateway, RawGatewayClass, RawNamespace};
use crate::model::kinds::{route_kind, HTTP_ROUTE};
use crate::model::meta::{is_timestamp, RawMeta, PRIORITY_KEYS, PRIORITY_VALUES, WEIGHT_KEYS};
use crate::model::policy::{
    RawPolicy, RawPolicySpec, RawTargetRef, Scope, SpecShape, TargetKind, KINDS, POLICY_GROUP,
};
use crate::model::route::{
    RawBackendRef, RawFilter, RawHttpRoute, RawParentRef, RawRule, GATEWAY_GROUP,
};
use crate::model::{
    AllowedRoutes, Gateway, GatewayClass, HttpRoute, Listener, Meta, Namespace, NamespaceFrom,
    ParentRef, Policy, PolicyKind, Priority, Rule, Target, TargetRef,
};
use crate::settings::{self, Problem};
use crate::source::{Origin, SourceDoc};
use crate::topology::{BackendTarget, ObjectKey};

pub use crate::model::Inputs;

mod ancestors;
mod gateway;
mod listener_sets;
mod peers;
mod pieces;
mod policy;
mod route;
mod strategy;
mod targets;

pub use ancestors::limit_ancestors_with_foreign;
use gateway::{read_class, read_gateway, read_namespace};
use peers::read_peer;
pub use pieces::{assemble, Pieces};
use policy::read_policy;
use route::read_route;
use targets::resolve_targets;

/// Reads every document. Never fails: problems are in `Inputs::diagnostics`.
pub fn parse(docs: &[SourceDoc]) -> Inputs {
    parse_each(docs)
}

/// [`parse`] over documents held elsewhere (the controller keeps each one
/// read once, shared between rounds, and hands references in).
pub fn parse_each<'a>(docs: impl IntoIterator<Item = &'a SourceDoc>) -> Inputs {
    let mut inputs = Inputs::default();
    for doc in docs {
        read_doc(doc, &mut inputs);
    }
    relate(inputs)
}

/// The passes that relate the objects read to each other, once every
/// document is in.
fn relate(mut inputs: Inputs) -> Inputs {
    note_skipped(&mut inputs);
    listener_sets::link_listener_sets(&mut inputs);
    note_absent_parents(&mut inputs);
    listener_sets::check_set_parents(&mut inputs);
    resolve_targets(&mut inputs);
    inputs
}

/// A parentRef naming a Gateway the input does not have: the route cannot
/// be accounted for against it, so say so instead of staying silent
/// (docs/semantics.md, "Attachment"). Routes that reach a Gateway of the
/// input but none of its listeners are reported by `crate::route_parents`.
fn note_absent_parents(inputs: &mut Inputs) {
    // Borrowed: every route's parentRefs are looked up each round.
    let gateways: BTreeSet<(&str, &str)> = inputs
        .gateways
        .keys()
        .map(|k| (k.namespace.as_str(), k.name.as_str()))
        .collect();
    let mut notes = Vec::new();
    for route in inputs.all_routes() {
        for (index, parent) in route.parent_refs.iter().enumerate() {
            let key = (parent.namespace.as_str(), parent.name.as_str());
            if !parent.is_gateway() || gateways.contains(&key) {
                continue;
            }
            notes.push(
                Diagnostic::note(format!(
                    "names Gateway {}/{}, which the input does not have; not attached through it here",
                    key.0, key.1
                ))
                .at(&route.meta.origin)
                .on(route.object())
                .field(format!("spec.parentRefs[{index}]"))
                // Reads right for -f and for a live read alike.
                .hint("add that Gateway to what is read (its manifest to -f, or the Gateway to the cluster; a live read with -n sees one namespace), or check the parentRef's name and namespace"),
            );
        }
    }
    inputs.diagnostics.extend(notes);
}

fn read_doc(doc: &SourceDoc, inputs: &mut Inputs) {
    let origin = &doc.origin;
    let text = |key: &str| doc.value.get(key).and_then(|v| v.as_str());
    let (Some(api_version), Some(kind)) = (text("apiVersion"), text("kind")) else {
        inputs.diagnostics.push(
            Diagnostic::note("not a Kubernetes object (no apiVersion/kind); skipped")
                .at(origin)
                .hint("every document needs apiVersion and kind"),
        );
        return;
    };
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    match (group, kind) {
        (GATEWAY_GROUP, "GatewayClass" | "Gateway") if matches!(version, "v1" | "v1beta1") => {
            match kind {
                "GatewayClass" => read_class(doc, inputs),
                _ => read_gateway(doc, inputs),
            }
        }
        _ if route_kind(group, kind, version).is_some() => {
            if let Some(info) = route_kind(group, kind, version) {
                read_route(doc, info, inputs)
            }
        }
        _ if crate::model::SetKind::find(group, kind).is_some_and(|k| k.version() == version) => {
            if let Some(set_kind) = crate::model::SetKind::find(group, kind) {
                listener_sets::read_listener_set(doc, set_kind, inputs);
            }
        }
        ("", "Namespace") if version == "v1" => read_namespace(doc, inputs),
        _ if PolicyKind::find(group, kind).is_some() => {
            let Some(policy_kind) = PolicyKind::find(group, kind) else {
                return;
            };
            let info = policy_kind.info();
            if info.versions.contains(&version) {
                // Exhaustive: a new spec shape is a new reader, named here.
                match info.spec {
                    SpecShape::Stanzas => read_policy(doc, policy_kind, inputs),
                    SpecShape::Peer => read_peer(doc, policy_kind, inputs),
                }
            } else {
                inputs.diagnostics.push(
                    Diagnostic::error(format!(
                        "{api_version} is not a version attache reads; the {kind} is ignored"
                    ))
                    .at(origin)
                    .on(kind)
                    .field("apiVersion")
                    .hint(format!("use apiVersion: {}", policy_kind.api_version())),
                );
            }
        }
        // Read by `attache render` for backend addresses and HTTPS
        // listeners' certificates; not the resolver's business, and not
        // worth a note in every demo log.
        ("", "Service" | "Secret") | ("discovery.k8s.io", "EndpointSlice") => {}
        (GATEWAY_GROUP | POLICY_GROUP, _) if !is_known_elsewhere(group, kind) => {
            inputs
                .diagnostics
                .push(unknown_in_known_group(api_version, group, kind, origin));
        }
        _ => {
            if let Some(d) = crate::near_miss::diagnose(api_version, kind, origin) {
                return inputs.diagnostics.push(d);
            }
            let seen = inputs
                .skipped
                .entry(format!("{api_version} {kind}"))
                .or_insert((0, origin.clone()));
            seen.0 += 1;
        }
    }
}

/// Kinds of the known groups that exist but that the resolver does not read
/// (other Gateway API routes, ReferenceGrant, ...): skipped with a note like
/// any foreign object. Anything else in those groups is a typo or a version
/// the resolver cannot read, and a typo must not make a policy silently do
/// nothing (docs/semantics.md, "What a policy may not do").
fn is_known_elsewhere(group: &str, kind: &str) -> bool {
    group == GATEWAY_GROUP
        && matches!(
            kind,
            "TLSRoute"
                | "TCPRoute"
                | "UDPRoute"
                | "ReferenceGrant"
                | "BackendTLSPolicy"
                | "BackendLBPolicy"
        )
}

/// The error for a document in a group the resolver owns or reads whose kind
/// or version it does not know: an error, not a note.
fn unknown_in_known_group(
    api_version: &str,
    group: &str,
    kind: &str,
    origin: &Origin,
) -> Diagnostic {
    let policy_kinds: Vec<&str> = KINDS
        .iter()
        .filter(|k| k.group == group)
        .map(|k| k.name)
        .collect();
    let (known, versions) = if policy_kinds.is_empty() {
        (
            "GatewayClass, Gateway, HTTPRoute, GRPCRoute, ListenerSet".to_string(),
            "v1, v1beta1; GRPCRoute v1",
        )
    } else {
        (policy_kinds.join(", "), "v1alpha1")
    };
    let is_known_kind = known.split(", ").any(|k| k == kind);
    let (field, message) = if is_known_kind {
        (
            "apiVersion",
            format!("{api_version} is not a version attache reads; the {kind} is ignored"),
        )
    } else {
        (
            "kind",
            format!(
                "{kind:?} is not a kind of {group}; the object is ignored{}",
                crate::near_miss::closest(kind, &crate::near_miss::kinds_of(group), 2)
                    .map(|k| format!(" (did you mean {k}?)"))
                    .unwrap_or_default()
            ),
        )
    };
    Diagnostic::error(message)
        .at(origin)
        .on(kind)
        .field(field)
        .hint(format!(
            "{group} kinds read here: {known} (versions {versions}); check the spelling"
        ))
}

/// One note per skipped kind rather than one per object: a directory of
/// Services should not bury the messages that matter.
fn note_skipped(inputs: &mut Inputs) {
    for (what, (count, first)) in std::mem::take(&mut inputs.skipped) {
        let message = if count == 1 {
            format!("{what} is not read by the resolver; skipped")
        } else {
            format!("{count} {what} objects are not read by the resolver (first here); skipped")
        };
        inputs.diagnostics.push(Diagnostic::note(message).at(&first).hint(
            "the resolver reads GatewayClass, Gateway, HTTPRoute (gateway.networking.k8s.io v1/v1beta1), GRPCRoute (v1), \
             ListenerSet (gateway.networking.k8s.io/v1) and XListenerSet (gateway.networking.x-k8s.io/v1alpha1), \
             Namespace, RoutePolicy and ClusterRoutePolicy (policy.attache.dev/v1alpha1), kgateway's \
             TrafficPolicy and Envoy Gateway's BackendTrafficPolicy (v1alpha1)",
        ));
    }
}

/// Deserializes with the failing field's path in the error.
fn typed<T: DeserializeOwned>(doc: &SourceDoc, kind: &str) -> Result<T, Box<Diagnostic>> {
    serde_path_to_error::deserialize(&doc.value).map_err(|err| {
        let path = err.path().to_string();
        let name = doc.value.pointer("/metadata/name").and_then(|v| v.as_str());
        let ns = doc
            .value
            .pointer("/metadata/namespace")
            .and_then(|v| v.as_str());
        let object = match (ns, name) {
            (Some(ns), Some(name)) => format!("{kind} {ns}/{name}"),
            (None, Some(name)) => format!("{kind} {name}"),
            _ => kind.to_string(),
        };
        let d = Diagnostic::error(err.inner().to_string())
            .at(&doc.origin)
            .on(object)
            .hint(format!(
                "fix the field's spelling or type; the {kind} is ignored until then"
            ));
        Box::new(if path == "." { d } else { d.field(path) })
    })
}

/// Validates metadata; `namespaced` objects default to namespace `default`.
fn meta(
    raw: RawMeta,
    origin: &Origin,
    kind: &str,
    namespaced: bool,
    out: &mut Vec<Diagnostic>,
) -> Option<Meta> {
    let Some(name) = raw.name.filter(|n| !n.is_empty()) else {
        out.push(
            Diagnostic::error("metadata.name is missing")
                .at(origin)
                .on(kind)
                .field("metadata.name")
                .hint("give the object a name"),
        );
        return None;
    };
    let namespace = if namespaced {
        Some(raw.namespace.unwrap_or_else(|| "default".into()))
    } else {
        None
    };
    let object = match &namespace {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    };
    let mut priority = Priority::default();
    // Project domain first: when both are present the project's wins.
    for key in PRIORITY_KEYS.iter().rev() {
        if let Some(value) = raw.annotations.get(*key) {
            match Priority::parse(value) {
                Some(p) => priority = p,
                None => out.push(
                    Diagnostic::warning(format!(
                        "{value:?} is not a merge priority; using ShallowMergePreferChild"
                    ))
                    .at(origin)
                    .on(object.clone())
                    .field(format!("metadata.annotations[{key}]"))
                    .hint(format!("use one of {PRIORITY_VALUES}")),
                ),
            }
        }
    }
    let created = match raw.creation_timestamp {
        Some(ts) if is_timestamp(&ts) => Some(ts),
        Some(ts) => {
            out.push(
                Diagnostic::warning(format!(
                    "{ts:?} is not a Kubernetes timestamp; treated as absent (sorts first)"
                ))
                .at(origin)
                .on(object)
                .field("metadata.creationTimestamp")
                .hint("use RFC 3339 in UTC, e.g. 2024-05-01T10:00:00Z"),
            );
            None
        }
        None => None,
    };
    Some(Meta {
        origin: origin.clone(),
        name,
        namespace,
        labels: raw.labels,
        annotations: raw.annotations,
        created,
        generation: raw.generation,
        priority,
    })
}

fn duplicate(kind: &str, object: &str, first: &Origin, origin: &Origin) -> Diagnostic {
    Diagnostic::error(format!(
        "{object} is defined twice; the one in {first} is kept"
    ))
    .at(origin)
    .on(format!("{kind} {object}"))
    .hint("remove one of the two definitions")
}

fn problems_to_diagnostics(
    problems: Vec<Problem>,
    origin: &Origin,
    object: &str,
    out: &mut Vec<Diagnostic>,
) {
    for p in problems {
        out.push(
            Diagnostic::error(p.message)
                .at(origin)
                .on(object)
                .field(p.field)
                .hint(p.hint),
        );
    }
}
