//! `attache explain`: why every effective field of a route rule has its
//! value, and which contributions lost.

use std::fmt::Write as _;
use std::process::ExitCode;

use attache_core::explain::Explanation;
use attache_core::topology::ObjectKey;

use super::parse_key;
use super::{CliError, InputArgs};
use crate::output::{pretty_json, print_stdout, report};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned columns for people.
    Table,
    /// A JSON array of explanations for tools.
    Json,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  attache explain -f examples/shop/ --route shop/orders
  attache explain -f examples/shop/ --route shop/storefront --rule pages -o json | jq '.[0].lost'

Each field shows its value and who supplied it (policy or the rule's own
value) at which level; the lines under it show the contributions that lost and
why (a default never replaces a value set lower; an override at a less specific
level beats everything below it).")]
pub struct Args {
    #[command(flatten)]
    pub input: InputArgs,
    /// The HTTPRoute whose rules to explain (a child route reached through delegation works too).
    #[arg(long, value_name = "NS/NAME", value_parser = parse_key)]
    pub route: ObjectKey,
    /// Only this rule: its name, or its zero-based index when unnamed.
    #[arg(long, value_name = "RULE")]
    pub rule: Option<String>,
    /// Only this listener.
    #[arg(long, value_name = "NAME")]
    pub listener: Option<String>,
    /// The Gateway; may be left out when the input has exactly one.
    #[arg(long, value_name = "NS/NAME", value_parser = parse_key)]
    pub gateway: Option<ObjectKey>,
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Table)]
    pub output: Format,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let inputs = args.input.load(Default::default())?;
    let gateway = attache_core::select_gateway(&inputs, args.gateway.as_ref())?;
    let resolved = attache_core::resolve(&inputs, &gateway)?;
    report(&inputs, &resolved.diagnostics);
    let route = args.route.to_string();
    let explained = attache_core::explain_route(&inputs, &gateway, &args.route)?;
    let chosen: Vec<&Explanation> = explained
        .iter()
        .filter(|e| args.rule.as_ref().is_none_or(|r| *r == e.rule))
        .filter(|e| args.listener.as_ref().is_none_or(|l| *l == e.listener))
        .collect();
    if chosen.is_empty() {
        let mut wanted = format!("HTTPRoute {route}");
        if let Some(rule) = &args.rule {
            let _ = write!(wanted, " rule {rule}");
        }
        if let Some(listener) = &args.listener {
            let _ = write!(wanted, " on listener {listener}");
        }
        let names: Vec<&str> = resolved
            .resolution
            .document
            .routes
            .iter()
            .map(|e| e.name.as_str())
            .collect();
        return Err(CliError::NoSuchEntry {
            wanted,
            gateway: gateway.to_string(),
            available: if names.is_empty() {
                "none".into()
            } else {
                names.join(", ")
            },
        });
    }
    let text = match args.output {
        Format::Json => pretty_json(&chosen)?,
        Format::Table => chosen
            .iter()
            .map(|e| table(e))
            .collect::<Vec<_>>()
            .join("\n"),
    };
    print_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// `RoutePolicy shop/fast (defaults @ HTTPRoute shop/api)`; a rule's own
/// value is its own level, so it reads `HTTPRoute shop/api rule 0 (inline)`.
fn supplier(s: &attache_core::supplier::SupplierView) -> String {
    if s.role.starts_with("inline") {
        format!("{} ({})", s.source, s.role)
    } else {
        format!("{} ({} @ {})", s.source, s.role, s.level)
    }
}

/// One entry as aligned columns: FIELD | VALUE | FROM, with the losers of a
/// field indented under it.
fn table(e: &Explanation) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", e.entry);
    let _ = write!(
        out,
        "  listener {}, HTTPRoute {} rule {}",
        e.listener, e.route, e.rule
    );
    if !e.via.is_empty() {
        let _ = write!(out, ", via {}", e.via.join(" > "));
    }
    out.push('\n');
    let mut fields: Vec<&str> = e.fields.iter().map(|f| f.field.as_str()).collect();
    for l in &e.lost {
        if !fields.contains(&l.field.as_str()) {
            fields.push(&l.field);
        }
    }
    fields.sort();
    if fields.is_empty() {
        out.push_str("  (no timeouts, retries or header changes apply)\n");
        for note in &e.notes {
            let _ = writeln!(out, "  note: {note}");
        }
        return out;
    }
    let mut rows: Vec<[String; 3]> = vec![[
        "FIELD".into(),
        "VALUE".into(),
        "FROM (policy, role @ level)".into(),
    ]];
    let mut lost_lines: Vec<Vec<String>> = vec![Vec::new()];
    for field in fields {
        let effective = e.fields.iter().find(|f| f.field == field);
        let (value, from) = match effective {
            Some(f) => (
                f.value.clone(),
                f.from.iter().map(supplier).collect::<Vec<_>>().join(" + "),
            ),
            None => ("(unset)".into(), "-".into()),
        };
        rows.push([field.to_string(), value, from]);
        lost_lines.push(
            e.lost
                .iter()
                .filter(|l| l.field == field)
                .map(|l| format!("lost: {} from {}: {}", l.value, supplier(&l.source), l.why))
                .collect(),
        );
    }
    let w0 = rows.iter().map(|r| r[0].len()).max().unwrap_or(0);
    let w1 = rows.iter().map(|r| r[1].len()).max().unwrap_or(0);
    for (row, lost) in rows.iter().zip(&lost_lines) {
        let _ = writeln!(out, "  {:<w0$}  {:<w1$}  {}", row[0], row[1], row[2]);
        for line in lost {
            let _ = writeln!(out, "  {:<w0$}  {}", "", line);
        }
    }
    for note in &e.notes {
        let _ = writeln!(out, "  note: {note}");
    }
    out
}
