//! Text for people, wrapped to the terminal: `COLUMNS` when set (as `ls`
//! and clap read it), else the width of the terminal standard output is
//! on, else no wrapping at all, so that a pipe or a file gets one line per
//! fact for grep (docs/cli.md).

use std::io::IsTerminal;

/// The width to wrap at, or `None` for no wrapping.
pub fn width() -> Option<usize> {
    if let Some(cols) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|c| *c > 0)
    {
        return Some(cols);
    }
    if !std::io::stdout().is_terminal() {
        return None;
    }
    terminal_size::terminal_size().map(|(terminal_size::Width(w), _)| usize::from(w))
}

/// `text` as lines of at most `width` characters, the first starting with
/// `first` and the others with `rest` (a hanging indent). Words are never
/// split: one longer than the line gets a line of its own.
pub fn wrap(text: &str, width: Option<usize>, first: &str, rest: &str) -> String {
    let Some(width) = width else {
        return format!("{first}{text}\n");
    };
    let mut out = String::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let len = line.chars().count();
        if !empty && len + 1 + word.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line = rest.to_string();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(&line);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn wraps_at_the_width_with_a_hanging_indent() {
        let text = "lost 30s from ClusterRoutePolicy platform-guardrails (defaults @ GatewayClass attache)";
        assert_eq!(
            wrap(text, Some(40), "    ", "      "),
            "    lost 30s from ClusterRoutePolicy\n      platform-guardrails (defaults @\n      GatewayClass attache)\n"
        );
        assert_eq!(wrap(text, None, "  ", "    "), format!("  {text}\n"));
        // A word longer than the line is kept whole on a line of its own.
        assert_eq!(
            wrap("a bbbbbbbbbb c", Some(5), "", " "),
            "a\n bbbbbbbbbb\n c\n"
        );
    }
}
