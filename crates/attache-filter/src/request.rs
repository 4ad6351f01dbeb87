//! The parts of a request that fallback matching looks at, read once from
//! the host, one header read each. A pseudo-header that is absent or not UTF-8 is `None` and simply
//! matches nothing that needs it.

use crate::host::{HeaderMap, Host};

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RequestFacts {
    /// `:authority` lower-cased, without port or trailing dot.
    pub host: Option<String>,
    /// `:path` up to `?` (a `#` fragment, which clients should not send, is
    /// dropped too).
    pub path: Option<String>,
    /// `:path` after `?`, without the `?`.
    pub query: Option<String>,
    pub method: Option<String>,
}

impl RequestFacts {
    /// `:authority`, `:path` and `:method`: three header reads.
    pub fn from_host(host: &impl Host) -> Self {
        let text = |name: &str| {
            host.header(HeaderMap::Request, name)
                .and_then(|bytes| String::from_utf8(bytes).ok())
        };
        Self::from_parts(text(":authority"), text(":path"), text(":method"))
    }

    /// From the pseudo-headers' values as sent (`:path` with its query).
    pub fn from_parts(
        authority: Option<String>,
        full_path: Option<String>,
        method: Option<String>,
    ) -> Self {
        let (path, query) = match full_path {
            Some(full) => {
                let (path, query) = split_path(&full);
                (Some(path.to_string()), query.map(str::to_string))
            }
            None => (None, None),
        };
        RequestFacts {
            host: authority.map(|a| normalise_authority(&a)),
            path,
            query,
            method,
        }
    }

    /// The first value of query parameter `name` (Gateway API: when a
    /// parameter repeats, only the first occurrence is considered). Names and
    /// values are compared as sent, without percent-decoding.
    pub fn query_param(&self, name: &str) -> Option<&str> {
        self.query.as_deref()?.split('&').find_map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (key == name).then_some(value)
        })
    }
}

fn split_path(full: &str) -> (&str, Option<&str>) {
    let without_fragment = full.split_once('#').map_or(full, |(before, _)| before);
    match without_fragment.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (without_fragment, None),
    }
}

/// `Shop.Example.com:8443` -> `shop.example.com`; `[::1]:80` -> `[::1]`.
pub fn normalise_authority(authority: &str) -> String {
    let host = if authority.starts_with('[') {
        // IPv6 literal: the port, if any, follows the closing bracket.
        authority
            .find(']')
            .map_or(authority, |end| &authority[..=end])
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
            _ => authority,
        }
    };
    host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authority_loses_port_case_and_trailing_dot() {
        assert_eq!(
            normalise_authority("Shop.Example.com:8443"),
            "shop.example.com"
        );
        assert_eq!(normalise_authority("shop.example.com."), "shop.example.com");
        assert_eq!(normalise_authority("[::1]:80"), "[::1]");
        assert_eq!(normalise_authority("[::1]"), "[::1]");
        assert_eq!(normalise_authority("localhost"), "localhost");
    }

    #[test]
    fn path_splits_at_the_first_question_mark() {
        assert_eq!(split_path("/a/b?x=1&y=2"), ("/a/b", Some("x=1&y=2")));
        assert_eq!(split_path("/a?b?c"), ("/a", Some("b?c")));
        assert_eq!(split_path("/a#frag"), ("/a", None));
        assert_eq!(split_path("/"), ("/", None));
    }

    #[test]
    fn query_param_takes_the_first_occurrence() {
        let facts = RequestFacts {
            query: Some("a=1&b&a=2&c=x=y".into()),
            ..Default::default()
        };
        assert_eq!(facts.query_param("a"), Some("1"));
        assert_eq!(facts.query_param("b"), Some(""));
        assert_eq!(facts.query_param("c"), Some("x=y"));
        assert_eq!(facts.query_param("A"), None);
    }
}
