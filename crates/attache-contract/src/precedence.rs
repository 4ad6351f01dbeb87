//! Gateway API match precedence: which of two rules' matches wins when both
//! match a request. The one definition: the renderer orders Envoy's routes
//! by it (Envoy takes the first route that matches) and the filter's
//! fallback matching orders its candidates by it, so the two cannot disagree.

use std::cmp::Reverse;

use crate::{HttpRouteMatch, PathMatch, PathMatchType};

/// Gateway API precedence of one match, smaller first. Ties keep document
/// order (the caller's stable sort), which the resolver gives as the spec's
/// tie-breakers: oldest route, then namespace/name, then rule order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct MatchPrecedence {
    /// 0 exact, 1 prefix, 2 regular expression (implementation-specific in
    /// Gateway API; Attaché puts it after every prefix).
    path_kind: u8,
    /// Longer prefixes first.
    path_length: Reverse<usize>,
    /// A match with a method first.
    no_method: bool,
    headers: Reverse<usize>,
    query_params: Reverse<usize>,
}

impl MatchPrecedence {
    pub fn of(m: Option<&HttpRouteMatch>) -> Self {
        let path = m.and_then(|m| m.path.as_ref());
        let (path_kind, path_length) = match path {
            Some(PathMatch {
                kind: PathMatchType::Exact,
                value,
            }) => (0, value.len()),
            Some(PathMatch {
                kind: PathMatchType::PathPrefix,
                value,
            }) => (1, value.trim_end_matches('/').len()),
            Some(PathMatch {
                kind: PathMatchType::RegularExpression,
                ..
            }) => (2, 0),
            None => (1, 0),
        };
        MatchPrecedence {
            path_kind,
            path_length: Reverse(path_length),
            no_method: m.is_none_or(|m| m.method.is_none()),
            headers: Reverse(m.map_or(0, |m| m.headers.len())),
            query_params: Reverse(m.map_or(0, |m| m.query_params.len())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{HeaderMatch, QueryParamMatch, StringMatchType};

    fn path(kind: PathMatchType, value: &str) -> HttpRouteMatch {
        HttpRouteMatch {
            path: Some(PathMatch {
                kind,
                value: value.into(),
            }),
            ..HttpRouteMatch::default()
        }
    }

    #[test]
    fn precedence_orders_exact_then_longest_prefix_then_regex_then_method_headers_query() {
        let with = |mut m: HttpRouteMatch, f: &dyn Fn(&mut HttpRouteMatch)| {
            f(&mut m);
            m
        };
        let header = HeaderMatch {
            kind: StringMatchType::Exact,
            name: "a".into(),
            value: "1".into(),
        };
        let query = QueryParamMatch {
            kind: StringMatchType::Exact,
            name: "q".into(),
            value: "1".into(),
        };
        let mut cases = [
            ("regex", path(PathMatchType::RegularExpression, "/.*")),
            ("root", path(PathMatchType::PathPrefix, "/")),
            ("short prefix", path(PathMatchType::PathPrefix, "/a")),
            (
                "long prefix with trailing slash",
                path(PathMatchType::PathPrefix, "/abc/"),
            ),
            (
                "prefix + query",
                with(path(PathMatchType::PathPrefix, "/a"), &|m| {
                    m.query_params.push(query.clone())
                }),
            ),
            (
                "prefix + header",
                with(path(PathMatchType::PathPrefix, "/a"), &|m| {
                    m.headers.push(header.clone())
                }),
            ),
            (
                "prefix + method",
                with(path(PathMatchType::PathPrefix, "/a"), &|m| {
                    m.method = Some("GET".into())
                }),
            ),
            ("exact short", path(PathMatchType::Exact, "/")),
        ];
        cases.sort_by_key(|(_, m)| MatchPrecedence::of(Some(m)));
        let order: Vec<&str> = cases.iter().map(|(name, _)| *name).collect();
        assert_eq!(
            order,
            [
                "exact short",
                "long prefix with trailing slash",
                "prefix + method",
                "prefix + header",
                "prefix + query",
                "short prefix",
                "root",
                "regex"
            ]
        );
        assert_eq!(
            MatchPrecedence::of(None),
            MatchPrecedence::of(Some(&path(PathMatchType::PathPrefix, "/")))
        );
    }
}
