//! A request that a schema-1 route entry matches, built from the entry
//! itself, so tests against the shipped example (or a compose stack
//! running it) follow the example when it changes.

use attache_contract::{HttpRouteMatch, PathMatchType, RouteEntry, StringMatchType};

pub struct Probe {
    pub path: String,
    /// `host` first (when the route has hostnames), then header matches.
    pub headers: Vec<(String, String)>,
}

impl Probe {
    /// None when no request can be derived (regex paths, method-only matches).
    pub fn for_route(route: &RouteEntry) -> Option<Probe> {
        let mut headers = Vec::new();
        if let Some(host) = route.hostnames.first() {
            headers.push(("host".to_owned(), host.replace('*', "probe")));
        }
        let Some(first) = route.matches.first() else {
            return Some(Probe {
                path: "/".to_owned(),
                headers,
            });
        };
        if first.method.as_deref().is_some_and(|m| m != "GET") || !first.query_params.is_empty() {
            return None;
        }
        for header in &first.headers {
            if header.kind != StringMatchType::Exact {
                return None;
            }
            headers.push((header.name.to_ascii_lowercase(), header.value.clone()));
        }
        Some(Probe {
            path: path_of(first)?,
            headers,
        })
    }

    pub fn headers_with<'a>(&'a self, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        self.headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .chain(extra.iter().copied())
            .collect()
    }
}

fn path_of(route_match: &HttpRouteMatch) -> Option<String> {
    match &route_match.path {
        None => Some("/".to_owned()),
        Some(path) => match path.kind {
            PathMatchType::Exact | PathMatchType::PathPrefix => Some(path.value.clone()),
            PathMatchType::RegularExpression => None,
        },
    }
}
