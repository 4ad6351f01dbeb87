//! One header map as the hook found it, kept current with the hook's own
//! writes, so that the filter core's reads and writes cost fewer calls
//! into Envoy (issue 44's per-request cost; bench/findings.md has the
//! instruction counts that chose this).
//!
//! Measured in Envoy 1.40 with callgrind: each `get_header` callback costs
//! about 1,300 instructions (Envoy builds a lower-cased key and searches
//! the map) and each `set_header` about 2,100, where one
//! `get_headers_size` + `get_headers` pair hands over the whole map as
//! pointers. So [`crate::host::StreamHost`] takes the map once, at the
//! core's first read, answers every read from it, and with it skips writes
//! that change nothing (removing a header that is not there) and turns the
//! set of an absent header into an add (Envoy's set first removes).
//! Safe code: [`crate::abi::headers`] copies Envoy's bytes in.

use std::ops::Range;

/// Headroom for the hook's own writes: the nine headers and their values a
/// policy with timeouts, retries and header changes writes.
const WRITE_ROOM_HEADERS: usize = 12;
const WRITE_ROOM_BYTES: usize = 512;

/// The bytes of every name and value, and where each header's are.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct HeaderSnapshot {
    bytes: Vec<u8>,
    entries: Vec<(Range<usize>, Range<usize>)>,
}

impl HeaderSnapshot {
    /// Room for `headers` headers of `bytes` bytes in all, and for the
    /// writes of a typical policy besides: one allocation each for the
    /// bytes and the index (growing them showed in the instruction counts).
    pub fn with_capacity(headers: usize, bytes: usize) -> Self {
        HeaderSnapshot {
            bytes: Vec::with_capacity(bytes + WRITE_ROOM_BYTES),
            entries: Vec::with_capacity(headers + WRITE_ROOM_HEADERS),
        }
    }

    /// Appends one header, as Envoy's `addCopy` would.
    pub fn add(&mut self, name: &[u8], value: &[u8]) {
        let name_at = self.push_bytes(name);
        let value_at = self.push_bytes(value);
        self.entries.push((name_at, value_at));
    }

    /// Replaces every value of `name` with `value`, or removes the header
    /// (`None`), as Envoy's `set_header` callback does.
    pub fn set(&mut self, name: &[u8], value: Option<&[u8]>) {
        let bytes = &self.bytes;
        self.entries.retain(|(n, _)| {
            !bytes
                .get(n.clone())
                .is_some_and(|n| n.eq_ignore_ascii_case(name))
        });
        if let Some(value) = value {
            self.add(name, value);
        }
    }

    /// The first value of `name` (header names compare without case; the
    /// length first, which rules out most names at once).
    pub fn get(&self, name: &[u8]) -> Option<&[u8]> {
        let (_, value) = self
            .entries
            .iter()
            .filter(|(n, _)| n.len() == name.len())
            .find(|(n, _)| {
                self.bytes
                    .get(n.clone())
                    .is_some_and(|n| n.eq_ignore_ascii_case(name))
            })?;
        self.bytes.get(value.clone())
    }

    pub fn contains(&self, name: &[u8]) -> bool {
        self.get(name).is_some()
    }

    fn push_bytes(&mut self, bytes: &[u8]) -> Range<usize> {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(bytes);
        start..self.bytes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::HeaderSnapshot;

    fn snapshot(headers: &[(&str, &str)]) -> HeaderSnapshot {
        let mut s = HeaderSnapshot::with_capacity(headers.len(), 64);
        for (n, v) in headers {
            s.add(n.as_bytes(), v.as_bytes());
        }
        s
    }

    #[test]
    fn reads_the_first_value_of_a_name_whatever_its_case() {
        let s = snapshot(&[("x-a", "1"), ("x-b", "2"), ("x-a", "3")]);
        assert_eq!(s.get(b"x-a"), Some(&b"1"[..]));
        assert_eq!(s.get(b"X-B"), Some(&b"2"[..]));
        assert_eq!(s.get(b"x-c"), None);
        assert!(!s.contains(b"x-"));
    }

    #[test]
    fn a_set_replaces_every_value_and_a_none_removes_them_all() {
        let mut s = snapshot(&[("x-a", "1"), ("x-b", "2"), ("x-a", "3")]);
        s.set(b"x-a", Some(b"new"));
        assert_eq!(s.get(b"x-a"), Some(&b"new"[..]));
        assert_eq!(s.entries.len(), 2);
        s.set(b"X-A", None);
        assert!(!s.contains(b"x-a"));
        assert_eq!(s.get(b"x-b"), Some(&b"2"[..]));
        s.set(b"x-absent", None);
        assert_eq!(s.entries.len(), 1);
    }

    #[test]
    fn an_add_keeps_the_values_already_there() {
        let mut s = snapshot(&[("x-a", "1")]);
        s.add(b"x-a", b"2");
        assert_eq!(s.entries.len(), 2);
        assert_eq!(s.get(b"x-a"), Some(&b"1"[..]));
        s.set(b"x-a", None);
        assert!(s.entries.is_empty());
    }

    #[test]
    fn empty_names_and_values_are_headers_like_any_other() {
        let mut s = snapshot(&[("x-empty", "")]);
        assert_eq!(s.get(b"x-empty"), Some(&b""[..]));
        s.add(b"", b"v");
        assert_eq!(s.get(b""), Some(&b"v"[..]));
    }
}
