//! Reading HTTPRoutes and GRPCRoutes: parent refs, rules, inline settings,
//! delegation and backends. A GRPCRoute is read into the HTTPRoute shape
//! (`RawGrpcRule::into_http`): its method matches stay method matches in
//! the entry, and stand for paths (`attache_contract::grpc`).

use super::*;
use crate::contract::route_syntax::{self, RegexProblem};
use crate::model::kinds::{RouteKind, RouteKindInfo};
use crate::model::route::RawGrpcRoute;
use crate::re2_program;

/// One route as read, whatever its kind.
struct RawRoute {
    metadata: RawMeta,
    parent_refs: Vec<RawParentRef>,
    hostnames: Vec<String>,
    rules: Vec<RawRule>,
}

pub(super) fn read_route(doc: &SourceDoc, info: &'static RouteKindInfo, inputs: &mut Inputs) {
    let raw = match info.kind {
        RouteKind::Http => typed::<RawHttpRoute>(doc, info.name).map(|r| RawRoute {
            metadata: r.metadata,
            parent_refs: r.spec.parent_refs,
            hostnames: r.spec.hostnames,
            rules: r.spec.rules,
        }),
        RouteKind::Grpc => typed::<RawGrpcRoute>(doc, info.name).map(|r| {
            note_grpc_fields(&r, doc, &mut inputs.diagnostics);
            RawRoute {
                metadata: r.metadata,
                parent_refs: r.spec.parent_refs,
                hostnames: r.spec.hostnames,
                rules: r.spec.rules.into_iter().map(|r| r.into_http()).collect(),
            }
        }),
    };
    let raw = match raw {
        Ok(raw) => raw,
        Err(d) => return inputs.diagnostics.push(*d),
    };
    let Some(meta) = meta(
        raw.metadata,
        &doc.origin,
        info.name,
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
    let object = format!("{} {key}", info.name);
    let parent_refs = parent_refs(raw.parent_refs, &ns);
    let mut problems = Vec::new();
    let mut rules: Vec<Rule> = Vec::new();
    for (index, raw_rule) in raw.rules.into_iter().enumerate() {
        if let Some(name) = &raw_rule.name {
            // An entry names its rule by name, or by index when it has none
            // (`<listener>/<ns>/<route>/<rule>`), and istiod names an unnamed
            // rule's Envoy route `<ns>.<route>.<index>`: a name of digits
            // only would take another rule's name in both, and its policies.
            if !name.is_empty() && name.bytes().all(|b| b.is_ascii_digit()) {
                problems.push(Problem {
                    field: format!("spec.rules[{index}].name"),
                    message: format!(
                        "rule name {name:?} is all digits, which entry names and istiod's route names use for rule indexes"
                    ),
                    hint: "give the rule a name with a letter in it (e.g. \"rule-1\"), or no name".into(),
                });
            }
            if rules.iter().any(|r| r.name.as_ref() == Some(name)) {
                problems.push(Problem {
                    field: format!("spec.rules[{index}].name"),
                    message: format!("rule name {name:?} is used twice"),
                    hint: "give every rule of a route a distinct name".into(),
                });
            }
        }
        check_matches(&raw_rule.matches, index, &mut problems);
        let at = Place {
            doc,
            object: &object,
            path: &format!("spec.rules[{index}]"),
            kind: info,
        };
        rules.push(read_rule(
            raw_rule,
            index,
            &ns,
            &at,
            &mut problems,
            &mut inputs.diagnostics,
        ));
    }
    for (i, h) in raw.hostnames.iter().enumerate() {
        if !route_syntax::is_hostname(h) {
            problems.push(Problem {
                field: format!("spec.hostnames[{i}]"),
                message: format!(
                    "hostname {h:?} is not a DNS name (with an optional leading \"*.\"); the filter would refuse every entry of the Gateway"
                ),
                hint: "write a hostname such as shop.example.com or *.example.com, without port".into(),
            });
        }
    }
    if !problems.is_empty() {
        return problems_to_diagnostics(problems, &doc.origin, &object, &mut inputs.diagnostics);
    }
    if let Some(first) = inputs.routes_of(info.kind).get(&key) {
        let d = duplicate(info.name, &key.to_string(), &first.meta.origin, &doc.origin);
        return inputs.diagnostics.push(d);
    }
    let hostnames = raw
        .hostnames
        .iter()
        .map(|h| h.to_ascii_lowercase())
        .collect();
    inputs.routes_of_mut(info.kind).insert(
        key.clone(),
        Arc::new(HttpRoute {
            kind: info.kind,
            meta,
            key,
            parent_refs,
            hostnames,
            rules,
        }),
    );
}

/// parentRefs with Gateway API's defaults: group gateway.networking.k8s.io,
/// kind Gateway, the route's own namespace.
fn parent_refs(raw: Vec<RawParentRef>, ns: &str) -> Vec<ParentRef> {
    raw.into_iter()
        .map(|p| ParentRef {
            group: p.group.unwrap_or_else(|| GATEWAY_GROUP.into()),
            kind: p.kind.unwrap_or_else(|| "Gateway".into()),
            namespace: p.namespace.unwrap_or_else(|| ns.to_string()),
            name: p.name,
            section_name: p.section_name,
            port: p.port,
        })
        .collect()
}

/// A GRPCRoute's fields that Attaché does not apply, each a note naming
/// the field (its other filter types are noted by `read_filters`).
fn note_grpc_fields(route: &RawGrpcRoute, doc: &SourceDoc, notes: &mut Vec<Diagnostic>) {
    let name = route.metadata.name.as_deref().unwrap_or_default();
    for (i, rule) in route.spec.rules.iter().enumerate() {
        if rule.session_persistence.is_some() {
            notes.push(
                Diagnostic::note("sessionPersistence is not applied by attache; ignored")
                    .at(&doc.origin)
                    .on(format!("GRPCRoute {name}"))
                    .field(format!("spec.rules[{i}].sessionPersistence")),
            );
        }
    }
}

fn read_rule(
    raw: RawRule,
    index: usize,
    ns: &str,
    at: &Place<'_>,
    problems: &mut Vec<Problem>,
    notes: &mut Vec<Diagnostic>,
) -> Rule {
    let path = at.path;
    let mut inline = FieldMap::new();
    if let Some(t) = &raw.timeouts {
        settings::timeouts(t, &format!("{path}.timeouts"), &mut inline, problems);
    }
    if let Some(r) = &raw.retry {
        settings::retry(r, &format!("{path}.retry"), &mut inline, problems);
    }
    read_filters(&raw.filters, at, &mut inline, problems, notes);
    let (delegates, backends) = read_backend_refs(raw.backend_refs, ns, at, problems, notes);
    Rule {
        index,
        name: raw.name,
        matches: normalise_matches(raw.matches),
        inline,
        delegates,
        backends,
    }
}

/// Where a rule is, for messages, and the kind of its route.
struct Place<'a> {
    doc: &'a SourceDoc,
    object: &'a str,
    /// `spec.rules[i]`.
    path: &'a str,
    kind: &'static RouteKindInfo,
}

