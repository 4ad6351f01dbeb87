//! Reading GatewayClass, Namespace and Gateway objects.

use super::*;
use crate::model::listener_set::ListenersFrom;
use crate::model::SetRef;

pub(super) fn read_class(doc: &SourceDoc, inputs: &mut Inputs) {
    read_metadata_only(
        doc,
        inputs,
        "GatewayClass",
        |raw: RawGatewayClass| raw.metadata,
        |inputs| &mut inputs.classes,
        |meta| Arc::new(GatewayClass { meta }),
        |class| &class.meta,
    );
}

pub(super) fn read_namespace(doc: &SourceDoc, inputs: &mut Inputs) {
    read_metadata_only(
        doc,
        inputs,
        "Namespace",
        |raw: RawNamespace| raw.metadata,
        |inputs| &mut inputs.namespaces,
        |meta| Arc::new(Namespace { meta }),
        |namespace| &namespace.meta,
    );
}

/// A cluster-scoped object the resolver reads only the metadata of
/// (GatewayClass, Namespace): checked, and kept by name unless another of
/// the same name came first.
fn read_metadata_only<R: DeserializeOwned, T>(
    doc: &SourceDoc,
    inputs: &mut Inputs,
    kind: &str,
    metadata: fn(R) -> RawMeta,
    table: fn(&mut Inputs) -> &mut BTreeMap<String, T>,
    make: fn(Meta) -> T,
    meta_of: fn(&T) -> &Meta,
) {
    let raw: R = match typed(doc, kind) {
        Ok(raw) => raw,
        Err(d) => return inputs.diagnostics.push(*d),
    };
    let Some(meta) = meta(
        metadata(raw),
        &doc.origin,
        kind,
        false,
        &mut inputs.diagnostics,
    ) else {
        return;
    };
    if let Some(first) = table(inputs).get(&meta.name) {
        let d = duplicate(kind, &meta.name, &meta_of(first).origin, &doc.origin);
        return inputs.diagnostics.push(d);
    }
    table(inputs).insert(meta.name.clone(), make(meta));
}

pub(super) fn read_gateway(doc: &SourceDoc, inputs: &mut Inputs) {
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
    let listeners = read_listeners(
        raw.spec.listeners,
        None,
        Some(&key.namespace),
        &mut problems,
    );
    let allowed_listeners = allowed_listeners(raw.spec.allowed_listeners, &object, doc, inputs);
    if !problems.is_empty() {
        return problems_to_diagnostics(problems, &doc.origin, &object, &mut inputs.diagnostics);
    }
    if let Some(first) = inputs.gateways.get(&key) {
        let d = duplicate("Gateway", &key.to_string(), &first.meta.origin, &doc.origin);
        return inputs.diagnostics.push(d);
    }
    inputs.gateways.insert(
        key.clone(),
        Arc::new(Gateway {
            meta,
            key,
            class: raw.spec.gateway_class_name,
            listeners,
            allowed_listeners,
            conflicted: Vec::new(),
        }),
    );
}

/// The listeners of a Gateway (`set` None) or of a ListenerSet: names are
/// SectionNames, unique within the object; a problem drops the listener
/// (and the caller drops the object).
pub(super) fn read_listeners(
    raw: Vec<crate::model::gateway::RawListener>,
    set: Option<&SetRef>,
    // The Gateway's namespace, where its listeners' Secrets live.
    namespace: Option<&str>,
    problems: &mut Vec<Problem>,
) -> Vec<Listener> {
    let mut listeners: Vec<Listener> = Vec::new();
    for (i, l) in raw.into_iter().enumerate() {
        let path = format!("spec.listeners[{i}]");
        // A Gateway API SectionName; the renderer turns it into a file name
        // (`rds/<listener>/routes.json`), so `../x` must never get that far.
        if let Some(reason) = crate::dns_name::subdomain_problem(&l.name) {
            problems.push(Problem {
                field: format!("{path}.name"),
                message: format!("listener name {:?} is not a Gateway API SectionName: {reason}", l.name),
                hint: "use lower-case letters, digits, '-' and '.' (an RFC 1123 subdomain such as http or api.v1), at most 253 characters".into(),
            });
            continue;
        }
        if listeners.iter().any(|seen| seen.name == l.name) {
            problems.push(Problem {
                field: format!("{path}.name"),
                message: format!("listener name {:?} is used twice", l.name),
                hint: match set {
                    Some(_) => "give every listener of a ListenerSet a distinct name",
                    None => "give every listener of a Gateway a distinct name",
                }
                .into(),
            });
            continue;
        }
        // Only an XListenerSet may leave the port out (v1.4's dynamic
        // port); the caller notes it. Port 0 then stands for "none".
        let port = match (l.port, set) {
            (Some(port), _) => port,
            (None, Some(s)) if s.kind == crate::model::SetKind::XListenerSet => 0,
            (None, _) => {
                problems.push(Problem {
                    field: format!("{path}.port"),
                    message: "port is missing".into(),
                    hint: "give the listener a port (1-65535)".into(),
                });
                continue;
            }
        };
        let Some(allowed) = allowed_routes(l.allowed_routes, &path, problems) else {
            continue;
        };
        let tls = match (l.tls, set, namespace) {
            (Some(raw), None, Some(ns)) => match listener_tls(raw, ns, &path, problems) {
                Some(tls) => Some(tls),
                None => continue,
            },
            _ => None,
        };
        listeners.push(Listener {
            name: l.name,
            port,
            protocol: l.protocol,
            hostname: l.hostname.map(|h| h.to_ascii_lowercase()),
            allowed,
            set: set.cloned(),
            tls,
        });
    }
    listeners
}

