//! `attache status`: GEP-713 conditions of every policy, as a table for
//! people (the default on a terminal) or as the `kind: List` YAML/JSON that
//! `kubectl get routepolicies -o yaml` would show, each item's `status`
//! being what a controller writes to the status subresource
//! (docs/status.md).

use std::collections::BTreeSet;
use std::io::IsTerminal;
use std::process::ExitCode;

use attache_core::status::drift::Drift;
use attache_core::status::{PolicyStatus, RouteStatus};
use attache_core::topology::ObjectKey;
use serde::Serialize;

use super::source::SourceArgs;
use super::strict::Strict;
use super::{parse_key, CliError};
use crate::output::{pretty_json, print_stdout, report};

mod drift;
mod table;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// One line per policy: kind, namespace, name, accepted, reason, targets, in effect.
    Table,
    /// A `kind: List` of the policies with their status, as kubectl prints it.
    Yaml,
    /// The same list as JSON.
    Json,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  attache status -f examples/shop/
  attache status -f examples/shop/ --gateway infra/edge --namespace shop
  attache status -f examples/shop/ -o yaml | yq '.items[].status'
  attache status -f policies/ --strict     # exit 3 when any policy is not Accepted

Every policy gets an Accepted condition (reason Accepted, Invalid, TargetNotFound
or Conflicted); each target (status.ancestors) also gets an Attached condition
whose reason says how much of the policy is in effect there: Attached (every
value it sets), Merged (some; the message names who took the rest) or
Overridden (none). Every HTTPRoute follows, with Gateway API's RouteParentStatus
per parentRef: Accepted True, or False with NoMatchingParent,
NotAllowedByListeners or NoMatchingListenerHostname, or Unknown (Pending) when
the parent is not in the input. Every Gateway in the input is resolved. The
YAML and JSON items carry what a controller writes to the status subresource,
without lastTransitionTime (docs/status.md).")]
pub struct Args {
    #[command(flatten)]
    pub input: SourceArgs,
    /// Output format [default: table on a terminal, yaml otherwise].
    #[arg(short = 'o', long = "output", value_enum)]
    pub output: Option<Format>,
    /// Only the policy with this name.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Only policies that reach this Gateway: attached to it, its listeners,
    /// its GatewayClass, its Namespace or a route it serves.
    #[arg(long, value_name = "NS/NAME", value_parser = parse_key)]
    pub gateway: Option<ObjectKey>,
    #[command(flatten)]
    pub strict: Strict,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct List<'a> {
    api_version: &'static str,
    kind: &'static str,
    items: Vec<Item<'a>>,
}

/// The policies, then the HTTPRoutes (each with its `RouteParentStatus`
/// per parentRef), as one `kind: List` holds objects of several kinds.
#[derive(Serialize)]
#[serde(untagged)]
enum Item<'a> {
    Policy(&'a PolicyStatus),
    Route(&'a RouteStatus),
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let read = args.input.read(true)?;
    let inputs = args.input.limits.parse(&read.docs);
    let mut status = attache_core::policy_status(&inputs);
    // GEP-713 (2025): Programmed per ancestor, computed as if applied, as the
    // controller writes it (docs/status.md); live, compared with what it wrote.
    attache_core::status::programmed::with_programmed(&inputs, &mut status);
    let unreadable = read.live.as_ref().map_or(0, |l| l.unreadable);
    let problems = report(&inputs, &status.diagnostics) + unreadable;
    let namespace = &args.input.cluster.namespace;
    let reaching: Option<BTreeSet<usize>> = match &args.gateway {
        Some(key) => Some(attache_core::reach::policies_reaching(&inputs, key)?),
        None => None,
    };
    let chosen: Vec<&PolicyStatus> = status
        .policies
        .iter()
        .enumerate()
        .filter(|(i, _)| reaching.as_ref().is_none_or(|r| r.contains(i)))
        .map(|(_, p)| p)
        .filter(|p| args.name.as_ref().is_none_or(|n| *n == p.metadata.name))
        .filter(|p| {
            namespace
                .as_ref()
                .is_none_or(|ns| Some(ns) == p.metadata.namespace.as_ref())
        })
        .collect();
    let routes_reaching: Option<BTreeSet<ObjectKey>> = match &args.gateway {
        Some(key) => Some(attache_core::reach::routes_reaching(&inputs, key)?),
        None => None,
    };
    let routes: Vec<&RouteStatus> = status
        .routes
        .iter()
        .filter(|r| {
            routes_reaching.as_ref().is_none_or(|keys| {
                keys.iter().any(|k| {
                    Some(&k.namespace) == r.metadata.namespace.as_ref() && k.name == r.metadata.name
                })
            })
        })
        .filter(|r| args.name.as_ref().is_none_or(|n| *n == r.metadata.name))
        .filter(|r| {
            namespace
                .as_ref()
                .is_none_or(|ns| Some(ns) == r.metadata.namespace.as_ref())
        })
        .collect();
    let format = args.output.unwrap_or(if std::io::stdout().is_terminal() {
        Format::Table
    } else {
        Format::Yaml
    });
    let list = List {
        api_version: "v1",
        kind: "List",
        items: chosen
            .iter()
            .map(|p| Item::Policy(p))
            .chain(routes.iter().map(|r| Item::Route(r)))
            .collect(),
    };
    let drifts: Option<Vec<Drift>> = read
        .live
        .as_ref()
        .map(|live| chosen.iter().map(|p| drift::of(p, &live.objects)).collect());
    // The shell's clock, for how long a lag has lasted ("2/3 since 40s").
    let now = attache_controller::served::condition::Timestamp::now();
    let served: Option<Vec<String>> = read.live.as_ref().map(|live| {
        let of = |p: &&PolicyStatus| drift::served(p, &live.objects, now);
        chosen.iter().map(of).collect()
    });
    let live = served
        .as_deref()
        .zip(drifts.as_deref())
        .map(|(served, drifts)| table::Live { served, drifts });
    let text = match format {
        Format::Table => table::render(&chosen, live.as_ref(), &routes),
        Format::Yaml => {
            serde_yaml_ng::to_string(&list).map_err(|source| CliError::Yaml { source })?
        }
        Format::Json => pretty_json(&list)?,
    };
    print_stdout(&text)?;
    let not_accepted = chosen.iter().filter(|p| !table::accepted(p)).count();
    let drifting = drifts.iter().flatten().filter(|d| d.is_drift()).count();
    if drifting > 0 {
        eprintln!("note: {drifting} of the policies shown drift from the status written in the cluster (the DRIFT column of -o table)");
    }
    let mut failing = Vec::new();
    if not_accepted > 0 {
        failing.push(format!(
            "{not_accepted} of the policies shown are not Accepted"
        ));
    }
    if drifting > 0 {
        failing.push(format!("{drifting} drift from their written status"));
    }
    args.strict
        .check(problems, not_accepted + drifting, &failing.join("; "))?;
    Ok(ExitCode::SUCCESS)
}