/// The rule's own header filters become its inline values; other filter
/// types are noted, not applied.
fn read_filters(
    filters: &[RawFilter],
    at: &Place<'_>,
    inline: &mut FieldMap,
    problems: &mut Vec<Problem>,
    notes: &mut Vec<Diagnostic>,
) {
    let mut seen_request = false;
    let mut seen_response = false;
    for (i, filter) in filters.iter().enumerate() {
        let here = format!("{}.filters[{i}]", at.path);
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
                    .at(&at.doc.origin)
                    .on(at.object)
                    .field(format!("{here}.type")),
                );
                continue;
            }
        };
        if *seen {
            problems.push(Problem {
                field: format!("{here}.type"),
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
                &format!("{here}.{field}"),
                inline,
                problems,
            ),
            None => problems.push(Problem {
                field: format!("{here}.{field}"),
                message: format!("type {} needs its {field} field", filter.kind),
                hint: format!("add {field}: {{set: [...], add: [...], remove: [...]}}"),
            }),
        }
    }
}

/// Child HTTPRoutes the rule delegates to, and the Services it sends to.
fn read_backend_refs(
    refs: Vec<RawBackendRef>,
    ns: &str,
    at: &Place<'_>,
    problems: &mut Vec<Problem>,
    notes: &mut Vec<Diagnostic>,
) -> (Vec<ObjectKey>, Vec<BackendTarget>) {
    let mut delegates = Vec::new();
    let mut backends = Vec::new();
    for (i, b) in refs.into_iter().enumerate() {
        let group = b.group.unwrap_or_default();
        let kind = b.kind.unwrap_or_else(|| "Service".into());
        let namespace = b.namespace.unwrap_or_else(|| ns.to_string());
        let path = format!("{}.backendRefs[{i}]", at.path);
        let here = Place {
            doc: at.doc,
            object: at.object,
            path: &path,
            kind: at.kind,
        };
        match (group.as_str(), kind.as_str()) {
            (group, kind) if at.kind.delegates && HTTP_ROUTE.is(group, kind) => {
                if !b.filters.is_empty() {
                    notes.push(
                        Diagnostic::warning(
                            "filters on a backendRef that delegates to an HTTPRoute are not applied",
                        )
                        .at(&at.doc.origin)
                        .on(at.object)
                        .field(format!("{path}.filters"))
                        .hint("put the filters on the child route's rules"),
                    );
                }
                delegates.push(ObjectKey {
                    namespace,
                    name: b.name,
                })
            }
            ("" | "core", "Service") => {
                // The same reader as a rule's own filters: header rules,
                // one filter per direction, other types noted.
                let mut fields = FieldMap::new();
                read_filters(&b.filters, &here, &mut fields, problems, notes);
                let (request_headers, response_headers) =
                    crate::field::document::header_changes(&fields);
                backends.push(BackendTarget {
                    namespace,
                    name: b.name,
                    port: b.port,
                    weight: b.weight.unwrap_or(1),
                    request_headers,
                    response_headers,
                })
            }
            _ => notes.push(
                Diagnostic::warning(format!(
                    "backend kind {group}/{kind} is not supported; ignored"
                ))
                .at(&at.doc.origin)
                .on(at.object)
                .field(format!("{}.backendRefs[{i}]", at.path))
                .hint(if at.kind.delegates {
                    "use a Service, or an HTTPRoute (group gateway.networking.k8s.io) to delegate"
                } else {
                    "use a Service (a GRPCRoute does not delegate)"
                }),
            ),
        }
    }
    if !delegates.is_empty() && !backends.is_empty() {
        notes.push(
            Diagnostic::warning(
                "rule both delegates to HTTPRoutes and names Services; the Services are ignored",
            )
            .at(&at.doc.origin)
            .on(at.object)
            .field(format!("{}.backendRefs", at.path))
            .hint("move the Services into a child route"),
        );
        backends.clear();
    }
    (delegates, backends)
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
            // A gRPC method match stands for its path (attache_contract::grpc).
            if m.path.is_none() && m.grpc_method.is_none() {
                m.path = Some(root());
            }
            m
        })
        .collect()
}

