//! Matches of a delegated rule: a request reaches a child route's rule only
//! if it matched the delegating parent rule first, so the child's effective
//! matches are the intersection of both (kgateway requires child matchers to
//! lie within the parent's). Without this a child rule with no matches
//! (`PathPrefix /`) would catch every request for the hostname.

use crate::contract::{HttpRouteMatch, PathMatch, PathMatchType};

/// Every non-empty pairwise intersection, parent-major, without duplicates.
/// Empty when no child match can ever be reached through the parent.
pub fn intersect_all(
    parents: &[HttpRouteMatch],
    children: &[HttpRouteMatch],
) -> Vec<HttpRouteMatch> {
    let mut out: Vec<HttpRouteMatch> = Vec::new();
    for p in parents {
        for c in children {
            if let Some(m) = intersect(p, c) {
                if !out.contains(&m) {
                    out.push(m);
                }
            }
        }
    }
    out
}

/// Both matches at once, or `None` when they exclude each other.
pub fn intersect(parent: &HttpRouteMatch, child: &HttpRouteMatch) -> Option<HttpRouteMatch> {
    let path = match (&parent.path, &child.path) {
        (Some(p), Some(c)) => Some(path(p, c)?),
        (p, c) => c.clone().or_else(|| p.clone()),
    };
    let method = match (&parent.method, &child.method) {
        (Some(p), Some(c)) if p != c => return None,
        (p, c) => c.clone().or_else(|| p.clone()),
    };
    let mut headers = child.headers.clone();
    for h in &parent.headers {
        match headers
            .iter()
            .find(|x| x.name.eq_ignore_ascii_case(&h.name))
        {
            Some(x) if x == h => {}
            // Two exact values for one header cannot both hold.
            Some(x) if x.kind == h.kind && x.kind == crate::contract::StringMatchType::Exact => {
                return None
            }
            _ => headers.push(h.clone()),
        }
    }
    let mut query_params = child.query_params.clone();
    for q in &parent.query_params {
        match query_params.iter().find(|x| x.name == q.name) {
            Some(x) if x == q => {}
            Some(x) if x.kind == q.kind && x.kind == crate::contract::StringMatchType::Exact => {
                return None
            }
            _ => query_params.push(q.clone()),
        }
    }
    Some(HttpRouteMatch {
        path,
        headers,
        query_params,
        method,
        // Delegation is HTTPRoute only: neither side has a gRPC method match.
        grpc_method: None,
    })
}

/// The narrower of two paths, or `None` when they share no request path.
/// A regular expression cannot be intersected exactly: the child's path is
/// kept (it is the one the child's author meant).
fn path(p: &PathMatch, c: &PathMatch) -> Option<PathMatch> {
    use PathMatchType::{Exact, PathPrefix, RegularExpression};
    match (p.kind, c.kind) {
        (PathPrefix, _) if p.value == "/" => Some(c.clone()),
        (_, PathPrefix) if c.value == "/" => Some(p.clone()),
        (RegularExpression, _) | (_, RegularExpression) => Some(c.clone()),
        (PathPrefix, PathPrefix) if within(&c.value, &p.value) => Some(c.clone()),
        (PathPrefix, PathPrefix) if within(&p.value, &c.value) => Some(p.clone()),
        (PathPrefix, Exact) if within(&c.value, &p.value) => Some(c.clone()),
        (Exact, PathPrefix) if within(&p.value, &c.value) => Some(p.clone()),
        (Exact, Exact) if p.value == c.value => Some(c.clone()),
        _ => None,
    }
}

/// Whether `path` lies under the Gateway API prefix `prefix` (element-wise:
/// `/api` covers `/api` and `/api/x`, not `/apix`).
fn within(path: &str, prefix: &str) -> bool {
    let prefix = prefix.trim_end_matches('/');
    path == prefix
        || prefix.is_empty()
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::HeaderMatch;

    fn prefix(v: &str) -> HttpRouteMatch {
        HttpRouteMatch {
            path: Some(PathMatch {
                kind: PathMatchType::PathPrefix,
                value: v.into(),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_catch_all_child_inherits_the_parent_path() {
        assert_eq!(
            intersect_all(&[prefix("/api/orders")], &[prefix("/")]),
            [prefix("/api/orders")]
        );
    }

    #[test]
    fn child_paths_must_lie_within_the_parent_path() {
        assert_eq!(
            intersect_all(&[prefix("/api")], &[prefix("/api/orders")]),
            [prefix("/api/orders")]
        );
        assert_eq!(
            intersect_all(&[prefix("/api/orders")], &[prefix("/api")]),
            [prefix("/api/orders")]
        );
        assert!(intersect_all(&[prefix("/api")], &[prefix("/apix"), prefix("/shop")]).is_empty());
        let exact = HttpRouteMatch {
            path: Some(PathMatch {
                kind: PathMatchType::Exact,
                value: "/api/x".into(),
            }),
            ..Default::default()
        };
        assert_eq!(
            intersect_all(&[prefix("/api/")], std::slice::from_ref(&exact)),
            [exact]
        );
    }

    #[test]
    fn conditions_add_up_and_contradictions_drop_the_pair() {
        let header = |v: &str| HeaderMatch {
            kind: Default::default(),
            name: "X-Tier".into(),
            value: v.into(),
        };
        let parent = HttpRouteMatch {
            headers: vec![header("gold")],
            method: Some("GET".into()),
            ..prefix("/api")
        };
        let child = HttpRouteMatch {
            headers: vec![],
            ..prefix("/api/a")
        };
        let both = intersect(&parent, &child).unwrap();
        assert_eq!(
            (both.headers.len(), both.method.as_deref()),
            (1, Some("GET"))
        );
        let other_method = HttpRouteMatch {
            method: Some("POST".into()),
            ..prefix("/api/a")
        };
        assert_eq!(intersect(&parent, &other_method), None);
        let other_tier = HttpRouteMatch {
            headers: vec![HeaderMatch {
                name: "x-tier".into(),
                ..header("silver")
            }],
            ..prefix("/api")
        };
        assert_eq!(intersect(&parent, &other_tier), None);
    }
}
