//! `attache explain` for people: one block per field, as the policy that set
//! it writes it (`timeouts.request: 15s`), who set it, and who lost and why.

use std::fmt::Write as _;

use attache_core::explain::{ExplainedField, Explanation, LostContribution};
use attache_core::supplier::SupplierView;

use crate::cmd::wrap::wrap;

/// `RoutePolicy shop/fast (defaults @ HTTPRoute shop/api)`; a rule's own
/// value is its own level, so it reads `HTTPRoute shop/api rule 0 (inline)`.
fn supplier(s: &SupplierView) -> String {
    if s.role.starts_with("inline") {
        format!("{} ({})", s.source, s.role)
    } else {
        format!("{} ({} @ {})", s.source, s.role, s.level)
    }
}

/// One field: its effective value (if any) and the contributions that lost.
struct Row<'a> {
    field: &'a str,
    effective: Option<&'a ExplainedField>,
    lost: Vec<&'a LostContribution>,
}

/// The fields in the resolver's order (timeouts, retry, headers), then
/// fields that only lost.
fn rows(e: &Explanation) -> Vec<Row<'_>> {
    let mut rows: Vec<Row<'_>> = e
        .fields
        .iter()
        .map(|f| Row {
            field: &f.field,
            effective: Some(f),
            lost: Vec::new(),
        })
        .collect();
    for l in &e.lost {
        match rows.iter_mut().find(|r| r.field == l.field) {
            Some(row) => row.lost.push(l),
            None => rows.push(Row {
                field: &l.field,
                effective: None,
                lost: vec![l],
            }),
        }
    }
    rows
}

/// One entry, each line wrapped to `width` (none: one line per fact).
pub fn render(e: &Explanation, width: Option<usize>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", e.entry);
    let of_set = e
        .listener_set
        .as_ref()
        .map(|s| format!(" of {s}"))
        .unwrap_or_default();
    let mut head = format!(
        "listener {}{of_set}, {} {} rule {}",
        e.listener,
        e.route_kind_name(),
        e.route,
        e.rule
    );
    if !e.via.is_empty() {
        let _ = write!(head, ", via {}", e.via.join(" > "));
    }
    out.push_str(&wrap(&head, width, "  ", "    "));
    let rows = rows(e);
    if rows.is_empty() {
        out.push_str("  (no timeouts, retries or header changes apply)\n");
    }
    for row in rows {
        let path = match (row.effective, row.lost.first()) {
            (Some(f), _) => {
                let line = format!("{}: {}", f.written.path, f.written.value);
                out.push_str(&wrap(&line, width, "  ", "      "));
                let from: Vec<String> = f.from.iter().map(supplier).collect();
                out.push_str(&wrap(
                    &format!("from {}", from.join(" + ")),
                    width,
                    "    ",
                    "      ",
                ));
                f.written.path.as_str()
            }
            (None, Some(l)) => {
                out.push_str(&wrap(
                    &format!("{}: (unset)", l.written.path),
                    width,
                    "  ",
                    "      ",
                ));
                l.written.path.as_str()
            }
            (None, None) => continue,
        };
        for l in &row.lost {
            // The loser's own path only when its kind writes it otherwise.
            let what = if l.written.path == path {
                l.written.value.clone()
            } else {
                format!("{}: {}", l.written.path, l.written.value)
            };
            let line = format!("lost {what} from {}: {}", supplier(&l.source), l.why);
            out.push_str(&wrap(&line, width, "    ", "      "));
        }
    }
    for note in &e.notes {
        out.push_str(&wrap(&format!("note: {note}"), width, "  ", "    "));
    }
    out
}
