//! gRPC method matches (Gateway API `GRPCRoute`) as HTTP/2 paths: the one
//! definition. A gRPC call is an HTTP/2 POST to `/<service>/<method>`, so a
//! method match is a path match (docs/semantics.md, "GRPCRoute"); the
//! renderer (`matching.rs`, Envoy's `RouteMatch`) and the filter's fallback
//! matching both take the path from [`GrpcMethodMatch::path_match`], and
//! Gateway API precedence among GRPCRoute matches reads
//! [`GrpcMethodMatch::precedence_lengths`] (`crate::precedence`).

use serde::{Deserialize, Serialize};

use crate::{PathMatch, PathMatchType, StringMatchType};

/// Gateway API `GRPCMethodMatch`: at least one of `service` and `method`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrpcMethodMatch {
    #[serde(rename = "type", default)]
    pub kind: StringMatchType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
}

impl GrpcMethodMatch {
    /// The path a request must have. `Exact`: service and method give the
    /// exact path `/<service>/<method>`, service alone the prefix
    /// `/<service>/`, method alone any service (`/[^/]+/<method>`, a regex:
    /// the method is a plain identifier, so nothing needs escaping).
    /// `RegularExpression`: a full-path regex, each part in its own group so
    /// that an alternation (`a|b`) stays inside its part, and a missing part
    /// is one path segment. None when neither part is set (refused by
    /// `route_syntax::check_match`).
    pub fn path_match(&self) -> Option<PathMatch> {
        let path = |kind, value: String| Some(PathMatch { kind, value });
        let any = "[^/]+";
        match (self.kind, self.service.as_deref(), self.method.as_deref()) {
            (_, None, None) => None,
            (StringMatchType::Exact, Some(s), Some(m)) => {
                path(PathMatchType::Exact, format!("/{s}/{m}"))
            }
            (StringMatchType::Exact, Some(s), None) => {
                path(PathMatchType::PathPrefix, format!("/{s}/"))
            }
            (StringMatchType::Exact, None, Some(m)) => {
                path(PathMatchType::RegularExpression, format!("/{any}/{m}"))
            }
            (StringMatchType::RegularExpression, s, m) => {
                let group = |p: Option<&str>| p.map_or(any.to_string(), |p| format!("(?:{p})"));
                path(
                    PathMatchType::RegularExpression,
                    format!("/{}/{}", group(s), group(m)),
                )
            }
        }
    }

    /// What Gateway API's GRPCRoute precedence compares after the hostname:
    /// the characters of the service, then of the method (0 for a part
    /// that is not set). For a regular expression Gateway API leaves the
    /// count to the implementation; Attaché counts the pattern's characters.
    pub fn precedence_lengths(&self) -> (usize, usize) {
        (
            self.service.as_deref().map_or(0, str::len),
            self.method.as_deref().map_or(0, str::len),
        )
    }
}

/// Gateway API's syntax of an `Exact` service name: dot-separated
/// identifiers, with an optional leading dot (case-insensitive).
pub fn is_service_name(s: &str) -> bool {
    let s = s.strip_prefix('.').unwrap_or(s);
    s.len() <= 1024 && !s.is_empty() && s.split('.').all(is_identifier)
}

/// Gateway API's syntax of an `Exact` method name: one identifier.
pub fn is_method_name(m: &str) -> bool {
    m.len() <= 1024 && is_identifier(m)
}

fn is_identifier(part: &str) -> bool {
    let mut bytes = part.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grpc(kind: StringMatchType, service: Option<&str>, method: Option<&str>) -> GrpcMethodMatch {
        GrpcMethodMatch {
            kind,
            service: service.map(str::to_string),
            method: method.map(str::to_string),
        }
    }

    #[test]
    fn method_matches_become_the_paths_of_docs_semantics() {
        use PathMatchType::*;
        use StringMatchType::{Exact as E, RegularExpression as R};
        let cases = [
            (
                grpc(E, Some("shop.Cart"), Some("Add")),
                Exact,
                "/shop.Cart/Add",
            ),
            (grpc(E, Some("shop.Cart"), None), PathPrefix, "/shop.Cart/"),
            (grpc(E, None, Some("Add")), RegularExpression, "/[^/]+/Add"),
            (
                grpc(R, Some("shop\\..*"), Some("A|B")),
                RegularExpression,
                "/(?:shop\\..*)/(?:A|B)",
            ),
            (grpc(R, Some("s"), None), RegularExpression, "/(?:s)/[^/]+"),
            (grpc(R, None, Some("m")), RegularExpression, "/[^/]+/(?:m)"),
        ];
        for (m, kind, value) in cases {
            assert_eq!(
                m.path_match(),
                Some(PathMatch {
                    kind,
                    value: value.into()
                }),
                "{m:?}"
            );
        }
        assert_eq!(grpc(E, None, None).path_match(), None);
    }

    #[test]
    fn exact_names_follow_gateway_api() {
        assert!(is_service_name("grpc.health.v1.Health"));
        assert!(is_service_name(".Echo"));
        assert!(!is_service_name("a..b"));
        assert!(!is_service_name("a/b"));
        assert!(!is_service_name("1a"));
        assert!(is_method_name("Check_2"));
        assert!(!is_method_name("Check.2"));
        assert!(!is_method_name(""));
    }
}
