//! Lexical checks for values the filter hands to Envoy or compares with
//! requests. Envoy rejects (or worse, splits) headers that break these rules,
//! so they are refused at configure time instead of failing per request.

/// RFC 9110 `token`: header names and methods. One definition, shared with
/// the resolver (`attache_contract::safety`).
pub use attache_contract::safety::is_token;

/// Gateway API `Hostname`: a lower-case DNS name, optionally with a leading
/// `*.` wildcard label. Upper-case is accepted here and lowered by the caller.
pub fn is_hostname(s: &str) -> bool {
    let name = s.strip_prefix("*.").unwrap_or(s);
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// An Envoy `retry_on` trigger travels in a comma-separated header, so it must
/// be a token (which excludes commas and spaces).
pub fn is_retry_trigger(s: &str) -> bool {
    is_token(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens() {
        assert!(is_token("x-request-id"));
        assert!(is_token("X_Custom.1~"));
        assert!(!is_token(""));
        assert!(!is_token(":path"));
        assert!(!is_token("a b"));
        assert!(!is_token("a,b"));
        assert!(!is_token("é"));
    }

    #[test]
    fn hostnames() {
        assert!(is_hostname("shop.example.com"));
        assert!(is_hostname("*.example.com"));
        assert!(is_hostname("localhost"));
        assert!(!is_hostname("*"));
        assert!(!is_hostname("a.*.com"));
        assert!(!is_hostname("exa mple.com"));
        assert!(!is_hostname("-a.com"));
        assert!(!is_hostname("a..com"));
        assert!(!is_hostname("shop.example.com:8080"));
    }
}
