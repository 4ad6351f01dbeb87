//! Reading HTTPRoutes: parent refs, rules, inline settings, delegation and backends.

use super::*;

pub(super) fn read_route(doc: &SourceDoc, inputs: &mut Inputs) {
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
