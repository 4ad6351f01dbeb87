//! The fallback candidates indexed by hostname and path, so a request looks
//! at the few candidates that can match it instead of scanning them all.
//!
//! The candidates stay in one list sorted by Gateway API precedence
//! (`FallbackTable::finish`); the index only holds positions in that list,
//! and every list of positions is ascending. The first match is therefore
//! the one the full scan would find:
//! - hostnames rank first in precedence (exact, then the longer wildcard
//!   suffix, then any), and a request's host matches at most one exact name
//!   and one suffix per length: the buckets are visited in that order, and a
//!   bucket with a match ends the search;
//! - within a hostname, the path kind and length rank first (exact, then the
//!   longer prefix, then regular expressions): the exact list of the
//!   request's path, then the prefix lists of the path's own prefixes at
//!   `/` boundaries, longest first, then the regular expressions. Within a
//!   list, method, headers, query parameters and document order decide, as
//!   in the sorted list.
//!
//! Cost per request: one hash lookup per label of the host and one per `/`
//! of the path within the longest prefix's length, plus the candidates of
//! those lists, whatever the table's size.

use std::collections::HashMap;

/// Where a candidate's path condition files it.
#[derive(Debug, Clone, Copy)]
pub enum PathKey<'a> {
    Exact(&'a str),
    /// Trimmed of trailing slashes; "" matches every path.
    Prefix(&'a str),
    Regex,
}

/// Where a candidate's hostname files it.
#[derive(Debug, Clone, Copy)]
pub enum HostKey<'a> {
    Exact(&'a str),
    /// `.example.com` for `*.example.com`.
    Suffix(&'a str),
    Any,
}

#[derive(Debug, Clone, Default)]
struct PathIndex {
    exact: HashMap<String, Vec<u32>>,
    prefix: HashMap<String, Vec<u32>>,
    /// The longest prefix's length: no prefix can match a path's prefix
    /// longer than this, so a client's path of thousands of `/` costs a
    /// look at its first bytes, not a hash of each of its prefixes.
    longest_prefix: usize,
    regex: Vec<u32>,
}

impl PathIndex {
    fn add(&mut self, key: PathKey<'_>, position: u32) {
        match key {
            PathKey::Exact(path) => self
                .exact
                .entry(path.to_string())
                .or_default()
                .push(position),
            PathKey::Prefix(path) => {
                self.longest_prefix = self.longest_prefix.max(path.len());
                self.prefix
                    .entry(path.to_string())
                    .or_default()
                    .push(position)
            }
            PathKey::Regex => self.regex.push(position),
        }
    }

    /// The first position, in precedence order, whose candidate `accept`s.
    fn first(&self, path: Option<&str>, accept: &mut impl FnMut(u32) -> bool) -> Option<u32> {
        let mut try_list = |list: Option<&Vec<u32>>| list?.iter().copied().find(|p| accept(*p));
        if let Some(path) = path {
            if let Some(found) = try_list(self.exact.get(path)) {
                return Some(found);
            }
            // The path itself, then each prefix ending before a `/`, longest
            // first: exactly the prefixes that match it at element
            // boundaries; none longer than the longest prefix.
            let bytes = path.as_bytes();
            if bytes.len() <= self.longest_prefix {
                if let Some(found) = try_list(self.prefix.get(path)) {
                    return Some(found);
                }
            }
            for end in (0..bytes.len().min(self.longest_prefix + 1))
                .rev()
                .filter(|i| bytes.get(*i) == Some(&b'/'))
            {
                if let Some(found) = try_list(path.get(..end).and_then(|p| self.prefix.get(p))) {
                    return Some(found);
                }
            }
        }
        // Regular expressions (and, for a request without a path, nothing
        // else could match: every path condition needs one).
        self.regex.iter().copied().find(|p| accept(*p))
    }
}

#[derive(Debug, Clone, Default)]
pub struct CandidateIndex {
    exact_hosts: HashMap<String, PathIndex>,
    suffix_hosts: HashMap<String, PathIndex>,
    any_host: PathIndex,
}

impl CandidateIndex {
    /// Files the candidate at `position` (positions added in ascending order).
    pub fn add(&mut self, host: HostKey<'_>, path: PathKey<'_>, position: u32) {
        let bucket = match host {
            HostKey::Exact(name) => self.exact_hosts.entry(name.to_string()).or_default(),
            HostKey::Suffix(suffix) => self.suffix_hosts.entry(suffix.to_string()).or_default(),
            HostKey::Any => &mut self.any_host,
        };
        bucket.add(path, position);
    }

    /// The first position, in precedence order, whose candidate could match
    /// a request to `host` and `path` and `accept`s it.
    pub fn first(
        &self,
        host: Option<&str>,
        path: Option<&str>,
        mut accept: impl FnMut(u32) -> bool,
    ) -> Option<u32> {
        if let Some(host) = host {
            if let Some(found) = self
                .exact_hosts
                .get(host)
                .and_then(|b| b.first(path, &mut accept))
            {
                return Some(found);
            }
            // Longest suffix first; at least one label must precede it.
            let dots = host
                .bytes()
                .enumerate()
                .filter(|(i, b)| *i > 0 && *b == b'.');
            for (dot, _) in dots {
                if let Some(found) = host
                    .get(dot..)
                    .and_then(|suffix| self.suffix_hosts.get(suffix))
                    .and_then(|b| b.first(path, &mut accept))
                {
                    return Some(found);
                }
            }
        }
        self.any_host.first(path, &mut accept)
    }
}