/// The syntax the filter requires of a rule's matches
/// (`attache_contract::route_syntax::check_match`): a match it would refuse
/// would take the whole document down with it, so the route is refused here.
fn check_matches(matches: &[HttpRouteMatch], index: usize, problems: &mut Vec<Problem>) {
    for (j, m) in matches.iter().enumerate() {
        if let Err(refusal) = route_syntax::check_match(m, regex_compiles) {
            problems.push(Problem {
                field: format!("spec.rules[{index}].matches[{j}].{}", refusal.field),
                message: refusal.message,
                hint: refusal.hint.into(),
            });
        }
    }
}

/// Whether the filter's regex engine compiles `pattern` as the filter does,
/// and Envoy's RE2 within its program-size limit (`re2_program`).
pub(crate) fn regex_compiles(pattern: &str) -> Result<(), RegexProblem> {
    regex_lite::RegexBuilder::new(&route_syntax::anchored(pattern))
        .size_limit(route_syntax::REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| RegexProblem::Syntax(e.to_string()))?;
    let size =
        re2_program::program_size(pattern).map_err(|e| RegexProblem::Syntax(e.to_string()))?;
    let limit = re2_program::ENVOY_MAX_PROGRAM_SIZE;
    if size > limit {
        return Err(RegexProblem::TooLarge { size, limit });
    }
    Ok(())
}
