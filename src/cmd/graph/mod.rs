//! `attache graph`: the attachment tree of one Gateway as a picture, from
//! the GatewayClass through the Namespace, the Gateway and its listeners
//! down to each route and rule, with every policy at its target; for a
//! chosen route (and rule), the field each supplier won. Graphviz DOT or
//! Mermaid (docs/graph.md).

use std::process::ExitCode;

use attache_core::contract::EntryName;
use attache_core::explain::Explanation;
use attache_core::model::kinds::{RouteKind, ROUTE_KINDS};
use attache_core::model::levels::UpperLevel;
use attache_core::model::{Policy, Target};
use attache_core::topology::ObjectKey;
use attache_core::Inputs;

use super::load::{load_and_resolve_source, Loaded};
use super::source::SourceArgs;
use super::strict::Strict;
use super::{parse_key, CliError};
use crate::output::print_stdout;
use model::{EdgeKind, Graph, Level, NodeKind};

mod dot;
mod mermaid;
mod model;

/// More route rules than this make a picture nobody can read; `--route`
/// narrows it. Also bounds the work (one explanation per route drawn).
pub const MAX_RULES: usize = 400;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Graphviz DOT: `attache graph ... | dot -Tsvg > tree.svg`.
    Dot,
    /// A Mermaid flowchart, for Markdown that renders Mermaid (GitHub).
    Mermaid,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  attache graph -f examples/shop/ | dot -Tsvg > shop.svg
  attache graph -f examples/shop/ --route shop/orders -o mermaid
  attache graph -f examples/shop/ --route shop/storefront --rule checkout | dot -Tpng > checkout.png

Boxes are the levels (GatewayClass > Namespace > Gateway > listener > HTTPRoute
> rule, a delegating rule pointing at its child route); notes are policies,
joined by a dashed edge to their target and labelled with their role. With
--route, only that route's rules are drawn, and a bold edge from each supplier
to a rule lists the fields it won there, as the supplier's kind writes them.")]
pub struct Args {
    #[command(flatten)]
    pub input: SourceArgs,
    /// The Gateway; may be left out when the input has exactly one.
    #[arg(long, value_name = "NS/NAME", value_parser = parse_key)]
    pub gateway: Option<ObjectKey>,
    /// Draw only this HTTPRoute's rules, with the winner of each field.
    #[arg(long, value_name = "NS/NAME", value_parser = parse_key)]
    pub route: Option<ObjectKey>,
    /// With --route: only this rule (its name, or its zero-based index).
    #[arg(long, value_name = "RULE", requires = "route")]
    pub rule: Option<String>,
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Dot)]
    pub output: Format,
    #[command(flatten)]
    pub strict: Strict,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let Loaded {
        inputs,
        resolved,
        problems,
        ..
    } = load_and_resolve_source(&args.input, args.gateway.as_ref())?;
    let gateway = resolved.resolution.gateway.clone();
    args.strict.check(problems, 0, "nothing drawn")?;
    let mut routes: Vec<ObjectKey> = Vec::new();
    for e in &resolved.resolution.document.routes {
        let key = ObjectKey {
            namespace: e.route_namespace.clone(),
            name: e.route_name.clone(),
        };
        let wanted = args.route.as_ref().is_none_or(|r| *r == key);
        if wanted && !routes.contains(&key) {
            routes.push(key);
        }
    }
    let rules = resolved
        .resolution
        .document
        .routes
        .iter()
        .filter(|e| {
            args.route
                .as_ref()
                .is_none_or(|r| r.namespace == e.route_namespace && r.name == e.route_name)
        })
        .count();
    if rules > MAX_RULES {
        return Err(CliError::Usage(format!(
            "Gateway {gateway} has {rules} route rules to draw, more than {MAX_RULES}\n  hint: draw one route with --route NS/NAME"
        )));
    }
    let mut explained: Vec<Explanation> = Vec::new();
    for route in &routes {
        explained.extend(
            attache_core::explain_route(&inputs, &gateway, route)?
                .into_iter()
                .filter(|e| args.rule.as_ref().is_none_or(|r| *r == e.rule)),
        );
    }
    if let (Some(route), true) = (&args.route, explained.is_empty()) {
        return Err(CliError::no_such_entry(
            route,
            args.rule.as_deref(),
            None,
            &gateway,
            &resolved,
            &inputs,
        ));
    }
    let graph = build(&inputs, &gateway, &explained, args.route.is_some());
    let text = match args.output {
        Format::Dot => dot::render(&graph),
        Format::Mermaid => mermaid::render(&graph),
    };
    print_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// The key of a level node: the target it stands for, as the resolver names it.
