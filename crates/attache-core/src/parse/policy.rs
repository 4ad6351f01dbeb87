//! Reading RoutePolicy and ClusterRoutePolicy: stanzas, annotations and what a targetRef may name.

use super::*;

/// A kind whose spec has the project's own shape (`SpecShape::Stanzas`);
/// a peer's kind is `super::peers::read_peer`'s.
pub(super) fn read_policy(doc: &SourceDoc, kind: PolicyKind, inputs: &mut Inputs) {
    let kind_name = kind.to_string();
    let (stripped, nulls) = match super::strategy::strip_nulls(doc) {
        Some((stripped, nulls)) => (Some(stripped), nulls),
        None => (None, Vec::new()),
    };
    let raw: RawPolicy = match typed(stripped.as_ref().unwrap_or(doc), &kind_name) {
        Ok(raw) => raw,
        Err(d) => return keep_unreadable(doc, kind, *d, inputs),
    };
    let Some(mut policy) = start(doc, kind, raw.metadata, inputs) else {
        return;
    };
    let mut problems = Vec::new();
    read_settings(&mut policy, &raw.spec, &mut problems);
    super::strategy::read_strategy(&mut policy, &raw.spec, nulls, &mut problems);
    inputs
        .diagnostics
        .extend(super::strategy::weight_ignored(&policy));
    let mut refs = Vec::new();
    if let Some(one) = raw.spec.target_ref {
        refs.push(("spec.targetRef".to_string(), one));
    }
    refs.extend(numbered("spec.targetRefs", raw.spec.target_refs));
    read_targets(&mut policy, refs, &mut problems);
    finish(policy, problems, &doc.origin, inputs);
}

/// `path[i]` for each item of an optional list.
pub(super) fn numbered<T>(path: &str, items: Option<Vec<T>>) -> Vec<(String, T)> {
    items
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, r)| (format!("{path}[{i}]"), r))
        .collect()
}

/// The policy with its metadata and weight, before its spec is read; `None`
/// when the metadata is unusable (reported).
pub(super) fn start(
    doc: &SourceDoc,
    kind: PolicyKind,
    raw_meta: RawMeta,
    inputs: &mut Inputs,
) -> Option<Policy> {
    let kind_name = kind.to_string();
    let namespaced = kind.info().scope == Scope::Namespaced;
    if !namespaced && raw_meta.namespace.is_some() {
        inputs.diagnostics.push(
            Diagnostic::warning(format!(
                "a {kind_name} is cluster-scoped; metadata.namespace is ignored"
            ))
            .at(&doc.origin)
            .on(format!(
                "{kind_name} {}",
                raw_meta.name.clone().unwrap_or_default()
            ))
            .field("metadata.namespace")
            .hint("remove metadata.namespace, or use a RoutePolicy"),
        );
    }
    let meta = meta(
        raw_meta,
        &doc.origin,
        &kind_name,
        namespaced,
        &mut inputs.diagnostics,
    )?;
    let mut policy = invalid_policy(kind, meta, String::new());
    policy.invalid.clear();
    read_weight(&mut policy, &doc.origin, &mut inputs.diagnostics);
    Some(policy)
}

/// Problems make the policy invalid (kept for status) and are reported.
pub(super) fn finish(
    mut policy: Policy,
    problems: Vec<Problem>,
    origin: &Origin,
    inputs: &mut Inputs,
) {
    if !problems.is_empty() {
        for p in &problems {
            policy.invalid.push(format!("{}: {}", p.field, p.message));
        }
        let object = policy.display_name();
        problems_to_diagnostics(problems, origin, &object, &mut inputs.diagnostics);
    }
    push_policy(inputs, Arc::new(policy));
}

/// A policy whose spec does not parse is kept, named and invalid, so that
/// status reports it.
pub(super) fn keep_unreadable(
    doc: &SourceDoc,
    kind: PolicyKind,
    d: Diagnostic,
    inputs: &mut Inputs,
) {
    let raw_meta = doc
        .value
        .get("metadata")
        .and_then(|m| serde_json::from_value::<RawMeta>(m.clone()).ok())
        .unwrap_or_default();
    let reason = d.to_string();
    inputs.diagnostics.push(d);
    let namespaced = kind.info().scope == Scope::Namespaced;
    if let Some(meta) = meta(
        raw_meta,
        &doc.origin,
        &kind.to_string(),
        namespaced,
        &mut Vec::new(),
    ) {
        push_policy(inputs, Arc::new(invalid_policy(kind, meta, reason)));
    }
}

/// The `policy-weight` annotation; a bad one is a warning and weight 0.
fn read_weight(policy: &mut Policy, origin: &Origin, diagnostics: &mut Vec<Diagnostic>) {
    let Some((key, text)) = WEIGHT_KEYS
        .iter()
        .find_map(|k| policy.meta.annotations.get(*k).map(|t| (*k, t)))
    else {
        return;
    };
    match text.trim().parse::<i64>() {
        Ok(w) => policy.weight = w,
        Err(e) => diagnostics.push(
            Diagnostic::warning(format!("{text:?} {}; weight 0 is used", weight_error(&e)))
                .at(origin)
                .on(policy.display_name())
                .field(format!("metadata.annotations[{key}]"))
                .hint("use an integer such as \"10\"; higher wins inside a level"),
        ),
    }
}

