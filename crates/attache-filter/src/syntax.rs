//! Lexical checks for values the filter hands to Envoy or compares with
//! requests. Envoy rejects (or worse, splits) headers that break these rules,
//! so they are refused at configure time instead of failing per request.

/// RFC 9110 `token`: header names and methods. One definition, shared with
/// the resolver (`attache_contract::safety`).
pub use attache_contract::safety::is_token;

/// Gateway API `Hostname`: one definition, shared with the resolver
/// (`attache_contract::route_syntax`).
pub use attache_contract::route_syntax::is_hostname;

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
}