fn key(target: &Target) -> String {
    target.to_string()
}

fn level(g: &mut Graph, target: &Target, level: Level, name: &str) -> String {
    g.node(
        &key(target),
        NodeKind::Level(level),
        vec![level.name().to_string(), name.to_string()],
    )
}

/// `HTTPRoute infra/api rule orders` -> (infra/api, orders): the form
/// `Explanation::via` names a delegating parent in.
fn parent_rule(via: &str) -> Option<(ObjectKey, String)> {
    let rest = via.strip_prefix("HTTPRoute ")?;
    let (route, rule) = rest.split_once(" rule ")?;
    let (namespace, name) = route.split_once('/')?;
    Some((
        ObjectKey {
            namespace: namespace.into(),
            name: name.into(),
        },
        rule.into(),
    ))
}

/// A route and one of its rules as nodes under `parent`; returns the rule's node.
fn route_and_rule(
    g: &mut Graph,
    parent: &str,
    (kind, route): (RouteKind, &ObjectKey),
    rule: &str,
) -> String {
    let target = Target::Route(kind, route.clone(), None);
    let r = g.node(
        &key(&target),
        NodeKind::Level(Level::Route),
        vec![kind.name().to_string(), route.to_string()],
    );
    g.edge(parent, &r, EdgeKind::Tree, Vec::new());
    let target = Target::Route(kind, route.clone(), Some(rule.to_string()));
    let n = level(g, &target, Level::Rule, rule);
    g.edge(&r, &n, EdgeKind::Tree, Vec::new());
    n
}

/// The roles a policy plays, for the label of its edge.
fn roles(p: &Policy) -> Vec<String> {
    let mut out = Vec::new();
    if p.defaults.is_some() {
        out.push("defaults".to_string());
    }
    if p.overrides.is_some() {
        out.push("overrides".to_string());
    }
    if p.plain.is_some() {
        out.push("plain".to_string());
    }
    vec![out.join(" + ")]
}

