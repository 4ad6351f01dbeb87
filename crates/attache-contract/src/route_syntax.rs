//! What a route's hostnames and matches must look like for the filter to
//! take the document, and how hostnames match and rank: the one definition
//! of these rules. The filter refuses a document that breaks them (it
//! compiles its fallback table with them), so the resolver checks every
//! HTTPRoute with [`check_match`] and [`is_hostname`] first and refuses the
//! route alone, naming the field. The renderer and the filter's fallback
//! rank hostnames with [`hostname_rank`] and match wildcards with
//! [`wildcard_suffix`].
//!
//! Regular expressions are compiled by the caller (the filter's regex crate
//! is in the `.wasm`; the contract stays serde-only) as [`anchored`] with
//! [`REGEX_SIZE_LIMIT`].

use crate::safety::is_token;
use crate::{HttpRouteMatch, PathMatchType, StringMatchType};

/// Gateway API `Hostname`: a DNS name, optionally with a leading `*.`
/// wildcard label. Upper case is accepted (names are compared lower-cased).
pub fn is_hostname(s: &str) -> bool {
    let name = s.strip_prefix("*.").unwrap_or(s).as_bytes();
    if name.is_empty() || name.len() > 253 {
        return false;
    }
    // One pass over the bytes: every label 1-63 letters, digits or `-`, not
    // starting or ending with `-`. (The filter checks each group's hostnames
    // at load: splitting cost about 900 instructions a name.)
    let (mut label, mut last) = (0usize, b'.');
    for &b in name {
        if b == b'.' {
            if label == 0 || last == b'-' {
                return false;
            }
            label = 0;
        } else {
            let starts_with_hyphen = label == 0 && b == b'-';
            if !LABEL_BYTES[usize::from(b)] || starts_with_hyphen || label == 63 {
                return false;
            }
            label += 1;
        }
        last = b;
    }
    label != 0 && last != b'-'
}

/// The bytes of a hostname label: letters, digits and `-`, by one look-up.
const LABEL_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = (b as u8).is_ascii_alphanumeric() || b == b'-' as usize;
        b += 1;
    }
    table
};

/// The suffix a wildcard hostname matches (`.example.com` for
/// `*.example.com`); None for an exact name.
pub fn wildcard_suffix(hostname: &str) -> Option<&str> {
    hostname.strip_prefix('*')
}

/// Whether `name` ends in wildcard `suffix` with at least one label before
/// it: `*.example.com` matches `a.example.com` (and `*.a.example.com`), not
/// `example.com` (Gateway API wildcards need one more label).
pub fn suffix_matches(suffix: &str, name: &str) -> bool {
    name.len() > suffix.len() && name.ends_with(suffix)
}

/// Gateway API hostname precedence, larger is more specific: an exact name
/// before a wildcard, a longer one before a shorter one, and no hostname
/// ("any") last. The wildcard's length counts its suffix (`.example.com`).
pub fn hostname_rank(hostname: Option<&str>) -> (u8, usize) {
    match hostname {
        Some(h) => match wildcard_suffix(h) {
            Some(suffix) => (RANK_WILDCARD, suffix.len()),
            None => (RANK_EXACT, h.len()),
        },
        None => (RANK_ANY, 0),
    }
}

/// The classes of [`hostname_rank`], for a caller that keeps a wildcard as
/// its suffix.
pub const RANK_EXACT: u8 = 2;
pub const RANK_WILDCARD: u8 = 1;
pub const RANK_ANY: u8 = 0;

/// The program-size bound every route regex compiles under: a hostile or
/// mistaken pattern cannot make configuration or matching expensive.
pub const REGEX_SIZE_LIMIT: usize = 256 * 1024;

/// `pattern` anchored to match the whole value, as Envoy's `safe_regex`
/// does. The non-capturing group keeps an alternation (`a|b`) inside.
pub fn anchored(pattern: &str) -> String {
    format!("^(?:{pattern})$")
}

/// Why one `HTTPRouteMatch` would be refused: the field (relative to the
/// match), what is wrong, and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchRefusal {
    pub field: String,
    pub message: String,
    pub hint: &'static str,
}

