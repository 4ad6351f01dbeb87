//! Which (listener, route rule) pairs a Gateway serves: parentRefs,
//! allowedRoutes, hostname intersection and delegation to child routes.
//!
//! A child route is reached through the parent rule that delegates to it
//! and inherits that rule's levels. As in kgateway, a child whose
//! parentRefs name HTTPRoutes accepts delegation only from those. A child that also names the Gateway in
//! its own parentRefs attaches directly as well; when the same
//! (listener, route, rule) is reachable several ways, the direct attachment
//! wins, then the delegation path that sorts first, and the others are
//! reported (the schema-1 entry name must be unique).

use std::collections::BTreeSet;

pub use crate::limits::Limits;

use crate::contract::HttpRouteMatch;
use crate::diagnostic::Diagnostic;
use crate::error::ResolveError;
use crate::hostname::intersect_lists;
use crate::matches::intersect_all;
use crate::model::kinds::{RouteKind, HTTP_ROUTE};
use crate::model::Inputs;
use crate::model::{Gateway, HttpRoute, Listener, Rule};
use crate::route_parents::{self, admits_kind, admits_namespace, selects};
use crate::topology::ObjectKey;

/// One rule served on one listener, with the delegation chain that led to it.
#[derive(Debug, Clone)]
pub struct Attachment<'a> {
    pub listener: &'a Listener,
    /// Outermost first; the last pair is the leaf route and its rule.
    pub chain: Vec<(&'a HttpRoute, &'a Rule)>,
    /// Effective hostnames (empty = any).
    pub hostnames: Vec<String>,
    /// Effective matches: the leaf rule's, intersected with every
    /// delegating parent rule's (`crate::matches`).
    pub matches: Vec<HttpRouteMatch>,
    /// The entry name (`entry_name`), built once: deduplicating, sorting
    /// and resolving all read it.
    name: String,
}

/// What a delegating parent passes down: its hostnames and, below the top
/// route, the matches a request has already passed.
struct Scope {
    hostnames: Vec<String>,
    matches: Option<Vec<HttpRouteMatch>>,
}

impl<'a> Attachment<'a> {
    pub fn leaf(&self) -> Option<(&'a HttpRoute, &'a Rule)> {
        self.chain.last().copied()
    }

    pub fn entry_name(&self) -> String {
        self.name.clone()
    }

    fn name_of(listener: &Listener, leaf: Option<(&HttpRoute, &Rule)>) -> String {
        match leaf {
            Some((route, rule)) => crate::contract::EntryName {
                set: listener.set_name(),
                listener: &listener.name,
                namespace: &route.key.namespace,
                route: &route.key.name,
                rule: &rule.label(),
            }
            .joined(),
            None => String::new(),
        }
    }
}

/// Every rule the Gateway serves, in no particular order yet. Fails fast,
/// before the work is allocated, when the routes would make the Gateway
/// exceed `inputs.limits` (docs/semantics.md, "What a policy may not do").
pub fn attach<'a>(
    inputs: &'a Inputs,
    gateway: &'a Gateway,
    diags: &mut Vec<Diagnostic>,
) -> Result<Vec<Attachment<'a>>, ResolveError> {
    let mut out = Vec::new();
    let mut budget = Budget::new(inputs.limits, &gateway.key);
    let clashes = kind_clashes(inputs, gateway, diags);
    for listener in &gateway.listeners {
        let listener_hosts: Vec<String> = listener.hostname.iter().cloned().collect();
        for route in inputs.all_routes() {
            let clash = route.kind == RouteKind::Grpc && clashes.contains(&route.key);
            if clash || !attaches(inputs, gateway, listener, route) {
                continue;
            }
            let Some(hostnames) = intersect_lists(&listener_hosts, &route.hostnames) else {
                diags.push(
                    Diagnostic::note(format!(
                        "no hostname in common with {} of Gateway {}; not attached there",
                        listener.describe(),
                        gateway.key
                    ))
                    .at(&route.meta.origin)
                    .on(route.object())
                    .field("spec.hostnames"),
                );
                continue;
            };
            let mut chain = Vec::new();
            let scope = Scope {
                hostnames,
                matches: None,
            };
            let mut walker = Walker {
                inputs,
                listener,
                out: &mut out,
                diags,
                budget: &mut budget,
            };
            walker.walk(route, &scope, &mut chain)?;
        }
    }
    route_parents::report(inputs, gateway, diags);
    Ok(dedupe(out, diags))
}

