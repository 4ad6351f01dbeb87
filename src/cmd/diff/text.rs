//! The human-readable form of a diff: a summary line, then one block per
//! entry (`+` added, `-` removed, `~` changed, with a row per field), then
//! the policies whose status changed.

use std::fmt::Write;

use attache_core::diff::{ChangeKind, Diff, FieldChange, ReasonChange};

pub fn render(diff: &Diff) -> String {
    let mut out = String::new();
    let changed_policies = diff.policies.len();
    let _ = writeln!(
        out,
        "Gateway {}: {} entries changed, {} added, {} removed; {} policy status changes",
        diff.gateway,
        diff.entries_changed.len(),
        diff.entries_added.len(),
        diff.entries_removed.len(),
        changed_policies
    );
    if diff.is_empty() {
        out.push_str("no effective change\n");
        return out;
    }
    for name in &diff.entries_added {
        let _ = writeln!(out, "\n+ {name}  (added)");
    }
    for name in &diff.entries_removed {
        let _ = writeln!(out, "\n- {name}  (removed)");
    }
    for entry in &diff.entries_changed {
        let _ = writeln!(out, "\n~ {}", entry.entry);
        let width = entry
            .fields
            .iter()
            .map(|f| f.field.len())
            .max()
            .unwrap_or(0);
        for field in &entry.fields {
            let _ = writeln!(out, "    {:width$}  {}", field.field, change_line(field));
        }
    }
    if !diff.policies.is_empty() {
        out.push_str("\npolicies\n");
        for p in &diff.policies {
            let _ = write!(
                out,
                "    {}: {}{}",
                p.policy,
                reasons(&p.accepted),
                kinds(&p.kinds)
            );
            message(&mut out, "      ", &p.accepted);
            for t in &p.targets {
                let _ = write!(out, "      {}: {}", t.target, reasons(&t.accepted));
                message(&mut out, "        ", &t.accepted);
            }
        }
    }
    out
}

/// `Accepted -> Invalid`; `still Accepted` when only a target changed.
fn reasons(change: &ReasonChange) -> String {
    let (old, new) = (
        change.old.as_deref().unwrap_or("(absent)"),
        change.new.as_deref().unwrap_or("(absent)"),
    );
    if old == new {
        format!("still {new}")
    } else {
        format!("{old} -> {new}")
    }
}

/// Ends the line; the condition's message follows on its own line unless
/// the new reason is Accepted (whose message says nothing new).
fn message(out: &mut String, indent: &str, change: &ReasonChange) {
    if !change.message.is_empty() && change.new.as_deref() != Some("Accepted") {
        let _ = write!(out, "\n{indent}{}", change.message);
    }
    out.push('\n');
}

/// `old -> new  from SOURCE  [kind]`.
fn change_line(field: &FieldChange) -> String {
    let old = field.old.as_ref().map_or("(unset)", |v| v.text.as_str());
    let new = field.new.as_ref().map_or("(unset)", |v| v.text.as_str());
    let from = field
        .source
        .as_deref()
        .map(|s| format!("  from {s}"))
        .unwrap_or_default();
    format!("{old} -> {new}{from}{}", kinds(&field.kinds))
}

fn kinds(kinds: &[ChangeKind]) -> String {
    if kinds.is_empty() {
        return String::new();
    }
    let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
    format!("  [{}]", names.join(", "))
}
