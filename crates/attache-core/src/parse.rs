//! From [`SourceDoc`]s to the validated model ([`Inputs`]). Every problem
//! becomes a [`Diagnostic`] naming file, document, object and field; a bad
//! object is dropped (policies are kept as invalid for status) and never
//! stops the others from being read.

use std::collections::{BTreeMap, BTreeSet};

use serde::de::DeserializeOwned;

use crate::contract::{HttpRouteMatch, PathMatch, PathMatchType};
use crate::diagnostic::Diagnostic;
use crate::field::{Direction, FieldMap};
use crate::model::gateway::{RawFrom, RawGateway, RawGatewayClass, RawNamespace};
use crate::model::meta::{is_timestamp, RawMeta, PRIORITY_KEYS, PRIORITY_VALUES, WEIGHT_KEY};
use crate::model::policy::{RawPolicy, RawTargetRef, POLICY_GROUP};
use crate::model::route::{RawHttpRoute, RawRule, GATEWAY_GROUP};
use crate::model::{
    AllowedRoutes, Gateway, GatewayClass, HttpRoute, Listener, Meta, Namespace, NamespaceFrom,
    ParentRef, Policy, PolicyKind, Priority, Rule, Target, TargetRef,
};
use crate::settings::{self, Problem};
use crate::source::{Origin, SourceDoc};
use crate::topology::{BackendTarget, ObjectKey};

/// Everything the resolver read, validated and indexed.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    pub classes: BTreeMap<String, GatewayClass>,
    pub namespaces: BTreeMap<String, Namespace>,
    pub gateways: BTreeMap<ObjectKey, Gateway>,
    pub routes: BTreeMap<ObjectKey, HttpRoute>,
    /// Sorted by kind, namespace, name; invalid ones included.
    pub policies: Vec<Policy>,
    /// Valid policies by the target they attach to, in precedence order.
    pub by_target: BTreeMap<Target, Vec<usize>>,
    /// Everything noticed while reading, in input order.
    pub diagnostics: Vec<Diagnostic>,
    /// Reading-time index of `policies` for duplicate detection (stale
    /// after the final sort, which is why it is private).
    policy_ids: std::collections::HashMap<(PolicyKind, Option<String>, String), usize>,
    /// `apiVersion kind` not read, with count and first origin.
    skipped: BTreeMap<String, (usize, Origin)>,
}

impl Inputs {
    /// The priority annotation of a target object (default when the object
    /// has no manifest, e.g. a Namespace only implied by its contents).
    pub fn priority_of(&self, target: &Target) -> Priority {
        match target {
            Target::GatewayClass(name) => self.classes.get(name).map(|c| c.meta.priority),
            Target::Namespace(name) => self.namespaces.get(name).map(|n| n.meta.priority),
            Target::Gateway(key, _) => self.gateways.get(key).map(|g| g.meta.priority),
            Target::Route(key, _) => self.routes.get(key).map(|r| r.meta.priority),
        }
        .unwrap_or_default()
    }

    /// Labels of a namespace as a selector sees them: the manifest's labels
    /// plus `kubernetes.io/metadata.name`, which Kubernetes always sets.
    pub fn namespace_labels(&self, name: &str) -> BTreeMap<String, String> {
        let mut labels = self
            .namespaces
            .get(name)
            .map(|n| n.meta.labels.clone())
            .unwrap_or_default();
        labels.insert("kubernetes.io/metadata.name".into(), name.to_string());
        labels
    }
}