/// Why a caller's engine refuses a regex.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegexProblem {
    /// It does not parse (the engine's message).
    Syntax(String),
    /// RE2 would compile it into a program of `size` instructions, over the
    /// `limit` Envoy accepts: Envoy would refuse the route configuration.
    TooLarge { size: usize, limit: usize },
}

/// Checks one match as the filter compiles it, in its order: the path
/// (a regex that compiles, else a value starting with `/`), the method (a
/// token), each header (a token name, a value regex that compiles) and
/// each query parameter's value regex. `compile` compiles a regex (the
/// caller's engine, with [`anchored`] and [`REGEX_SIZE_LIMIT`]) and, where
/// the caller renders for Envoy, checks RE2's program size. An empty regex
/// is refused here: Envoy's `RegexMatcher.regex` has `min_len: 1`.
pub fn check_match(
    m: &HttpRouteMatch,
    compile: impl Fn(&str) -> Result<(), RegexProblem>,
) -> Result<(), MatchRefusal> {
    let refuse = |field: String, message: String, hint: &'static str| MatchRefusal {
        field,
        message,
        hint,
    };
    let regex = |field: String, value: &str| {
        if value.is_empty() {
            return Err(refuse(
                field,
                "the regex is empty".into(),
                "Envoy refuses an empty regex; write one that matches what you mean, e.g. .*",
            ));
        }
        compile(value).map_err(|problem| match problem {
            RegexProblem::Syntax(e) => refuse(
                field,
                format!("regex {value:?} does not parse: {e}"),
                "use RE2 syntax without Unicode classes (the filter's regex engine)",
            ),
            RegexProblem::TooLarge { size, limit } => refuse(
                field,
                format!(
                    "regex {value:?} compiles to an RE2 program of about {size} instructions; \
                     Envoy refuses more than {limit}"
                ),
                "simplify it: smaller {n} counts, fewer alternatives or Unicode classes, \
                 or exact and prefix matches",
            ),
        })
    };
    if let Some(g) = &m.grpc_method {
        // The user wrote a method match (`method` in a GRPCRoute): its
        // problems, and those of the path it stands for, are named there.
        check_grpc(m, g).map_err(|(field, message, hint)| refuse(field.into(), message, hint))?;
        if let Some(p) = g.path_match() {
            if p.kind == PathMatchType::RegularExpression {
                regex("method".into(), &p.value)?;
            }
        }
    } else if let Some(p) = &m.path {
        if p.kind == PathMatchType::RegularExpression {
            regex("path.value".into(), &p.value)?;
        } else if !p.value.starts_with('/') {
            return Err(refuse(
                "path.value".into(),
                format!("path {:?} does not start with /", p.value),
                "write the path from the root, e.g. /api",
            ));
        }
    }
    if let Some(method) = &m.method {
        if !is_token(method) {
            return Err(refuse(
                "method".into(),
                format!("method {method:?} is not an HTTP token"),
                "use a method name such as GET",
            ));
        }
    }
    for (i, h) in m.headers.iter().enumerate() {
        if !is_token(&h.name) {
            return Err(refuse(
                format!("headers[{i}].name"),
                format!("header name {:?} is not an HTTP token", h.name),
                "use a header name of letters, digits and -",
            ));
        }
        if h.kind == StringMatchType::RegularExpression {
            regex(format!("headers[{i}].value"), &h.value)?;
        }
    }
    for (i, q) in m.query_params.iter().enumerate() {
        if q.kind == StringMatchType::RegularExpression {
            regex(format!("queryParams[{i}].value"), &q.value)?;
        }
    }
    Ok(())
}

