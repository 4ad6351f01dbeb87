//! Full-match regular expressions, as Envoy's `safe_regex` (RE2) matches:
//! the whole value, not a substring. regex-lite keeps the .wasm small; its
//! syntax is the RE2-like syntax of the `regex` crate minus Unicode classes
//! (docs/filter.md records the size comparison).

use regex_lite::{Regex, RegexBuilder};

/// Bounds the compiled program so that a hostile or mistaken pattern cannot
/// make configuration or matching expensive (the resolver checks routes
/// with the same bound and anchoring: `attache_contract::route_syntax`).
const SIZE_LIMIT: usize = attache_contract::route_syntax::REGEX_SIZE_LIMIT;

#[derive(Debug, Clone)]
pub struct FullMatch(Regex);

impl FullMatch {
    pub fn new(pattern: &str) -> Result<Self, regex_lite::Error> {
        // Anchoring a non-capturing group keeps alternations inside the
        // pattern (`a|b`) from escaping the anchors.
        RegexBuilder::new(&attache_contract::route_syntax::anchored(pattern))
            .size_limit(SIZE_LIMIT)
            .build()
            .map(FullMatch)
    }

    pub fn is_match(&self, value: &str) -> bool {
        self.0.is_match(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_whole_value_only() {
        let re = FullMatch::new("/api/v[0-9]+").unwrap();
        assert!(re.is_match("/api/v2"));
        assert!(!re.is_match("/api/v2/x"));
        assert!(!re.is_match("x/api/v2"));
    }

    #[test]
    fn alternation_stays_anchored() {
        let re = FullMatch::new("a|b").unwrap();
        assert!(re.is_match("a"));
        assert!(!re.is_match("ab"));
        assert!(!re.is_match("xa"));
    }

    #[test]
    fn bad_pattern_is_an_error() {
        assert!(FullMatch::new("(unclosed").is_err());
    }
}