/// Reads every document. Never fails: problems are in `Inputs::diagnostics`.
pub fn parse(docs: &[SourceDoc]) -> Inputs {
    let mut inputs = Inputs::default();
    for doc in docs {
        read_doc(doc, &mut inputs);
    }
    note_skipped(&mut inputs);
    resolve_targets(&mut inputs);
    inputs
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
        (GATEWAY_GROUP, "GatewayClass" | "Gateway" | "HTTPRoute")
            if matches!(version, "v1" | "v1beta1") =>
        {
            match kind {
                "GatewayClass" => read_class(doc, inputs),
                "Gateway" => read_gateway(doc, inputs),
                _ => read_route(doc, inputs),
            }
        }
        ("", "Namespace") if version == "v1" => read_namespace(doc, inputs),
        (POLICY_GROUP, "RoutePolicy" | "ClusterRoutePolicy") => {
            if version == "v1alpha1" {
                let kind = if kind == "RoutePolicy" {
                    PolicyKind::RoutePolicy
                } else {
                    PolicyKind::ClusterRoutePolicy
                };
                read_policy(doc, kind, inputs);
            } else {
                inputs.diagnostics.push(
                    Diagnostic::error(format!(
                        "{api_version} is not a version attache reads; the {kind} is ignored"
                    ))
                    .at(origin)
                    .on(kind)
                    .field("apiVersion")
                    .hint(format!("use apiVersion: {POLICY_GROUP}/v1alpha1")),
                );
            }
        }
        // Read by `attache render` for backend addresses; not the resolver's
        // business, and not worth a note in every demo log.
        ("", "Service") | ("discovery.k8s.io", "EndpointSlice") => {}
        _ => {
            let seen = inputs
                .skipped
                .entry(format!("{api_version} {kind}"))
                .or_insert((0, origin.clone()));
            seen.0 += 1;
        }
    }
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
            "the resolver reads GatewayClass, Gateway, HTTPRoute (gateway.networking.k8s.io v1/v1beta1), \
             Namespace, RoutePolicy and ClusterRoutePolicy (policy.attache.dev/v1alpha1)",
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

fn read_class(doc: &SourceDoc, inputs: &mut Inputs) {
    let raw: RawGatewayClass = match typed(doc, "GatewayClass") {
        Ok(raw) => raw,
        Err(d) => return inputs.diagnostics.push(*d),
    };
    let Some(meta) = meta(
        raw.metadata,
        &doc.origin,
        "GatewayClass",
        false,
        &mut inputs.diagnostics,
    ) else {
        return;
    };
    if let Some(first) = inputs.classes.get(&meta.name) {
        let d = duplicate("GatewayClass", &meta.name, &first.meta.origin, &doc.origin);
        return inputs.diagnostics.push(d);
    }
    inputs
        .classes
        .insert(meta.name.clone(), GatewayClass { meta });
}

