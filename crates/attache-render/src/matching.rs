//! Gateway API `HTTPRouteMatch` as an Envoy `RouteMatch`, and the Gateway
//! API precedence that decides the order of Envoy's routes (Envoy takes the
//! first route that matches, so the order *is* the precedence).

/// Gateway API match precedence: the one definition, shared with the filter's
/// fallback matching.
pub use attache_contract::precedence::MatchPrecedence as Precedence;
use attache_contract::{
    HeaderMatch, HttpRouteMatch, PathMatch, PathMatchType, QueryParamMatch, StringMatchType,
};
use serde_json::{json, Map, Value};

/// The Envoy `RouteMatch` for one Gateway API match.
pub fn route_match(m: &HttpRouteMatch) -> Value {
    let mut out = Map::new();
    // A GRPCRoute's method match stands for a path (attache_contract::grpc,
    // the same path the filter's fallback compiles).
    let (key, value) = path_specifier(m.path_match().as_deref());
    out.insert(key.to_string(), value);
    let mut headers: Vec<Value> = m.headers.iter().map(header_matcher).collect();
    if let Some(method) = &m.method {
        headers.push(json!({"name": ":method", "string_match": {"exact": method}}));
    }
    if !headers.is_empty() {
        out.insert("headers".into(), Value::Array(headers));
    }
    if !m.query_params.is_empty() {
        out.insert(
            "query_parameters".into(),
            m.query_params.iter().map(query_matcher).collect(),
        );
    }
    Value::Object(out)
}

/// The match for a rule that has none: everything.
pub fn match_all() -> Value {
    json!({"prefix": "/"})
}

fn path_specifier(path: Option<&PathMatch>) -> (&'static str, Value) {
    let Some(path) = path else {
        return ("prefix", json!("/"));
    };
    match path.kind {
        PathMatchType::Exact => ("path", json!(path.value)),
        PathMatchType::PathPrefix => {
            // Gateway API prefixes match whole segments and ignore a trailing
            // slash: `/api` and `/api/` both match `/api` and `/api/x` but not
            // `/apix`. That is Envoy's path_separated_prefix, which refuses a
            // trailing slash and has no form for the root.
            let trimmed = path.value.trim_end_matches('/');
            if trimmed.is_empty() {
                ("prefix", json!("/"))
            } else {
                ("path_separated_prefix", json!(trimmed))
            }
        }
        PathMatchType::RegularExpression => ("safe_regex", json!({"regex": path.value})),
    }
}

fn string_match(kind: StringMatchType, value: &str) -> Value {
    match kind {
        StringMatchType::Exact => json!({"exact": value}),
        StringMatchType::RegularExpression => json!({"safe_regex": {"regex": value}}),
    }
}

fn header_matcher(h: &HeaderMatch) -> Value {
    // Envoy compares header names case-insensitively only when they are
    // given lower-case.
    json!({"name": h.name.to_ascii_lowercase(), "string_match": string_match(h.kind, &h.value)})
}

fn query_matcher(q: &QueryParamMatch) -> Value {
    json!({"name": q.name, "string_match": string_match(q.kind, &q.value)})
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn path_kinds_map_to_envoy_specifiers() {
        assert_eq!(
            route_match(&path(PathMatchType::Exact, "/a/b")),
            json!({"path": "/a/b"})
        );
        assert_eq!(
            route_match(&path(PathMatchType::PathPrefix, "/api/")),
            json!({"path_separated_prefix": "/api"})
        );
        assert_eq!(
            route_match(&path(PathMatchType::PathPrefix, "/")),
            json!({"prefix": "/"})
        );
        assert_eq!(
            route_match(&path(PathMatchType::RegularExpression, "/v[0-9]+/.*")),
            json!({"safe_regex": {"regex": "/v[0-9]+/.*"}})
        );
        assert_eq!(
            route_match(&HttpRouteMatch::default()),
            json!({"prefix": "/"})
        );
    }

    #[test]
    fn headers_method_and_query_become_envoy_matchers() {
        let m = HttpRouteMatch {
            path: None,
            grpc_method: None,
            headers: vec![
                HeaderMatch {
                    kind: StringMatchType::Exact,
                    name: "X-Tier".into(),
                    value: "Gold".into(),
                },
                HeaderMatch {
                    kind: StringMatchType::RegularExpression,
                    name: "x-v".into(),
                    value: "v[12]".into(),
                },
            ],
            query_params: vec![QueryParamMatch {
                kind: StringMatchType::Exact,
                name: "Debug".into(),
                value: "1".into(),
            }],
            method: Some("POST".into()),
        };
        assert_eq!(
            route_match(&m),
            json!({
                "prefix": "/",
                "headers": [
                    {"name": "x-tier", "string_match": {"exact": "Gold"}},
                    {"name": "x-v", "string_match": {"safe_regex": {"regex": "v[12]"}}},
                    {"name": ":method", "string_match": {"exact": "POST"}}
                ],
                "query_parameters": [{"name": "Debug", "string_match": {"exact": "1"}}]
            })
        );
    }

    #[test]
    fn grpc_method_matches_become_the_paths_the_contract_gives() {
        let grpc = |service: Option<&str>, method: Option<&str>| HttpRouteMatch {
            grpc_method: Some(attache_contract::GrpcMethodMatch {
                kind: StringMatchType::Exact,
                service: service.map(str::to_string),
                method: method.map(str::to_string),
            }),
            ..HttpRouteMatch::default()
        };
        assert_eq!(
            route_match(&grpc(Some("shop.v1.Cart"), Some("Add"))),
            json!({"path": "/shop.v1.Cart/Add"})
        );
        assert_eq!(
            route_match(&grpc(Some("shop.v1.Cart"), None)),
            json!({"path_separated_prefix": "/shop.v1.Cart"})
        );
        assert_eq!(
            route_match(&grpc(None, Some("Add"))),
            json!({"safe_regex": {"regex": "/[^/]+/Add"}})
        );
    }
}