/// A gRPC method match: instead of a path, at least one of service and
/// method, and for `Exact` Gateway API's names (so that the path it stands
/// for, [`crate::grpc::GrpcMethodMatch::path_match`], needs no escaping).
fn check_grpc(
    m: &HttpRouteMatch,
    g: &crate::GrpcMethodMatch,
) -> Result<(), (&'static str, String, &'static str)> {
    if m.path.is_some() {
        return Err((
            "grpcMethod",
            "a match has a path and a gRPC method".into(),
            "a GRPCRoute match names a service and method, an HTTPRoute match a path",
        ));
    }
    if g.service.is_none() && g.method.is_none() {
        return Err((
            "method",
            "a gRPC method match names neither service nor method".into(),
            "set service, method or both (or leave method out to match every call)",
        ));
    }
    if g.kind == StringMatchType::Exact {
        if let Some(s) = g
            .service
            .as_deref()
            .filter(|s| !crate::grpc::is_service_name(s))
        {
            return Err((
                "method.service",
                format!("service {s:?} is not a gRPC service name"),
                "write a dotted name such as shop.v1.Cart, or use type RegularExpression",
            ));
        }
        if let Some(name) = g
            .method
            .as_deref()
            .filter(|m| !crate::grpc::is_method_name(m))
        {
            return Err((
                "method.method",
                format!("method {name:?} is not a gRPC method name"),
                "write a name of letters, digits and _ such as GetItem, or use type RegularExpression",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{HeaderMatch, PathMatch};

    /// `is_hostname` as Gateway API words it, label by label: the one-pass
    /// check must agree with it on every string.
    fn is_hostname_by_labels(s: &str) -> bool {
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

    #[test]
    fn the_one_pass_hostname_check_agrees_with_the_label_by_label_one() {
        let pieces = ["a", "Z9", "-", ".", "*.", "*", "é", "_", "x-y"];
        // Every string of up to five pieces.
        let mut strings = vec![String::new()];
        for _ in 0..5 {
            let longer: Vec<String> = strings
                .iter()
                .flat_map(|s| pieces.iter().map(move |p| format!("{s}{p}")))
                .collect();
            strings.extend(longer);
        }
        // Labels and names at and past their bounds.
        for n in [62, 63, 64] {
            strings.push("a".repeat(n));
            strings.push(format!("b.{}.c", "a".repeat(n)));
            strings.push(format!("*.{}", "a".repeat(n)));
        }
        let label = "a".repeat(63);
        for extra in 0..4 {
            let name = format!("{label}.{label}.{label}.{}", "b".repeat(59 + extra));
            strings.push(name.clone());
            strings.push(format!("*.{name}"));
        }
        for s in &strings {
            assert_eq!(is_hostname(s), is_hostname_by_labels(s), "{s:?}");
        }
    }

    #[test]
    fn hostnames() {
        assert!(is_hostname("shop.example.com"));
        assert!(is_hostname("*.example.com"));
        assert!(!is_hostname("*"));
        assert!(!is_hostname("a.*.com"));
        assert!(!is_hostname("exa mple.com"));
        assert!(!is_hostname("shop.example.com:8080"));
    }

    #[test]
    fn a_wildcard_needs_one_more_label_and_exact_names_rank_first() {
        let suffix = wildcard_suffix("*.example.com").unwrap();
        assert!(suffix_matches(suffix, "a.example.com"));
        assert!(!suffix_matches(suffix, "example.com"));
        assert_eq!(wildcard_suffix("example.com"), None);
        assert!(hostname_rank(Some("a.example.com")) > hostname_rank(Some("*.example.com")));
        assert!(hostname_rank(Some("*.a.example.com")) > hostname_rank(Some("*.example.com")));
        assert!(hostname_rank(Some("*.example.com")) > hostname_rank(None));
    }

    #[test]
    fn each_refusal_names_its_field() {
        let ok = |_: &str| Ok(());
        let bad_path = HttpRouteMatch {
            path: Some(PathMatch {
                kind: PathMatchType::PathPrefix,
                value: "api".into(),
            }),
            ..HttpRouteMatch::default()
        };
        assert_eq!(check_match(&bad_path, ok).unwrap_err().field, "path.value");
        let bad_header = HttpRouteMatch {
            headers: vec![HeaderMatch {
                kind: StringMatchType::RegularExpression,
                name: "x-a".into(),
                value: "(".into(),
            }],
            ..HttpRouteMatch::default()
        };
        let refused = check_match(&bad_header, |_| {
            Err(RegexProblem::Syntax("unclosed group".into()))
        })
        .unwrap_err();
        assert_eq!(refused.field, "headers[0].value");
        assert!(check_match(&HttpRouteMatch::default(), ok).is_ok());
    }
}