fn read_namespace(doc: &SourceDoc, inputs: &mut Inputs) {
    let raw: RawNamespace = match typed(doc, "Namespace") {
        Ok(raw) => raw,
        Err(d) => return inputs.diagnostics.push(*d),
    };
    let Some(meta) = meta(
        raw.metadata,
        &doc.origin,
        "Namespace",
        false,
        &mut inputs.diagnostics,
    ) else {
        return;
    };
    if let Some(first) = inputs.namespaces.get(&meta.name) {
        let d = duplicate("Namespace", &meta.name, &first.meta.origin, &doc.origin);
        return inputs.diagnostics.push(d);
    }
    inputs
        .namespaces
        .insert(meta.name.clone(), Namespace { meta });
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

fn read_gateway(doc: &SourceDoc, inputs: &mut Inputs) {
    let raw: RawGateway = match typed(doc, "Gateway") {
        Ok(raw) => raw,
        Err(d) => return inputs.diagnostics.push(*d),
    };
    let Some(meta) = meta(
        raw.metadata,
        &doc.origin,
        "Gateway",
        true,
        &mut inputs.diagnostics,
    ) else {
        return;
    };
    let key = ObjectKey {
        namespace: meta.namespace.clone().unwrap_or_default(),
        name: meta.name.clone(),
    };
    let object = format!("Gateway {key}");
    let mut problems = Vec::new();
    let mut listeners: Vec<Listener> = Vec::new();
    for (i, l) in raw.spec.listeners.into_iter().enumerate() {
        let path = format!("spec.listeners[{i}]");
        if listeners.iter().any(|seen| seen.name == l.name) {
            problems.push(Problem {
                field: format!("{path}.name"),
                message: format!("listener name {:?} is used twice", l.name),
                hint: "give every listener of a Gateway a distinct name".into(),
            });
            continue;
        }
        let allowed = l
            .allowed_routes
            .unwrap_or(crate::model::gateway::RawAllowedRoutes {
                namespaces: None,
                kinds: None,
            });
        let (from, selector) = match allowed.namespaces {
            Some(ns) => (ns.from.unwrap_or(RawFrom::Same), ns.selector),
            None => (RawFrom::Same, None),
        };
        let from = match (from, selector) {
            (RawFrom::Same, _) => NamespaceFrom::Same,
            (RawFrom::All, _) => NamespaceFrom::All,
            (RawFrom::Selector, Some(sel)) => NamespaceFrom::Selector(sel),
            (RawFrom::Selector, None) => {
                problems.push(Problem {
                    field: format!("{path}.allowedRoutes.namespaces.selector"),
                    message: "from: Selector needs a selector".into(),
                    hint: "add selector.matchLabels (or matchExpressions), or use from: Same / All"
                        .into(),
                });
                continue;
            }
        };
        let kinds = allowed.kinds.map(|kinds| {
            kinds
                .into_iter()
                .map(|k| (k.group.unwrap_or_else(|| GATEWAY_GROUP.into()), k.kind))
                .collect()
        });
        listeners.push(Listener {
            name: l.name,
            port: l.port,
            protocol: l.protocol,
            hostname: l.hostname.map(|h| h.to_ascii_lowercase()),
            allowed: AllowedRoutes { from, kinds },
        });
    }
    if !problems.is_empty() {
        return problems_to_diagnostics(problems, &doc.origin, &object, &mut inputs.diagnostics);
    }
    if let Some(first) = inputs.gateways.get(&key) {
        let d = duplicate("Gateway", &key.to_string(), &first.meta.origin, &doc.origin);
        return inputs.diagnostics.push(d);
    }
    inputs.gateways.insert(
        key.clone(),
        Gateway {
            meta,
            key,
            class: raw.spec.gateway_class_name,
            listeners,
        },
    );
}

fn read_route(doc: &SourceDoc, inputs: &mut Inputs) {
    let raw: RawHttpRoute = match typed(doc, "HTTPRoute") {
        Ok(raw) => raw,
        Err(d) => return inputs.diagnostics.push(*d),
    };
    let Some(meta) = meta(
        raw.metadata,
        &doc.origin,
        "HTTPRoute",
        true,
        &mut inputs.diagnostics,
    ) else {
        return;
    };
    let ns = meta.namespace.clone().unwrap_or_default();
    let key = ObjectKey {
        namespace: ns.clone(),
        name: meta.name.clone(),
    };
    let object = format!("HTTPRoute {key}");
    let parent_refs = raw
        .spec
        .parent_refs
        .into_iter()
        .map(|p| ParentRef {
            group: p.group.unwrap_or_else(|| GATEWAY_GROUP.into()),
            kind: p.kind.unwrap_or_else(|| "Gateway".into()),
            namespace: p.namespace.unwrap_or_else(|| ns.clone()),
            name: p.name,
            section_name: p.section_name,
            port: p.port,
        })
        .collect();
    let mut problems = Vec::new();
    let mut rules: Vec<Rule> = Vec::new();
    for (index, raw_rule) in raw.spec.rules.into_iter().enumerate() {
        if let Some(name) = &raw_rule.name {
            if rules.iter().any(|r| r.name.as_ref() == Some(name)) {
                problems.push(Problem {
                    field: format!("spec.rules[{index}].name"),
                    message: format!("rule name {name:?} is used twice"),
                    hint: "give every rule of a route a distinct name".into(),
                });
            }
        }
        rules.push(read_rule(
            raw_rule,
            index,
            &ns,
            &object,
            doc,
            &mut problems,
            &mut inputs.diagnostics,
        ));
    }
    if !problems.is_empty() {
        return problems_to_diagnostics(problems, &doc.origin, &object, &mut inputs.diagnostics);
    }
    if let Some(first) = inputs.routes.get(&key) {
        let d = duplicate(
            "HTTPRoute",
            &key.to_string(),
            &first.meta.origin,
            &doc.origin,
        );
        return inputs.diagnostics.push(d);
    }
    let hostnames = raw
        .spec
        .hostnames
        .iter()
        .map(|h| h.to_ascii_lowercase())
        .collect();
    inputs.routes.insert(
        key.clone(),
        HttpRoute {
            meta,
            key,
            parent_refs,
            hostnames,
            rules,
        },
    );
}

fn read_rule(
    raw: RawRule,
    index: usize,
    ns: &str,
    object: &str,
    doc: &SourceDoc,
    problems: &mut Vec<Problem>,
    notes: &mut Vec<Diagnostic>,
) -> Rule {
    let path = format!("spec.rules[{index}]");
    let mut inline = FieldMap::new();
    if let Some(t) = &raw.timeouts {
        settings::timeouts(t, &format!("{path}.timeouts"), &mut inline, problems);
    }
    if let Some(r) = &raw.retry {
        settings::retry(r, &format!("{path}.retry"), &mut inline, problems);
    }
    let mut seen_request = false;
    let mut seen_response = false;
    for (i, filter) in raw.filters.iter().enumerate() {
        let at = format!("{path}.filters[{i}]");
        let (direction, modifier, seen, field) = match filter.kind.as_str() {
            "RequestHeaderModifier" => (
                Direction::Request,
                &filter.request_header_modifier,
                &mut seen_request,
                "requestHeaderModifier",
            ),
            "ResponseHeaderModifier" => (
                Direction::Response,
                &filter.response_header_modifier,
                &mut seen_response,
                "responseHeaderModifier",
            ),
            other => {
                notes.push(
                    Diagnostic::note(format!(
                        "filter type {other} is not applied by attache; ignored"
                    ))
                    .at(&doc.origin)
                    .on(object)
                    .field(format!("{at}.type")),
                );
                continue;
            }
        };
        if *seen {
            problems.push(Problem {
                field: format!("{at}.type"),
                message: format!("a rule may have only one {} filter", filter.kind),
                hint: "merge the two filters into one".into(),
            });
            continue;
        }
        *seen = true;
        match modifier {
            Some(m) => settings::header_modifier(
                m,
                direction,
                &format!("{at}.{field}"),
                &mut inline,
                problems,
            ),
            None => problems.push(Problem {
                field: format!("{at}.{field}"),
                message: format!("type {} needs its {field} field", filter.kind),
                hint: format!("add {field}: {{set: [...], add: [...], remove: [...]}}"),
            }),
        }
    }
    let mut delegates = Vec::new();
    let mut backends = Vec::new();
    for (i, b) in raw.backend_refs.into_iter().enumerate() {
        let group = b.group.unwrap_or_default();
        let kind = b.kind.unwrap_or_else(|| "Service".into());
        let namespace = b.namespace.unwrap_or_else(|| ns.to_string());
        match (group.as_str(), kind.as_str()) {
            (GATEWAY_GROUP, "HTTPRoute") => delegates.push(ObjectKey {
                namespace,
                name: b.name,
            }),
            ("" | "core", "Service") => backends.push(BackendTarget {
                namespace,
                name: b.name,
                port: b.port,
                weight: b.weight.unwrap_or(1),
            }),
            _ => notes.push(
                Diagnostic::warning(format!(
                    "backend kind {group}/{kind} is not supported; ignored"
                ))
                .at(&doc.origin)
                .on(object)
                .field(format!("{path}.backendRefs[{i}]"))
                .hint(
                    "use a Service, or an HTTPRoute (group gateway.networking.k8s.io) to delegate",
                ),
            ),
        }
    }
    if !delegates.is_empty() && !backends.is_empty() {
        notes.push(
            Diagnostic::warning(
                "rule both delegates to HTTPRoutes and names Services; the Services are ignored",
            )
            .at(&doc.origin)
            .on(object)
            .field(format!("{path}.backendRefs"))
            .hint("move the Services into a child route"),
        );
        backends.clear();
    }
    Rule {
        index,
        name: raw.name,
        matches: normalise_matches(raw.matches),
        inline,
        delegates,
        backends,
    }
}

/// Gateway API defaults: no matches means one `PathPrefix /` match; a match
/// without a path gets `PathPrefix /`.
fn normalise_matches(matches: Vec<HttpRouteMatch>) -> Vec<HttpRouteMatch> {
    let root = || PathMatch {
        kind: PathMatchType::PathPrefix,
        value: "/".into(),
    };
    if matches.is_empty() {
        return vec![HttpRouteMatch {
            path: Some(root()),
            ..HttpRouteMatch::default()
        }];
    }
    matches
        .into_iter()
        .map(|mut m| {
            if m.path.is_none() {
                m.path = Some(root());
            }
            m
        })
        .collect()
}

fn read_policy(doc: &SourceDoc, kind: PolicyKind, inputs: &mut Inputs) {
    let kind_name = kind.to_string();
    let namespaced = kind == PolicyKind::RoutePolicy;
    let raw: RawPolicy = match typed(doc, &kind_name) {
        Ok(raw) => raw,
        Err(d) => {
            // Keep a named policy as invalid so that status reports it.
            let raw_meta = doc
                .value
                .get("metadata")
                .and_then(|m| serde_json::from_value::<RawMeta>(m.clone()).ok())
                .unwrap_or_default();
            let reason = d.to_string();
            inputs.diagnostics.push(*d);
            if let Some(meta) = meta(
                raw_meta,
                &doc.origin,
                &kind_name,
                namespaced,
                &mut Vec::new(),
            ) {
                push_policy(inputs, invalid_policy(kind, meta, reason));
            }
            return;
        }
    };
    if !namespaced && raw.metadata.namespace.is_some() {
        inputs.diagnostics.push(
            Diagnostic::warning(
                "a ClusterRoutePolicy is cluster-scoped; metadata.namespace is ignored",
            )
            .at(&doc.origin)
            .on(format!(
                "{kind_name} {}",
                raw.metadata.name.clone().unwrap_or_default()
            ))
            .field("metadata.namespace")
            .hint("remove metadata.namespace, or use a RoutePolicy"),
        );
    }
    let Some(meta) = meta(
        raw.metadata,
        &doc.origin,
        &kind_name,
        namespaced,
        &mut inputs.diagnostics,
    ) else {
        return;
    };
    let mut policy = Policy {
        kind,
        weight: 0,
        targets: Vec::new(),
        defaults: None,
        overrides: None,
        plain: None,
        invalid: Vec::new(),
        meta,
    };
    let object = policy.display_name();
    let origin = doc.origin.clone();
    if let Some(text) = policy.meta.annotations.get(WEIGHT_KEY) {
        match text.trim().parse::<i64>() {
            Ok(w) => policy.weight = w,
            Err(_) => inputs.diagnostics.push(
                Diagnostic::warning(format!("{text:?} is not an integer; weight 0 is used"))
                    .at(&origin)
                    .on(object.clone())
                    .field(format!("metadata.annotations[{WEIGHT_KEY}]"))
                    .hint("use an integer such as \"10\"; higher wins inside a level"),
            ),
        }
    }
    let spec = raw.spec;
    let mut problems = Vec::new();
    let plain = spec.plain();
    if plain.is_some() && (spec.defaults.is_some() || spec.overrides.is_some()) {
        problems.push(Problem {
            field: "spec".into(),
            message: "settings directly under spec are mixed with a defaults/overrides stanza".into(),
            hint: "put every setting under spec.defaults / spec.overrides, or none (plain settings follow the \
                   inherited-policy-priority annotation)"
                .into(),
        });
    }
    policy.defaults = spec
        .defaults
        .as_ref()
        .map(|s| settings::settings(s, "spec.defaults", &mut problems));
    policy.overrides = spec
        .overrides
        .as_ref()
        .map(|s| settings::settings(s, "spec.overrides", &mut problems));
    policy.plain = plain
        .as_ref()
        .map(|s| settings::settings(s, "spec", &mut problems));
    let refs: Vec<(String, RawTargetRef)> = match (spec.target_ref, spec.target_refs) {
        (Some(one), None) => vec![("spec.targetRef".into(), one)],
        (None, Some(many)) => many
            .into_iter()
            .enumerate()
            .map(|(i, r)| (format!("spec.targetRefs[{i}]"), r))
            .collect(),
        (Some(one), Some(many)) => std::iter::once(("spec.targetRef".to_string(), one))
            .chain(
                many.into_iter()
                    .enumerate()
                    .map(|(i, r)| (format!("spec.targetRefs[{i}]"), r)),
            )
            .collect(),
        (None, None) => Vec::new(),
    };
    if refs.is_empty() {
        problems.push(Problem {
            field: "spec.targetRefs".into(),
            message: "the policy targets nothing".into(),
            hint: "add targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: ...}]"
                .into(),
        });
    }
    for (path, r) in refs {
        match target_of(&policy, &r, &path) {
            Ok(target) => policy.targets.push(TargetRef {
                group: r.group,
                kind: r.kind,
                name: r.name,
                section_name: r.section_name,
                path,
                resolved: Some(target),
            }),
            Err(p) => problems.push(p),
        }
    }
    if !problems.is_empty() {
        for p in &problems {
            policy.invalid.push(format!("{}: {}", p.field, p.message));
        }
        problems_to_diagnostics(problems, &origin, &object, &mut inputs.diagnostics);
    }
    push_policy(inputs, policy);
}

fn invalid_policy(kind: PolicyKind, meta: Meta, reason: String) -> Policy {
    Policy {
        kind,
        meta,
        weight: 0,
        targets: Vec::new(),
        defaults: None,
        overrides: None,
        plain: None,
        invalid: vec![reason],
    }
}

fn push_policy(inputs: &mut Inputs, policy: Policy) {
    let same = |p: &Policy| {
        p.kind == policy.kind
            && p.meta.namespace == policy.meta.namespace
            && p.meta.name == policy.meta.name
    };
    let id = (
        policy.kind,
        policy.meta.namespace.clone(),
        policy.meta.name.clone(),
    );
    if let Some(first) = inputs
        .policy_ids
        .get(&id)
        .and_then(|i| inputs.policies.get(*i))
        .filter(|p| same(p))
    {
        let name = match &policy.meta.namespace {
            Some(ns) => format!("{ns}/{}", policy.meta.name),
            None => policy.meta.name.clone(),
        };
        let d = duplicate(
            &policy.kind.to_string(),
            &name,
            &first.meta.origin,
            &policy.meta.origin,
        );
        inputs.diagnostics.push(d);
        return;
    }
    inputs.policy_ids.insert(id, inputs.policies.len());
    inputs.policies.push(policy);
}

/// What a targetRef may name: a policy acts only inside its own namespace,
/// and only a ClusterRoutePolicy reaches the cluster-scoped GatewayClass.
fn target_of(policy: &Policy, r: &RawTargetRef, path: &str) -> Result<Target, Problem> {
    let problem = |field: &str, message: String, hint: &str| Problem {
        field: format!("{path}{field}"),
        message,
        hint: hint.to_string(),
    };
    let own_ns = policy.meta.namespace.clone();
    let cluster = policy.kind == PolicyKind::ClusterRoutePolicy;
    if r.section_name.is_some() && matches!(r.kind.as_str(), "GatewayClass" | "Namespace") {
        return Err(problem(
            ".sectionName",
            format!("a {} has no sections", r.kind),
            "remove sectionName (it names a Gateway listener or an HTTPRoute rule)",
        ));
    }
    let expect_group = |group: &str| {
        if r.group == group {
            Ok(())
        } else {
            Err(problem(
                ".group",
                format!("{:?} is not the group of {}", r.group, r.kind),
                &format!("use group: {:?}", group),
            ))
        }
    };
    match r.kind.as_str() {
        "GatewayClass" => {
            expect_group(GATEWAY_GROUP)?;
            if !cluster {
                return Err(problem(
                    ".kind",
                    "a RoutePolicy cannot target a GatewayClass (a cluster-scoped object)".into(),
                    "use a ClusterRoutePolicy for GatewayClass targets",
                ));
            }
            Ok(Target::GatewayClass(r.name.clone()))
        }
        "Namespace" => {
            expect_group("")?;
            if let Some(ns) = &own_ns {
                if *ns != r.name {
                    return Err(problem(
                        ".name",
                        format!("a RoutePolicy in namespace {ns} cannot target Namespace {}", r.name),
                        "policies act only inside their own namespace; create the policy in that namespace, or use a \
                         ClusterRoutePolicy",
                    ));
                }
            }
            Ok(Target::Namespace(r.name.clone()))
        }
        "Gateway" | "HTTPRoute" => {
            expect_group(GATEWAY_GROUP)?;
            let Some(ns) = own_ns else {
                return Err(problem(
                    ".kind",
                    format!("a ClusterRoutePolicy cannot target a {} (a namespaced object)", r.kind),
                    "use a RoutePolicy in the target's namespace",
                ));
            };
            if let Some(target_ns) = &r.namespace {
                if *target_ns != ns {
                    return Err(problem(
                        ".namespace",
                        format!("cross-namespace target {target_ns}/{} from a policy in {ns}", r.name),
                        "policies act only inside their own namespace; create the policy in the target's namespace",
                    ));
                }
            }
            let key = ObjectKey { namespace: ns, name: r.name.clone() };
            Ok(if r.kind == "Gateway" {
                Target::Gateway(key, r.section_name.clone())
            } else {
                Target::Route(key, r.section_name.clone())
            })
        }
        other => Err(problem(
            ".kind",
            format!("{other:?} cannot be targeted"),
            "target a GatewayClass (ClusterRoutePolicy only), Namespace, Gateway (sectionName = listener) or \
             HTTPRoute (sectionName = rule name)",
        )),
    }
}

/// Checks that each target exists, then indexes valid policies by target
/// in precedence order.
fn resolve_targets(inputs: &mut Inputs) {
    inputs.policies.sort_by(|a, b| {
        (a.kind, &a.meta.namespace, &a.meta.name).cmp(&(b.kind, &b.meta.namespace, &b.meta.name))
    });
    let namespaces_in_use: BTreeSet<&str> = inputs
        .gateways
        .keys()
        .chain(inputs.routes.keys())
        .map(|k| k.namespace.as_str())
        .chain(inputs.namespaces.keys().map(String::as_str))
        .collect();
    let mut missing = Vec::new();
    let mut by_target: BTreeMap<Target, Vec<usize>> = BTreeMap::new();
    for (index, policy) in inputs.policies.iter_mut().enumerate() {
        if !policy.is_valid() {
            continue;
        }
        let (display, origin) = (policy.display_name(), policy.meta.origin.clone());
        for tr in policy.targets.iter_mut() {
            let Some(target) = tr.resolved.clone() else {
                continue;
            };
            let found: Result<(), String> = match &target {
                Target::GatewayClass(name) => inputs
                    .classes
                    .contains_key(name)
                    .then_some(())
                    .ok_or_else(|| {
                        format!(
                            "known GatewayClasses: {}",
                            list(inputs.classes.keys().map(String::as_str))
                        )
                    }),
                Target::Namespace(name) => namespaces_in_use
                    .contains(name.as_str())
                    .then_some(())
                    .ok_or_else(|| {
                        "no Namespace manifest and no Gateway or HTTPRoute lives there".into()
                    }),
                Target::Gateway(key, section) => match inputs.gateways.get(key) {
                    None => Err(format!(
                        "Gateways in {}: {}",
                        key.namespace,
                        list(
                            inputs
                                .gateways
                                .keys()
                                .filter(|k| k.namespace == key.namespace)
                                .map(|k| k.name.as_str())
                        )
                    )),
                    Some(g) => match section {
                        Some(s) if !g.listeners.iter().any(|l| &l.name == s) => Err(format!(
                            "listeners of Gateway {key}: {}",
                            list(g.listeners.iter().map(|l| l.name.as_str()))
                        )),
                        _ => Ok(()),
                    },
                },
                Target::Route(key, section) => match inputs.routes.get(key) {
                    None => Err(format!(
                        "HTTPRoutes in {}: {}",
                        key.namespace,
                        list(
                            inputs
                                .routes
                                .keys()
                                .filter(|k| k.namespace == key.namespace)
                                .map(|k| k.name.as_str())
                        )
                    )),
                    Some(r) => match section {
                        Some(s) if !r.rules.iter().any(|rule| rule.name.as_ref() == Some(s)) => {
                            Err(format!(
                                "named rules of HTTPRoute {key}: {}",
                                list(r.rules.iter().filter_map(|rule| rule.name.as_deref()))
                            ))
                        }
                        _ => Ok(()),
                    },
                },
            };
            match found {
                Ok(()) => by_target.entry(target).or_default().push(index),
                Err(hint) => {
                    missing.push(
                        Diagnostic::warning(format!(
                            "target {target} does not exist (TargetNotFound)"
                        ))
                        .at(&origin)
                        .on(display.clone())
                        .field(tr.path.clone())
                        .hint(hint),
                    );
                    tr.resolved = None;
                }
            }
        }
    }
    let policies = &inputs.policies;
    for list in by_target.values_mut() {
        list.sort_by(|a, b| {
            policies
                .get(*a)
                .map(Policy::rank_key)
                .cmp(&policies.get(*b).map(Policy::rank_key))
        });
    }
    inputs.by_target = by_target;
    inputs.diagnostics.extend(missing);
}

fn list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}