/// GRPCRoutes that share their namespace and name with an HTTPRoute on
/// this Gateway: their entries would take the HTTPRoute's names
/// (`<listener>/<namespace>/<route>/<rule>`), so the GRPCRoute is not
/// attached here and is an error naming both (docs/semantics.md,
/// "GRPCRoute"), never a silent overwrite.
fn kind_clashes(
    inputs: &Inputs,
    gateway: &Gateway,
    diags: &mut Vec<Diagnostic>,
) -> BTreeSet<ObjectKey> {
    let on_gateway = |route: &HttpRoute| {
        gateway
            .listeners
            .iter()
            .any(|l| attaches(inputs, gateway, l, route))
    };
    let mut clashes = BTreeSet::new();
    for grpc in inputs.grpc_routes.values().filter(|r| on_gateway(r)) {
        let Some(http) = inputs.routes.get(&grpc.key).filter(|r| on_gateway(r)) else {
            continue;
        };
        diags.push(
            Diagnostic::error(format!(
                "GRPCRoute {key} and HTTPRoute {key} both attach to Gateway {}, and their entries would share names; the GRPCRoute is not served there",
                gateway.key,
                key = grpc.key
            ))
            .at(&grpc.meta.origin)
            .on(grpc.object())
            .field("metadata.name")
            .hint(format!(
                "rename the GRPCRoute or the HTTPRoute (defined at {})",
                http.meta.origin
            )),
        );
        clashes.insert(grpc.key.clone());
    }
    clashes
}

/// What one Gateway may cost: every rule visited and every entry produced is
/// counted, so a route tree that would expand exponentially (each of two
/// rules delegating to the next route, 30 deep) stops after a bounded number
/// of steps instead of after 2^30.
struct Budget<'g> {
    limits: Limits,
    gateway: &'g ObjectKey,
    entries: usize,
    visits: usize,
    /// (parent, child) delegations already reported as too deep, so a
    /// diamond reports each once.
    too_deep: BTreeSet<(ObjectKey, ObjectKey)>,
}

impl<'g> Budget<'g> {
    fn new(limits: Limits, gateway: &'g ObjectKey) -> Self {
        Budget {
            limits,
            gateway,
            entries: 0,
            visits: 0,
            too_deep: BTreeSet::new(),
        }
    }

    /// Counts one step (a rule visited, or an entry produced).
    fn spend(&mut self, entry: bool, chain: &[(&HttpRoute, &Rule)]) -> Result<(), ResolveError> {
        self.visits += 1;
        self.entries += usize::from(entry);
        let over = self.entries > self.limits.max_entries
            || self.visits
                > self
                    .limits
                    .max_entries
                    .saturating_mul(2)
                    .saturating_add(1024);
        if over {
            return Err(ResolveError::TooManyEntries {
                gateway: self.gateway.clone(),
                limit: self.limits.max_entries,
                chain: chain_text(chain),
            });
        }
        Ok(())
    }
}

/// `HTTPRoute a/top -> a/child -> ...` for messages.
fn chain_text(chain: &[(&HttpRoute, &Rule)]) -> String {
    let mut routes: Vec<String> = Vec::new();
    for (route, _) in chain {
        let key = route.key.to_string();
        if routes.last() != Some(&key) {
            routes.push(key);
        }
    }
    format!("HTTPRoute {}", routes.join(" -> "))
}

/// The state of one walk down a route's delegation tree on one listener.
struct Walker<'a, 'w, 'g> {
    inputs: &'a Inputs,
    listener: &'a Listener,
    out: &'w mut Vec<Attachment<'a>>,
    diags: &'w mut Vec<Diagnostic>,
    budget: &'w mut Budget<'g>,
}

/// Whether `route` names this listener in a parentRef and the listener
/// admits it (`crate::route_parents` holds each predicate, and says why
/// when no listener does).
fn attaches(inputs: &Inputs, gateway: &Gateway, listener: &Listener, route: &HttpRoute) -> bool {
    let named = route
        .parent_refs
        .iter()
        .any(|p| selects(p, gateway, listener));
    named && admits_namespace(inputs, gateway, listener, route) && admits_kind(listener, route)
}

