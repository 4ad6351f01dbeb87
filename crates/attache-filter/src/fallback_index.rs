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
//! Cost per request: one hash lookup per label of the host and one binary
//! search (of the hostname's paths) per `/` of the path within the longest
//! prefix's length, plus the candidates of those lists.

use std::collections::HashMap;
use std::rc::Rc;

/// Where a candidate's path condition files it. The keys are the
/// candidates' own strings, shared, not copies: at 10,000 routes a copy per
/// candidate was 30,000 allocations of the fallback VM's memory.
#[derive(Debug, Clone, Copy)]
pub enum PathKey<'a> {
    Exact(&'a Rc<str>),
    /// Trimmed of trailing slashes; "" matches every path.
    Prefix(&'a Rc<str>),
    Regex,
}

/// Where a candidate's hostname files it.
#[derive(Debug, Clone, Copy)]
pub enum HostKey<'a> {
    Exact(&'a Rc<str>),
    /// `.example.com` for `*.example.com`.
    Suffix(&'a Rc<str>),
    Any,
}

/// The positions filed under one key, ascending. Most keys hold one (a
/// route's own path under its own hostname): kept inline, with no
/// allocation; a list only from the second, boxed so that an entry of a
/// [`PathMap`] is 32 bytes, not 40.
#[derive(Debug, Clone)]
enum Positions {
    One(u32),
    #[allow(clippy::box_collection)]
    Many(Box<Vec<u32>>),
}

impl Positions {
    fn push(&mut self, position: u32) {
        match self {
            Positions::One(first) => *self = Positions::Many(Box::new(vec![*first, position])),
            Positions::Many(list) => list.push(position),
        }
    }

    fn as_slice(&self) -> &[u32] {
        match self {
            Positions::One(first) => std::slice::from_ref(first),
            Positions::Many(list) => list,
        }
    }

    fn first(&self) -> u32 {
        self.as_slice().first().copied().unwrap_or(u32::MAX)
    }
}

/// One hostname's paths of one kind and the positions filed under each: a
/// list sorted by path (binary search), not a hash map. The map kept 64
/// slots of 32 bytes for a hostname's 30 paths, about 1 MiB of the fallback
/// VM's memory at 10,000 routes; the list keeps 30. A lookup is a handful
/// of string comparisons instead of a SipHash of the path.
#[derive(Debug, Clone, Default)]
struct PathMap(Vec<(Rc<str>, Positions)>);

impl PathMap {
    /// Files `position` under `key`; [`PathMap::sort`] before any lookup.
    fn file(&mut self, key: &Rc<str>, position: u32) {
        self.0.push((Rc::clone(key), Positions::One(position)));
    }

    /// Sorts by path and gathers each path's positions, ascending, into one
    /// entry (positions are filed in ascending order, and the sort keeps it).
    fn sort(&mut self) {
        self.0
            .sort_unstable_by(|(a, at), (b, bt)| a.cmp(b).then(at.first().cmp(&bt.first())));
        self.0.dedup_by(|(later, at), (kept, positions)| {
            let same = later == kept;
            if same {
                positions.push(at.first());
            }
            same
        });
        self.0.shrink_to_fit();
    }

    fn get(&self, key: &str) -> Option<&Positions> {
        let found = self.0.binary_search_by(|(path, _)| (**path).cmp(key));
        found.ok().and_then(|i| self.0.get(i)).map(|(_, p)| p)
    }
}

#[derive(Debug, Clone, Default)]
struct PathIndex {
    exact: PathMap,
    prefix: PathMap,
    /// The longest prefix's length: no prefix can match a path's prefix
    /// longer than this, so a client's path of thousands of `/` costs a
    /// look at its first bytes, not a hash of each of its prefixes.
    longest_prefix: usize,
    regex: Vec<u32>,
}

impl PathIndex {
    fn add(&mut self, key: PathKey<'_>, position: u32) {
        match key {
            PathKey::Exact(path) => self.exact.file(path, position),
            PathKey::Prefix(path) => {
                self.longest_prefix = self.longest_prefix.max(path.len());
                self.prefix.file(path, position);
            }
            PathKey::Regex => self.regex.push(position),
        }
    }

    fn sort(&mut self) {
        self.exact.sort();
        self.prefix.sort();
        self.regex.shrink_to_fit();
    }

    /// The first position, in precedence order, whose candidate `accept`s.
    fn first(&self, path: Option<&str>, accept: &mut impl FnMut(u32) -> bool) -> Option<u32> {
        let mut try_list =
            |list: Option<&Positions>| list?.as_slice().iter().copied().find(|p| accept(*p));
        if let Some(path) = path {
            if let Some(found) = try_list(self.exact.get(path)) {
                return Some(found);
            }
            for prefix in element_prefixes(path, self.longest_prefix) {
                if let Some(found) = try_list(self.prefix.get(prefix)) {
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
    exact_hosts: HashMap<Rc<str>, PathIndex>,
    suffix_hosts: HashMap<Rc<str>, PathIndex>,
    /// The longest wildcard suffix's length: a client's host of thousands
    /// of labels costs a look at its last bytes, not a hash of each of its
    /// suffixes (which would be quadratic in the host's length).
    longest_suffix: usize,
    any_host: PathIndex,
}

impl CandidateIndex {
    /// The index of candidates given with their keys in ascending position
    /// order.
    pub fn new<'a>(candidates: impl IntoIterator<Item = (HostKey<'a>, PathKey<'a>, u32)>) -> Self {
        let mut index = CandidateIndex::default();
        for (host, path, position) in candidates {
            index.add(host, path, position);
        }
        let hosts = index.exact_hosts.values_mut();
        for bucket in hosts.chain(index.suffix_hosts.values_mut()) {
            bucket.sort();
        }
        index.any_host.sort();
        index
    }

    /// Files the candidate at `position` (positions added in ascending order).
    fn add(&mut self, host: HostKey<'_>, path: PathKey<'_>, position: u32) {
        let bucket = match host {
            HostKey::Exact(name) => self.exact_hosts.entry(Rc::clone(name)).or_default(),
            HostKey::Suffix(suffix) => {
                self.longest_suffix = self.longest_suffix.max(suffix.len());
                self.suffix_hosts.entry(Rc::clone(suffix)).or_default()
            }
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
            for suffix in wildcard_suffixes(host, self.longest_suffix) {
                if let Some(found) = self
                    .suffix_hosts
                    .get(suffix)
                    .and_then(|b| b.first(path, &mut accept))
                {
                    return Some(found);
                }
            }
        }
        self.any_host.first(path, &mut accept)
    }
}

/// The suffixes of `host` a wildcard hostname could match, longest first:
/// each starts at a `.` with at least one label before it, and none is
/// longer than `longest` (the longest wildcard suffix of the table).
pub(crate) fn wildcard_suffixes(host: &str, longest: usize) -> impl Iterator<Item = &str> {
    let first = host.len().saturating_sub(longest).max(1);
    let dots = host.bytes().enumerate().skip(first);
    dots.filter(|(_, b)| *b == b'.')
        .filter_map(move |(dot, _)| host.get(dot..))
}

/// The prefixes of `path` a `PathPrefix` could match at element
/// boundaries, longest first: the path itself, then each part before a
/// `/`; none longer than `longest` (the longest prefix of the table).
pub(crate) fn element_prefixes(path: &str, longest: usize) -> impl Iterator<Item = &str> {
    let whole = (path.len() <= longest).then_some(path);
    let bytes = path.as_bytes();
    let cuts = (0..bytes.len().min(longest + 1))
        .rev()
        .filter(move |i| bytes.get(*i) == Some(&b'/'))
        .filter_map(move |end| path.get(..end));
    whole.into_iter().chain(cuts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every suffix after a `.` with a label before it, however long.
    fn all_suffixes(host: &str) -> Vec<&str> {
        (1..host.len())
            .filter(|i| host.as_bytes().get(*i) == Some(&b'.'))
            .filter_map(|i| host.get(i..))
            .collect()
    }

    /// Every element-boundary prefix, however long.
    fn all_prefixes(path: &str) -> Vec<&str> {
        let cuts = (0..path.len())
            .rev()
            .filter(|i| path.as_bytes().get(*i) == Some(&b'/'));
        std::iter::once(path)
            .chain(cuts.filter_map(|end| path.get(..end)))
            .collect()
    }

    #[test]
    fn a_path_map_gathers_each_paths_positions_in_order_whatever_order_paths_came() {
        let (a, b): (Rc<str>, Rc<str>) = ("/a".into(), "/b".into());
        let mut map = PathMap::default();
        for (position, key) in [(0, &b), (1, &a), (2, &b), (3, &a), (4, &b)] {
            map.file(key, position);
        }
        map.sort();
        assert_eq!(map.get("/a").map(Positions::as_slice), Some(&[1, 3][..]));
        assert_eq!(map.get("/b").map(Positions::as_slice), Some(&[0, 2, 4][..]));
        assert!(map.get("/c").is_none() && map.get("").is_none());
        assert_eq!(map.0.len(), 2);
    }

    #[test]
    fn a_host_of_thousands_of_labels_costs_only_the_suffixes_a_wildcard_could_match() {
        // 60 KiB of `a.`: 30,001 suffixes; the table's longest is `.example.com`.
        let host = "a.".repeat(30_000) + "example.com";
        assert_eq!(all_suffixes(&host).len(), 30_001);
        let tried: Vec<&str> = wildcard_suffixes(&host, ".example.com".len()).collect();
        assert_eq!(tried, vec![".example.com", ".com"]);
        assert_eq!(wildcard_suffixes(&host, 0).count(), 0);
    }

    #[test]
    fn a_path_of_thousands_of_elements_costs_only_the_prefixes_a_prefix_could_match() {
        let path = "/a".repeat(30_000);
        let tried: Vec<&str> = element_prefixes(&path, "/a/a".len()).collect();
        assert_eq!(tried, vec!["/a/a", "/a", ""]);
    }

    proptest! {
        #[test]
        fn bounded_suffixes_are_exactly_the_short_enough_ones(
            host in "[a.]{0,24}", longest in 0usize..30
        ) {
            let expected: Vec<&str> =
                all_suffixes(&host).into_iter().filter(|s| s.len() <= longest).collect();
            prop_assert_eq!(wildcard_suffixes(&host, longest).collect::<Vec<_>>(), expected);
        }

        #[test]
        fn bounded_prefixes_are_exactly_the_short_enough_ones(
            path in "[a/]{0,24}", longest in 0usize..30
        ) {
            let expected: Vec<&str> =
                all_prefixes(&path).into_iter().filter(|s| s.len() <= longest).collect();
            prop_assert_eq!(element_prefixes(&path, longest).collect::<Vec<_>>(), expected);
        }
    }
}