/// An integer too long for the weight is not "not an integer".
fn weight_error(e: &std::num::ParseIntError) -> &'static str {
    match e.kind() {
        std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
            "is out of range (a 64-bit integer)"
        }
        _ => "is not an integer",
    }
}

/// The three places settings may sit (docs/semantics.md, "Inputs"); plain
/// settings may not be mixed with a stanza.
fn read_settings(policy: &mut Policy, spec: &RawPolicySpec, problems: &mut Vec<Problem>) {
    let plain = spec.plain();
    let opted = spec.merge_strategy.is_some();
    if !opted && plain.is_some() && (spec.defaults.is_some() || spec.overrides.is_some()) {
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
        .map(|s| settings::settings(s, "spec.defaults", problems));
    policy.overrides = spec
        .overrides
        .as_ref()
        .map(|s| settings::settings(s, "spec.overrides", problems));
    policy.plain = plain
        .as_ref()
        .map(|s| settings::settings(s, "spec", problems));
}

/// `targetRef` and `targetRefs`, each checked by [`target_of`].
pub(super) fn read_targets(
    policy: &mut Policy,
    refs: Vec<(String, RawTargetRef)>,
    problems: &mut Vec<Problem>,
) {
    if refs.is_empty() && policy.selectors.is_empty() {
        problems.push(Problem {
            field: "spec.targetRefs".into(),
            message: "the policy targets nothing".into(),
            hint: "add targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: ...}]"
                .into(),
        });
    }
    for (path, r) in refs {
        match target_of(policy, &r, &path) {
            Ok(target) => policy.targets.push(TargetRef {
                group: r.group,
                kind: r.kind,
                name: r.name,
                section_name: r.section_name,
                path,
                resolved: Some(target),
                unusable: None,
            }),
            Err(p) => problems.push(p),
        }
    }
}

pub(super) fn invalid_policy(kind: PolicyKind, meta: Meta, reason: String) -> Policy {
    Policy {
        kind,
        meta,
        weight: 0,
        targets: Vec::new(),
        defaults: None,
        overrides: None,
        plain: None,
        invalid: vec![reason],
        merge_type: None,
        selectors: Vec::new(),
        strategy: None,
        removals: Vec::new(),
        beyond_limit: Vec::new(),
    }
}

pub(super) fn push_policy(inputs: &mut Inputs, policy: Arc<Policy>) {
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
/// A Gateway (sectionName = listener) or HTTPRoute (sectionName = rule)
/// target: only kinds that may name one, and only in the policy's own
/// namespace.
fn namespaced_target(policy: &Policy, r: &RawTargetRef, path: &str) -> Result<Target, Problem> {
    let info = policy.kind.info();
    let problem = |field: &str, message: String, hint: &str| Problem {
        field: format!("{path}{field}"),
        message,
        hint: hint.to_string(),
    };
    // Called for the namespaced kinds only, group checked (`target_of`).
    let wanted = TargetKind::find(&r.group, &r.kind).unwrap_or(TargetKind::HttpRoute);
    let (true, Some(ns)) = (
        info.targets.contains(&wanted),
        policy.meta.namespace.clone(),
    ) else {
        return Err(problem(
            ".kind",
            format!(
                "a {} cannot target a {} (a namespaced object)",
                info.name, r.kind
            ),
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
    wanted
        .target(Some(&ns), &r.name, r.section_name.clone())
        .ok_or_else(|| {
            problem(
                ".kind",
                format!("{} cannot be targeted", r.kind),
                "target a Gateway or an HTTPRoute",
            )
        })
}

fn target_of(policy: &Policy, r: &RawTargetRef, path: &str) -> Result<Target, Problem> {
    let problem = |field: &str, message: String, hint: &str| Problem {
        field: format!("{path}{field}"),
        message,
        hint: hint.to_string(),
    };
    let own_ns = &policy.meta.namespace;
    let info = policy.kind.info();
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
            if !info.targets.contains(&TargetKind::GatewayClass) {
                return Err(problem(
                    ".kind",
                    format!("a {} cannot target a GatewayClass (a cluster-scoped object)", info.name),
                    "use a ClusterRoutePolicy for GatewayClass targets",
                ));
            }
            Ok(Target::GatewayClass(r.name.clone()))
        }
        "Namespace" => {
            expect_group("")?;
            if let Some(ns) = own_ns {
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
        kind if TargetKind::named(kind).is_some_and(|k| k.info().namespaced) => {
            let group = TargetKind::named(kind).map_or(GATEWAY_GROUP, |k| k.info().group);
            expect_group(group)?;
            namespaced_target(policy, r, path)
        }
        other => Err(problem(
            ".kind",
            format!("{other:?} cannot be targeted"),
            "target a GatewayClass (ClusterRoutePolicy only), Namespace, Gateway or ListenerSet (sectionName = \
             listener) or HTTPRoute (sectionName = rule name)",
        )),
    }
}
