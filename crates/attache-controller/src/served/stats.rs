//! What a proxy says it serves, read from its Prometheus text exposition
//! (Envoy's `/stats/prometheus`, or Istio's merged endpoint on 15020): the
//! filter's gauge `attache.config.document_id` and its refusal counters
//! (docs/filter.md, "What it serves"). Pure: the bytes come from the
//! scrape (`crate::kube::scrape`).

/// The gauge, as Envoy names it in the exposition.
pub const DOCUMENT_ID: &str = "attache_config_document_id";
/// The refusal counters: this prefix, then the class.
pub const REJECTED: &str = "attache_configs_rejected_";
/// What Envoy puts in front of the dynamic module's stats in the exposition
/// (`envoy_dynamicmodulescustom_attache_config_document_id`, read from Envoy
/// 1.40's `/stats/prometheus`); the `.wasm`'s come without a prefix.
pub const MODULE_PREFIX: &str = "envoy_dynamicmodulescustom_";

/// The filter's classes of refusal, in the order [`Refusals`] keeps them
/// (`attache_filter::RefusalClass`).
pub const CLASSES: [&str; 4] = ["syntax", "schema", "encoding", "invalid"];

/// Refused documents per class, as counted since the proxy started.
pub type Refusals = [u64; CLASSES.len()];

/// One proxy's figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProxyStats {
    /// The document it serves; `None` when the exposition has no such
    /// gauge (no Attaché filter loaded in it), `Some(0)` before any
    /// document was accepted.
    pub document: Option<u64>,
    pub refused: Refusals,
}

/// The longest line read; a longer one (no sample of ours is near it)
/// is skipped, so that memory stays bounded whatever a pod answers.
pub const MAX_LINE: usize = 4096;

/// Reads the figures from an exposition. Lines it does not know are
/// skipped; a value that is not a whole number below 2^53 is ignored (a
/// document identity has 52 bits, attache_contract::document_id).
pub fn parse(text: &str) -> ProxyStats {
    let mut reader = Reader::default();
    reader.feed(text.as_bytes());
    reader.finish()
}

/// [`parse`] as the body arrives, a piece at a time: it holds one line at
/// most ([`MAX_LINE`]), not the body.
#[derive(Debug, Default)]
pub struct Reader {
    stats: ProxyStats,
    line: Vec<u8>,
    overlong: bool,
}

impl Reader {
    pub fn feed(&mut self, mut bytes: &[u8]) {
        while let Some(end) = bytes.iter().position(|b| *b == b'\n') {
            let (head, rest) = bytes.split_at(end);
            self.push(head);
            self.end_line();
            bytes = rest.get(1..).unwrap_or_default();
        }
        self.push(bytes);
    }

    pub fn finish(mut self) -> ProxyStats {
        self.end_line();
        self.stats
    }

    fn push(&mut self, part: &[u8]) {
        if self.overlong {
            return;
        }
        if self.line.len() + part.len() > MAX_LINE {
            self.overlong = true;
            self.line.clear();
        } else {
            self.line.extend_from_slice(part);
        }
    }

    fn end_line(&mut self) {
        if !self.overlong {
            if let Ok(text) = std::str::from_utf8(&self.line) {
                take(&mut self.stats, text);
            }
        }
        self.line.clear();
        self.overlong = false;
    }
}

fn take(stats: &mut ProxyStats, line: &str) {
    let Some((name, value)) = sample(line) else {
        return;
    };
    // Either build of the filter publishes the same figures.
    let name = name.strip_prefix(MODULE_PREFIX).unwrap_or(name);
    if name == DOCUMENT_ID {
        // Several series of it (tags added by a mesh) say the same; the
        // first is taken.
        if stats.document.is_none() {
            stats.document = value;
        }
    } else if let Some(class) = name.strip_prefix(REJECTED) {
        let slot = CLASSES.iter().position(|c| *c == class);
        if let (Some(slot), Some(value)) = (slot, value) {
            if let Some(count) = stats.refused.get_mut(slot) {
                *count = count.saturating_add(value);
            }
        }
    }
}

