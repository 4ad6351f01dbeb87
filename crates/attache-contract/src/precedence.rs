//! Gateway API match precedence: which of two rules' matches wins when both
//! match a request. The one definition: the renderer orders Envoy's routes
//! by it (Envoy takes the first route that matches) and the filter's
//! fallback matching orders its candidates by it, so the two cannot disagree.

use std::cmp::Reverse;

use crate::{GrpcMethodMatch, HttpRouteMatch, PathMatch, PathMatchType, StringMatchType};

/// Gateway API precedence of one match, smaller first. Ties keep document
/// order (the caller's stable sort), which the resolver gives as the spec's
/// tie-breakers: oldest route, then namespace/name, then rule order.
///
/// Lengths and counts are `u32` (saturating; a document is at most 64 MiB):
/// the filter keeps one of these per fallback candidate, 30,000 at 10,000
/// routes, and `usize` made each 40 bytes instead of 20 natively.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct MatchPrecedence {
    /// 0 exact, 1 prefix, 2 regular expression (implementation-specific in
    /// Gateway API; Attaché puts it after every prefix).
    path_kind: u8,
    /// Longer prefixes first (for a gRPC match: the longer service).
    path_length: Reverse<u32>,
    /// A gRPC match: the longer method first (0 for an HTTPRoute match).
    grpc_method_length: Reverse<u32>,
    /// A match with a method first.
    no_method: bool,
    headers: Reverse<u32>,
    query_params: Reverse<u32>,
}

/// A length or count as [`MatchPrecedence`] keeps it.
fn most_first(n: usize) -> Reverse<u32> {
    Reverse(u32::try_from(n).unwrap_or(u32::MAX))
}

impl MatchPrecedence {
    pub fn of(m: Option<&HttpRouteMatch>) -> Self {
        if let Some((m, g)) = m.and_then(|m| Some((m, m.grpc_method.as_ref()?))) {
            return Self::of_grpc(m, g);
        }
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
            path_length: most_first(path_length),
            grpc_method_length: Reverse(0),
            no_method: m.is_none_or(|m| m.method.is_none()),
            headers: most_first(m.map_or(0, |m| m.headers.len())),
            query_params: most_first(m.map_or(0, |m| m.query_params.len())),
        }
    }
}

impl MatchPrecedence {
    /// GRPCRoute precedence (after the hostname, which the callers rank
    /// first): the most characters of a matching service, then of a
    /// matching method, then the most header matches. Among HTTPRoute
    /// matches on the same host (implementation-specific in Gateway API) a
    /// literal gRPC match ranks as a path prefix whose length is the
    /// service's (service and method: an exact path), and a regular
    /// expression after every prefix, as an HTTPRoute regex does.
    fn of_grpc(m: &HttpRouteMatch, g: &GrpcMethodMatch) -> Self {
        let (service, method) = g.precedence_lengths();
        let path_kind = match (g.kind, service, method) {
            (StringMatchType::RegularExpression, _, _) => 2,
            (_, s, m) if s > 0 && m > 0 => 0,
            _ => 1,
        };
        MatchPrecedence {
            path_kind,
            path_length: most_first(service),
            grpc_method_length: most_first(method),
            no_method: true,
            headers: most_first(m.headers.len()),
            query_params: Reverse(0),
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

    #[test]
    fn grpc_precedence_is_service_then_method_then_headers() {
        let grpc = |service: Option<&str>, method: Option<&str>, headers: usize| HttpRouteMatch {
            grpc_method: Some(GrpcMethodMatch {
                kind: StringMatchType::Exact,
                service: service.map(str::to_string),
                method: method.map(str::to_string),
            }),
            headers: (0..headers)
                .map(|i| HeaderMatch {
                    kind: StringMatchType::Exact,
                    name: format!("h{i}"),
                    value: "1".into(),
                })
                .collect(),
            ..HttpRouteMatch::default()
        };
        // Every one of these matches a call to /shop.Cart/Add.
        let mut cases = [
            ("any call", HttpRouteMatch::default()),
            ("method only", grpc(None, Some("Add"), 0)),
            ("method only + header", grpc(None, Some("Add"), 1)),
            ("service only", grpc(Some("shop.Cart"), None, 0)),
            (
                "service and method",
                grpc(Some("shop.Cart"), Some("Add"), 0),
            ),
            (
                "service and method + 2 headers",
                grpc(Some("shop.Cart"), Some("Add"), 2),
            ),
        ];
        cases.sort_by_key(|(_, m)| MatchPrecedence::of(Some(m)));
        let order: Vec<&str> = cases.iter().map(|(name, _)| *name).collect();
        assert_eq!(
            order,
            [
                "service and method + 2 headers",
                "service and method",
                "service only",
                "method only + header",
                "method only",
                "any call"
            ]
        );
    }
}
