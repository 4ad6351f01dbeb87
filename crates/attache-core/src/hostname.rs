//! Hostname intersection as Gateway API defines it: a wildcard `*.example.com`
//! matches one or more labels in front of `.example.com`, and the more
//! specific of two matching names is the one that applies.

use crate::contract::route_syntax;

/// The intersection of two hostnames, or `None` when they share no host.
pub fn intersect(a: &str, b: &str) -> Option<String> {
    if a == b {
        return Some(a.to_string());
    }
    if covers(a, b) {
        return Some(b.to_string());
    }
    if covers(b, a) {
        return Some(a.to_string());
    }
    None
}

/// Whether wildcard `pattern` matches every host `name` stands for.
fn covers(pattern: &str, name: &str) -> bool {
    route_syntax::wildcard_suffix(pattern)
        .is_some_and(|suffix| suffix.starts_with('.') && route_syntax::suffix_matches(suffix, name))
}

/// Intersects two hostname lists where empty means "any". `None` when both
/// are restricted and nothing overlaps (the route does not attach).
pub fn intersect_lists(outer: &[String], inner: &[String]) -> Option<Vec<String>> {
    if outer.is_empty() {
        return Some(inner.to_vec());
    }
    if inner.is_empty() {
        return Some(outer.to_vec());
    }
    let mut out: Vec<String> = Vec::new();
    for i in inner {
        for o in outer {
            if let Some(h) = intersect(o, i) {
                if !out.contains(&h) {
                    out.push(h);
                }
            }
        }
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn wildcards_intersect_to_the_more_specific_name() {
        assert_eq!(
            intersect("*.example.com", "shop.example.com").as_deref(),
            Some("shop.example.com")
        );
        assert_eq!(
            intersect("a.b.example.com", "*.example.com").as_deref(),
            Some("a.b.example.com")
        );
        assert_eq!(
            intersect("*.example.com", "*.shop.example.com").as_deref(),
            Some("*.shop.example.com")
        );
        assert_eq!(intersect("*.example.com", "example.com"), None);
        assert_eq!(intersect("shop.example.com", "api.example.com"), None);
    }

    #[test]
    fn lists_treat_empty_as_any() {
        assert_eq!(intersect_lists(&[], &v(&["a.com"])), Some(v(&["a.com"])));
        assert_eq!(
            intersect_lists(&v(&["*.a.com"]), &[]),
            Some(v(&["*.a.com"]))
        );
        assert_eq!(
            intersect_lists(&v(&["*.a.com"]), &v(&["x.a.com", "b.com"])),
            Some(v(&["x.a.com"]))
        );
        assert_eq!(intersect_lists(&v(&["*.a.com"]), &v(&["b.com"])), None);
    }
}
