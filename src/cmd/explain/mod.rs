//! `attache explain`: why every effective field of a route rule has its
//! value, and which contributions lost.

use std::process::ExitCode;

use attache_core::explain::Explanation;
use attache_core::topology::ObjectKey;

use super::load::{load_and_resolve_source, Loaded};
use super::parse_key;
use super::source::SourceArgs;
use super::CliError;
use crate::output::{pretty_json, print_stdout};

mod table;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// For people: each field as its policy writes it, who set it and who
    /// lost, wrapped to the terminal.
    Table,
    /// A JSON array of explanations for tools.
    Json,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  attache explain -f examples/shop/ --route shop/orders
  attache explain -f examples/shop/ --route shop/storefront --rule pages -o json | jq '.[0].lost'

Each field is shown as the policy that set it writes it (timeouts.request: 15s;
retry.numRetries: 2 for a BackendTrafficPolicy), then who supplied it (policy
or the rule's own value) at which level; the lines under it show the
contributions that lost and why (a default never replaces a value set lower; an
override at a less specific level beats everything below it). Lines wrap to
COLUMNS, else to the terminal's width; piped output is not wrapped. -o json
keeps the schema-1 field names (timeouts.requestMs) for tools.")]
pub struct Args {
    #[command(flatten)]
    pub input: SourceArgs,
    /// The HTTPRoute whose rules to explain (a child route reached through delegation works too).
    #[arg(long, value_name = "NS/NAME", value_parser = parse_key)]
    pub route: ObjectKey,
    /// Only this rule: its name, or its zero-based index when unnamed.
    #[arg(long, value_name = "RULE")]
    pub rule: Option<String>,
    /// Only this listener: its name, or `<set namespace>/<set name>/<listener>` for a ListenerSet's.
    #[arg(long, value_name = "KEY")]
    pub listener: Option<String>,
    /// The Gateway; may be left out when the input has exactly one.
    #[arg(long, value_name = "NS/NAME", value_parser = parse_key)]
    pub gateway: Option<ObjectKey>,
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Table)]
    pub output: Format,
    #[command(flatten)]
    pub strict: super::strict::Strict,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let Loaded {
        docs,
        inputs,
        resolved,
        problems,
        ..
    } = load_and_resolve_source(&args.input, args.gateway.as_ref())?;
    let gateway = resolved.resolution.gateway.clone();
    let explained = attache_core::explain_route(&inputs, &gateway, &args.route)?;
    let chosen: Vec<&Explanation> = explained
        .iter()
        .filter(|e| args.rule.as_ref().is_none_or(|r| *r == e.rule))
        // The listener key: `web`, or `team-a/ls-a/web` for a ListenerSet's.
        .filter(|e| {
            args.listener.as_ref().is_none_or(|l| {
                *l == attache_core::contract::EntryName::split(&e.entry).listener_key()
            })
        })
        .collect();
    if chosen.is_empty() {
        return Err(CliError::no_such_entry(
            &args.route,
            args.rule.as_deref(),
            args.listener.as_deref(),
            &gateway,
            &resolved,
            &inputs,
        ));
    }
    let text = match args.output {
        Format::Json => pretty_json(&chosen)?,
        Format::Table => {
            let width = super::wrap::width();
            chosen
                .iter()
                .map(|e| table::render(e, width))
                .collect::<Vec<_>>()
                .join("\n")
        }
    };
    print_stdout(&text)?;
    if args.input.files.is_empty() {
        served_note(&docs, &gateway);
    }
    args.strict.check(problems, 0, "")?;
    Ok(ExitCode::SUCCESS)
}

/// Read from the cluster: whether the values explained are served, as the
/// controller wrote it in the policies' `Programmed` conditions
/// (docs/controller.md, "Programmed means served"), one line on standard
/// error so that standard output stays the explanation.
fn served_note(docs: &[attache_core::source::SourceDoc], gateway: &ObjectKey) {
    use attache_controller::served::condition::{gateway_cell, Timestamp};
    let cell = gateway_cell(docs.iter().map(|d| &d.value), gateway, Timestamp::now());
    let what = match cell.as_str() {
        "-" => "not confirmed by its replicas (no controller wrote what they serve)".to_string(),
        "rejected" => {
            "rejected by at least one replica, which serves its last good document".to_string()
        }
        _ if cell.contains("since") => format!("not yet served by every replica ({cell})"),
        _ => format!("served by every ready replica ({cell})"),
    };
    eprintln!("note: Gateway {gateway}: these values are {what}");
}