impl<'a> Walker<'a, '_, '_> {
    fn walk(
        &mut self,
        route: &'a HttpRoute,
        scope: &Scope,
        chain: &mut Vec<(&'a HttpRoute, &'a Rule)>,
    ) -> Result<(), ResolveError> {
        let listener = self.listener;
        let hostnames = &scope.hostnames;
        for rule in &route.rules {
            let matches = match &scope.matches {
                None => rule.matches.clone(),
                Some(outer) => intersect_all(outer, &rule.matches),
            };
            if matches.is_empty() {
                self.diags.push(
                Diagnostic::warning(format!(
                    "no match of this rule lies within the matches of the delegating parent rule {}; not attached through it",
                    chain.last().map(|(r, rule)| format!("HTTPRoute {} rule {}", r.key, rule.label())).unwrap_or_default()
                ))
                .at(&route.meta.origin)
                .on(format!("HTTPRoute {}", route.key))
                .field(format!("spec.rules[{}].matches", rule.index))
                .hint("a child rule's paths must lie under the parent rule's path prefix (e.g. parent /api, child /api/orders)"),
            );
                continue;
            }
            chain.push((route, rule));
            self.budget.spend(rule.delegates.is_empty(), chain)?;
            if rule.delegates.is_empty() {
                self.out.push(Attachment {
                    listener,
                    chain: chain.clone(),
                    hostnames: hostnames.clone(),
                    matches,
                    name: Attachment::name_of(listener, Some((route, rule))),
                });
                chain.pop();
                continue;
            }
            for (i, child_key) in rule.delegates.iter().enumerate() {
                let Some((child, child_hosts)) =
                    self.delegation(route, rule, (i, child_key), chain, hostnames)
                else {
                    continue;
                };
                let inner = Scope {
                    hostnames: child_hosts,
                    matches: Some(matches.clone()),
                };
                self.walk(child, &inner, chain)?;
            }
            chain.pop();
        }
        Ok(())
    }

    /// The child route of one delegation and its hostnames, when the
    /// delegation holds: the child exists, closes no cycle, accepts this
    /// parent, shares a hostname with it and is within the depth limit.
    /// Otherwise says why, and the delegation is skipped.
    fn delegation(
        &mut self,
        route: &'a HttpRoute,
        rule: &Rule,
        (i, child_key): (usize, &ObjectKey),
        chain: &[(&'a HttpRoute, &'a Rule)],
        hostnames: &[String],
    ) -> Option<(&'a HttpRoute, Vec<String>)> {
        let field = format!("spec.rules[{}].backendRefs", rule.index);
        let on_route = |d: Diagnostic| {
            d.at(&route.meta.origin)
                .on(format!("HTTPRoute {}", route.key))
                .field(format!("{field}[{i}]"))
        };
        let Some(child) = self.inputs.routes.get(child_key) else {
            self.diags.push(
                on_route(Diagnostic::warning(format!(
                    "delegates to HTTPRoute {child_key}, which does not exist"
                )))
                .hint("create the child route, or fix name/namespace of the backendRef"),
            );
            return None;
        };
        if chain.iter().any(|(r, _)| r.key == child.key) {
            let path: Vec<String> = chain.iter().map(|(r, _)| r.key.to_string()).collect();
            self.diags.push(
                on_route(Diagnostic::error(format!(
                    "delegation cycle {} -> {}; this delegation is skipped",
                    path.join(" -> "),
                    child.key
                )))
                .hint("a route may not delegate (directly or through children) back to itself"),
            );
            return None;
        }
        // A finding about the child, at one of its fields.
        let on_child = |d: Diagnostic, at: &str| {
            d.at(&child.meta.origin)
                .on(format!("HTTPRoute {}", child.key))
                .field(at)
        };
        if !accepts_parent(child, route) {
            self.diags.push(
                on_child(
                    Diagnostic::warning(format!(
                        "HTTPRoute {} delegates to it, but its parentRefs name other parent routes; not attached through it",
                        route.key
                    )),
                    "spec.parentRefs",
                )
                .hint(format!(
                    "add {{group: gateway.networking.k8s.io, kind: HTTPRoute, name: {}, namespace: {}}} to parentRefs",
                    route.key.name, route.key.namespace
                )),
            );
            return None;
        }
        let Some(child_hosts) = intersect_lists(hostnames, &child.hostnames) else {
            self.diags.push(on_child(
                Diagnostic::note(format!(
                    "no hostname in common with its delegating parent HTTPRoute {}; not attached through it",
                    route.key
                )),
                "spec.hostnames",
            ));
            return None;
        };
        if self.too_deep(route, child, chain, &field, i) {
            return None;
        }
        Some((child, child_hosts))
    }