fn build(inputs: &Inputs, gateway: &ObjectKey, explained: &[Explanation], chosen: bool) -> Graph {
    let mut g = Graph::new(format!("Gateway {gateway}: policy attachment"));
    let Some(gw) = inputs.gateways.get(gateway) else {
        return g;
    };
    let class = level(
        &mut g,
        &Target::GatewayClass(gw.class.clone()),
        Level::GatewayClass,
        &gw.class,
    );
    let ns_target = Target::Namespace(gw.key.namespace.clone());
    let ns = level(&mut g, &ns_target, Level::Namespace, &gw.key.namespace);
    g.edge(&class, &ns, EdgeKind::Tree, Vec::new());
    let gw_node = level(
        &mut g,
        &Target::Gateway(gw.key.clone(), None),
        Level::Gateway,
        &gw.key.to_string(),
    );
    g.edge(&ns, &gw_node, EdgeKind::Tree, Vec::new());
    // The listener node of each listener key; a ListenerSet's listeners
    // hang under the set's node (the levels table: listener, set, Gateway).
    let mut listener_nodes: Vec<(String, String)> = Vec::new();
    for l in &gw.listeners {
        // With --route, only the listeners that serve it.
        let key_of = |e: &Explanation| EntryName::split(&e.entry).listener_key();
        if chosen && !explained.iter().any(|e| key_of(e) == l.key()) {
            continue;
        }
        let mut parent = gw_node.clone();
        if let Some(set_target) = UpperLevel::ListenerSet.target(gw, l) {
            let name = l
                .set
                .as_ref()
                .map(|s| s.key.to_string())
                .unwrap_or_default();
            let s = level(&mut g, &set_target, Level::ListenerSet, &name);
            g.edge(&gw_node, &s, EdgeKind::Tree, Vec::new());
            parent = s;
        }
        let Some(target) = UpperLevel::Listener.target(gw, l) else {
            continue;
        };
        let n = level(&mut g, &target, Level::Listener, &l.name);
        g.edge(&parent, &n, EdgeKind::Tree, Vec::new());
        listener_nodes.push((l.key(), n));
    }
    for e in explained {
        let listener_key = EntryName::split(&e.entry).listener_key();
        let Some(mut parent) = listener_nodes
            .iter()
            .find(|(k, _)| *k == listener_key)
            .map(|(_, n)| n.clone())
        else {
            continue;
        };
        for via in &e.via {
            if let Some((route, rule)) = parent_rule(via) {
                parent = route_and_rule(&mut g, &parent, (RouteKind::Http, &route), &rule);
            }
        }
        let Some((namespace, name)) = e.route.split_once('/') else {
            continue;
        };
        let leaf = ObjectKey {
            namespace: namespace.into(),
            name: name.into(),
        };
        let kind = ROUTE_KINDS
            .iter()
            .find(|r| r.name == e.route_kind_name())
            .map_or(RouteKind::Http, |r| r.kind);
        let rule = route_and_rule(&mut g, &parent, (kind, &leaf), &e.rule);
        if chosen {
            winners(&mut g, inputs, e, &rule);
        }
    }
    for p in &inputs.policies {
        if !p.is_valid() {
            continue;
        }
        for t in p.targets.iter().filter_map(|t| t.resolved.as_ref()) {
            let Some(target) = g.find(&key(t)).map(str::to_string) else {
                continue;
            };
            let node = g.node(&p.display_name(), NodeKind::Policy, policy_lines(p));
            g.edge(&node, &target, EdgeKind::Attach, roles(p));
        }
    }
    g
}

fn policy_lines(p: &Policy) -> Vec<String> {
    let name = match &p.meta.namespace {
        Some(ns) => format!("{ns}/{}", p.meta.name),
        None => p.meta.name.clone(),
    };
    vec![p.kind.to_string(), name]
}

/// For a chosen rule: a bold edge from each supplier to the rule, listing
/// the fields it won as its kind writes them; the rule's own values go in
/// its box.
fn winners(g: &mut Graph, inputs: &Inputs, e: &Explanation, rule: &str) {
    let own = format!("{} {} rule {}", e.route_kind_name(), e.route, e.rule);
    let mut by_source: Vec<(String, Vec<String>)> = Vec::new();
    for f in &e.fields {
        let line = format!("{}: {}", f.written.path, f.written.value);
        for s in &f.from {
            match by_source.iter_mut().find(|(k, _)| *k == s.source) {
                Some((_, lines)) => lines.push(line.clone()),
                None => by_source.push((s.source.clone(), vec![line.clone()])),
            }
        }
    }
    for (source, lines) in by_source {
        if source == own {
            if let Some(node) = g.node_mut(rule) {
                node.lines.push("own values:".into());
                node.lines.extend(lines);
            }
            continue;
        }
        let from = match inputs.policies.iter().find(|p| p.display_name() == source) {
            Some(p) => g.node(&source, NodeKind::Policy, policy_lines(p)),
            // A delegating parent's own values: its rule node, drawn above.
            None => match parent_rule(&source) {
                Some((route, r)) => {
                    let target = Target::Route(RouteKind::Http, route, Some(r.clone()));
                    level(g, &target, Level::Rule, &r)
                }
                None => continue,
            },
        };
        g.edge(&from, rule, EdgeKind::Wins, lines);
    }
}