/// A Gateway listener's `tls`: mode `Terminate` (the default) with Secrets
/// of the Gateway's own namespace. Another namespace needs a ReferenceGrant,
/// which the resolver does not read, so it is refused rather than followed.
fn listener_tls(
    raw: crate::model::gateway::RawListenerTls,
    namespace: &str,
    path: &str,
    problems: &mut Vec<Problem>,
) -> Option<crate::topology::ListenerTls> {
    let before = problems.len();
    if let Some(mode) = raw.mode.as_deref().filter(|m| *m != "Terminate") {
        problems.push(Problem {
            field: format!("{path}.tls.mode"),
            message: format!("mode {mode:?} is not served: Attaché terminates TLS"),
            hint: "use mode Terminate (the default), or serve TLS passthrough with another Gateway"
                .into(),
        });
    }
    let mut certificate_refs = Vec::new();
    for (i, r) in raw.certificate_refs.into_iter().enumerate() {
        let field = format!("{path}.tls.certificateRefs[{i}]");
        let (group, kind) = (
            r.group.unwrap_or_default(),
            r.kind.unwrap_or("Secret".into()),
        );
        if !group.is_empty() || kind != "Secret" {
            problems.push(Problem {
                field: format!("{field}.kind"),
                message: format!("{kind} of group {group:?} is not a certificate source"),
                hint: "name a kubernetes.io/tls Secret (group \"\", kind Secret)".into(),
            });
            continue;
        }
        let ns = r.namespace.unwrap_or_else(|| namespace.to_string());
        if ns != namespace {
            problems.push(Problem {
                field: format!("{field}.namespace"),
                message: format!(
                    "Secret {ns}/{} is in another namespace than the Gateway",
                    r.name
                ),
                hint: "put the Secret in the Gateway's namespace (a ReferenceGrant is not read)"
                    .into(),
            });
            continue;
        }
        certificate_refs.push(ObjectKey {
            namespace: ns,
            name: r.name,
        });
    }
    if certificate_refs.is_empty() && problems.len() == before {
        problems.push(Problem {
            field: format!("{path}.tls.certificateRefs"),
            message: "no certificate to terminate TLS with".into(),
            hint: "name the listener's kubernetes.io/tls Secret in certificateRefs".into(),
        });
    }
    (problems.len() == before).then_some(crate::topology::ListenerTls { certificate_refs })
}

/// A Gateway's `allowedListeners` (default: none); `Selector` without a
/// selector admits none and is an error on the Gateway, which is kept.
fn allowed_listeners(
    raw: Option<crate::model::listener_set::RawAllowedListeners>,
    object: &str,
    doc: &SourceDoc,
    inputs: &mut Inputs,
) -> ListenersFrom {
    use crate::model::listener_set::RawListenersFrom as From;
    let Some(ns) = raw.and_then(|r| r.namespaces) else {
        return ListenersFrom::None;
    };
    match (ns.from.unwrap_or(From::None), ns.selector) {
        (From::None, _) => ListenersFrom::None,
        (From::Same, _) => ListenersFrom::Same,
        (From::All, _) => ListenersFrom::All,
        (From::Selector, Some(sel)) => ListenersFrom::Selector(sel),
        (From::Selector, None) => {
            inputs.diagnostics.push(
                Diagnostic::error("from: Selector needs a selector; no ListenerSet is taken")
                    .at(&doc.origin)
                    .on(object)
                    .field("spec.allowedListeners.namespaces.selector")
                    .hint(
                        "add selector.matchLabels (or matchExpressions), or use from: Same / All",
                    ),
            );
            ListenersFrom::None
        }
    }
}

/// A listener's `allowedRoutes`, with Gateway API's defaults (namespaces
/// from Same); `None` (with a problem) when it cannot be used.
fn allowed_routes(
    raw: Option<crate::model::gateway::RawAllowedRoutes>,
    path: &str,
    problems: &mut Vec<Problem>,
) -> Option<AllowedRoutes> {
    let allowed = raw.unwrap_or(crate::model::gateway::RawAllowedRoutes {
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
            return None;
        }
    };
    let kinds = allowed.kinds.map(|kinds| {
        kinds
            .into_iter()
            .map(|k| (k.group.unwrap_or_else(|| GATEWAY_GROUP.into()), k.kind))
            .collect()
    });
    Some(AllowedRoutes { from, kinds })
}