/// A sample line's metric name and value: `name{labels} value [timestamp]`
/// or `name value`; comments and blank lines are none.
fn sample(line: &str) -> Option<(&str, Option<u64>)> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let name_end = line.find(|c: char| c == '{' || c.is_whitespace())?;
    let name = line.get(..name_end)?;
    let rest = line.get(name_end..)?;
    // Label values may hold spaces: the value follows the closing brace.
    let rest = match rest.strip_prefix('{') {
        Some(labels) => labels.get(labels.rfind('}')? + 1..)?,
        None => rest,
    };
    let value = rest.split_whitespace().next()?;
    Some((name, whole(value)))
}

/// A whole number below 2^53, written as Envoy writes it (`123`) or as a
/// Prometheus merge may (`1.23e+15`, `123.0`).
fn whole(value: &str) -> Option<u64> {
    if let Ok(n) = value.parse::<u64>() {
        return (n < 1 << 53).then_some(n);
    }
    let f = value.parse::<f64>().ok()?;
    let exact = f.is_finite() && f >= 0.0 && f.fract() == 0.0 && f < 9_007_199_254_740_992.0;
    exact.then_some(f as u64)
}

#[cfg(test)]
mod tests {
    use super::{parse, ProxyStats, Reader, MAX_LINE};

    #[test]
    fn reads_envoys_exposition_and_skips_the_rest() {
        let text = "\
# TYPE attache_configs_rejected_invalid counter
attache_configs_rejected_invalid{} 4
attache_configs_rejected_schema{} 1
attache_configs_rejected{} 5
attache_configs_rejected_other{} 9
# TYPE attache_config_document_id gauge
attache_config_document_id{} 3141592653589793
envoy_server_live{} 1
";
        assert_eq!(
            parse(text),
            ProxyStats {
                document: Some(3_141_592_653_589_793),
                refused: [0, 1, 0, 4],
            }
        );
    }

    #[test]
    fn reads_the_dynamic_modules_figures_too() {
        let text = "# TYPE envoy_dynamicmodulescustom_attache_config_document_id gauge\n\
                    envoy_dynamicmodulescustom_attache_config_document_id{} 1683445577616688\n\
                    envoy_dynamicmodulescustom_attache_configs_rejected_schema{} 2\n\
                    other_prefix_attache_config_document_id{} 7\n";
        let stats = parse(text);
        assert_eq!(stats.document, Some(1_683_445_577_616_688));
        assert_eq!(stats.refused, [0, 2, 0, 0]);
    }

    #[test]
    fn reads_merged_forms_labels_and_doubles() {
        let text = "attache_config_document_id{pod=\"a b}\",x=\"y\"} 1.5e+3 1700000000\n\
                    attache_configs_rejected_syntax 2.0\n";
        assert_eq!(
            parse(text),
            ProxyStats {
                document: Some(1500),
                refused: [2, 0, 0, 0],
            }
        );
    }

    #[test]
    fn garbage_and_unrepresentable_values_read_as_nothing() {
        for text in [
            "",
            "garbage\n{{{}\n",
            "attache_config_document_id{} NaN",
            "attache_config_document_id{} -1",
            "attache_config_document_id{} 1.5",
            "attache_config_document_id{} 9007199254740993",
            "attache_config_document_id{unclosed 7",
        ] {
            assert_eq!(parse(text), ProxyStats::default(), "{text:?}");
        }
        let none_yet = parse("attache_config_document_id{} 0");
        assert_eq!(none_yet.document, Some(0));
    }

    #[test]
    fn a_body_in_any_pieces_reads_the_same_and_overlong_lines_are_skipped() {
        let text = format!(
            "# {}\nattache_config_document_id{{}} 77\nenvoy_x {}\nattache_configs_rejected_encoding 3",
            "c".repeat(MAX_LINE * 2),
            "9".repeat(MAX_LINE)
        );
        let whole = parse(&text);
        assert_eq!(whole.document, Some(77));
        assert_eq!(whole.refused, [0, 0, 3, 0]);
        for size in [1, 7, 4096, 5000] {
            let mut reader = Reader::default();
            for piece in text.as_bytes().chunks(size) {
                reader.feed(piece);
            }
            assert_eq!(reader.finish(), whole, "pieces of {size}");
        }
    }
}