    /// Whether delegating from `route` to `child` would pass the depth limit;
    /// reports it once per (parent, child), naming the chain.
    fn too_deep(
        &mut self,
        route: &HttpRoute,
        child: &HttpRoute,
        chain: &[(&HttpRoute, &Rule)],
        field: &str,
        i: usize,
    ) -> bool {
        let limit = self.budget.limits.max_delegation_depth;
        // `chain` holds one (route, rule) per route so far; the child would be
        // delegation level `chain.len()` below the top route.
        if chain.len() <= limit {
            return false;
        }
        if self
            .budget
            .too_deep
            .insert((route.key.clone(), child.key.clone()))
        {
            self.diags.push(
            Diagnostic::error(format!(
                "delegation deeper than {limit} levels: {} -> {}; this delegation is skipped",
                chain_text(chain),
                child.key
            ))
            .at(&route.meta.origin)
            .on(format!("HTTPRoute {}", route.key))
            .field(format!("{field}[{i}]"))
            .hint("flatten the route tree: at most 8 levels of HTTPRoutes may delegate below the route attached to the Gateway"),
        );
        }
        true
    }
}

/// kgateway: a child whose parentRefs name HTTPRoutes accepts delegation
/// only from those; a child that names none accepts any parent.
fn accepts_parent(child: &HttpRoute, parent: &HttpRoute) -> bool {
    let mut route_refs = child
        .parent_refs
        .iter()
        .filter(|p| HTTP_ROUTE.is(&p.group, &p.kind))
        .peekable();
    route_refs.peek().is_none()
        || route_refs.any(|p| p.namespace == parent.key.namespace && p.name == parent.key.name)
}

/// Keeps one attachment per entry name: direct first, then the delegation
/// path that sorts first.
fn dedupe<'a>(all: Vec<Attachment<'a>>, diags: &mut Vec<Diagnostic>) -> Vec<Attachment<'a>> {
    let path_key = |a: &Attachment<'a>| -> (usize, Vec<(String, String, usize)>) {
        (
            a.chain.len(),
            a.chain
                .iter()
                .map(|(r, rule)| (r.key.namespace.clone(), r.key.name.clone(), rule.index))
                .collect(),
        )
    };
    // The paths are compared only between attachments of one name (rare:
    // a route reached twice).
    let mut sorted = all;
    sorted.sort_by(|a, b| (a.name.cmp(&b.name)).then_with(|| path_key(a).cmp(&path_key(b))));
    // Sorted by name, a name's attachments are adjacent, and the first is
    // kept: the same leaf (route, rule index) again is another path to it;
    // another leaf is a second rule with that name.
    let mut out: Vec<Attachment<'a>> = Vec::with_capacity(sorted.len());
    for a in sorted {
        let leaf = a.leaf();
        let Some(kept) = out.last().filter(|kept| kept.name == a.name) else {
            out.push(a);
            continue;
        };
        let first = kept.leaf().map(|(route, rule)| (&route.key, rule.index));
        let name = &a.name;
        let Some((route, rule)) = leaf else {
            continue;
        };
        let diagnostic = match first {
            // Parsing refuses the names that could collide (an all-digit rule
            // name); should another way appear, it must not pass as a second
            // path to one rule, since the second rule would lose its entry.
            Some((first_route, first_rule)) if (first_route, first_rule) != (&route.key, rule.index) => {
                Diagnostic::error(format!(
                    "{name} names two rules, HTTPRoute {first_route} rule {first_rule} and HTTPRoute {} rule {}; only the first is kept",
                    route.key, rule.index
                ))
                .hint("give the rules names that differ from each other and from rule indexes")
            }
            _ => {
                let via: Vec<String> = a.chain.iter().map(|(r, _)| r.key.to_string()).collect();
                Diagnostic::warning(format!(
                    "{name} is also reachable via {}; only the first path is used",
                    via.join(" -> ")
                ))
                .hint("attach each route to a listener one way only")
            }
        };
        diags.push(diagnostic.at(&route.meta.origin).on(route.object()));
    }
    out
}
