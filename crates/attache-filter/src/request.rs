//! The parts of a request that fallback matching looks at, read once from
//! the host, one header read each. A pseudo-header that is absent or not UTF-8 is `None` and simply
//! matches nothing that needs it.

use std::cell::RefCell;

use crate::control::CLIENT_CONTROL_HEADERS;
use crate::host::{Counter, Gauge, HeaderMap, Host, LogLevel};

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

/// Answers by key (a header name, a property path), in asking order.
type Remembered = RefCell<Vec<(String, Option<Vec<u8>>)>>;

/// The host as route matching sees it: each request header and each
/// property is asked for once, however many times matching needs it (a
/// header condition shared by several fallback candidates; the
/// `destination.port` of an Istio route name and then of fallback matching).
/// Writes go through and forget what they change.
pub struct ReadOnce<'h, H> {
    host: &'h mut H,
    headers: Remembered,
    properties: Remembered,
    /// Whether the client's router control headers read as absent: the
    /// route is found before the strip removes them, and must be the one
    /// the stripped request matches.
    hide_client_control: bool,
}

impl<'h, H: Host> ReadOnce<'h, H> {
    pub fn new(host: &'h mut H) -> Self {
        ReadOnce {
            host,
            headers: RefCell::new(Vec::new()),
            properties: RefCell::new(Vec::new()),
            hide_client_control: false,
        }
    }

    /// With `hide`, every header of `CLIENT_CONTROL_HEADERS` reads as
    /// absent, as it is once stripped (Envoy already removed twelve of them
    /// for an external client; the strip removes the rest), without a read.
    pub fn hiding_client_control_headers(mut self, hide: bool) -> Self {
        self.hide_client_control = hide;
        self
    }

    /// The host itself, for a read that happens once anyway (the route name,
    /// the pseudo-headers): remembering it would only cost an allocation.
    pub fn uncached(&self) -> &H {
        self.host
    }

    /// The answer remembered under `key`, or asks and remembers it. A few
    /// entries at most: a linear scan beats hashing.
    fn once(
        seen: &Remembered,
        key: &str,
        ask: impl FnOnce() -> Option<Vec<u8>>,
    ) -> Option<Vec<u8>> {
        if let Ok(seen) = seen.try_borrow() {
            if let Some((_, value)) = seen.iter().find(|(k, _)| k == key) {
                return value.clone();
            }
        }
        let value = ask();
        if let Ok(mut seen) = seen.try_borrow_mut() {
            seen.push((key.to_string(), value.clone()));
        }
        value
    }

    fn forget(&mut self, map: HeaderMap, name: &str) {
        if map == HeaderMap::Request {
            self.headers.get_mut().retain(|(n, _)| n != name);
        }
    }
}

impl<H: Host> Host for ReadOnce<'_, H> {
    fn property(&self, path: &[&str]) -> Option<Vec<u8>> {
        Self::once(&self.properties, &path.join("\0"), || {
            self.host.property(path)
        })
    }

    fn header(&self, map: HeaderMap, name: &str) -> Option<Vec<u8>> {
        match map {
            HeaderMap::Request if self.hide_client_control && is_client_control(name) => None,
            HeaderMap::Request => Self::once(&self.headers, name, || self.host.header(map, name)),
            HeaderMap::Response => self.host.header(map, name),
        }
    }

    fn set_property(&mut self, path: &[&str], value: &[u8]) {
        let key = path.join("\0");
        self.properties.get_mut().retain(|(n, _)| *n != key);
        self.host.set_property(path, value);
    }

    fn set_header(&mut self, map: HeaderMap, name: &str, value: Option<&str>) {
        self.forget(map, name);
        self.host.set_header(map, name, value);
    }

    fn add_header(&mut self, map: HeaderMap, name: &str, value: &str) {
        self.forget(map, name);
        self.host.add_header(map, name, value);
    }

    fn log_enabled(&self, level: LogLevel) -> bool {
        self.host.log_enabled(level)
    }

    fn log(&self, level: LogLevel, message: &str) {
        self.host.log(level, message);
    }

    fn increment(&mut self, counter: Counter) {
        self.host.increment(counter);
    }

    fn add_to_metric(&mut self, counter: Counter, delta: u64) {
        self.host.add_to_metric(counter, delta);
    }

    fn set_gauge(&mut self, gauge: Gauge, value: u64) {
        self.host.set_gauge(gauge, value);
    }

    fn clock_nanos(&self) -> Option<u64> {
        self.host.clock_nanos()
    }

    fn memory_bytes(&self) -> Option<u64> {
        self.host.memory_bytes()
    }
}

fn is_client_control(name: &str) -> bool {
    CLIENT_CONTROL_HEADERS.contains(&name)
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
    fn read_once_asks_the_host_once_per_name_and_forgets_what_it_writes() {
        use crate::testing::FakeHost;
        let mut fake = FakeHost::request("h", "/", &[("x-a", "1")]).with_destination_port(80);
        {
            let mut reads = ReadOnce::new(&mut fake);
            for _ in 0..3 {
                assert_eq!(reads.header(HeaderMap::Request, "x-a"), Some(b"1".to_vec()));
                assert_eq!(reads.header(HeaderMap::Request, "x-b"), None);
                assert!(reads.property(&["destination", "port"]).is_some());
            }
            reads.set_header(HeaderMap::Request, "x-a", Some("2"));
            assert_eq!(reads.header(HeaderMap::Request, "x-a"), Some(b"2".to_vec()));
            reads.add_header(HeaderMap::Request, "x-b", "3");
            assert_eq!(reads.header(HeaderMap::Request, "x-b"), Some(b"3".to_vec()));
        }
        // x-a, x-b, then each again after its write; one port read.
        assert_eq!(fake.calls(), (1, 4, 2));
    }

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
