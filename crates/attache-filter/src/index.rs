//! The route entries of a table (attache_contract::table), validated in one
//! pass and indexed by name without building them: an entry is a few
//! offsets into the table's bytes, and its compiled form is made on first
//! use (crate::config). The walk checks everything the entries' compile
//! would (names non-empty and unique, hostnames, every match compiles), so a
//! document is still refused whole at load, naming the field.
//!
//! Lookup is one open-addressing probe keyed by the route name Envoy
//! reports: the entry name, or in documents for Istio the name istiod gives
//! the rule (`attache_contract::istio_route_name`; crate docs/contract.md).
//! The load proves entry names unique; istiod's names are keyed on the
//! first lookup instead (a sixth of a 10,000-route load: bench/findings.md,
//! "Issue 31"), because the VM in which Envoy only checks a configuration
//! never looks one up. Entries sharing an istiod name are chained and
//! decided then: one profile for all, or by listener port, or none
//! (fallback). Keying cannot fail: it reads names the load validated.

use std::cell::OnceCell;
use std::collections::{BTreeMap, HashMap};

use attache_contract::table::{read_match, Reader, TableError};
use attache_contract::EntryName;

use crate::error::{ConfigError, Problem};
use crate::fallback::{Conditions, FallbackTable};
use crate::syntax;

/// An entry: where its name and matches are in the table, and its group.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    name: (u32, u32),
    pub group: u32,
    /// Where the entry's match count is.
    pub matches: u32,
}

#[derive(Debug, Clone, Copy)]
pub struct Group {
    pub profile: Option<u32>,
    /// Where the group's hostname count is.
    pub hosts: u32,
    pub first: u32,
}

/// What an Istio name shared by several entries stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Shared {
    One(u32),
    /// By listener port; empty: no port tells them apart (fallback decides).
    ByPort(Vec<(u16, u32)>),
}

#[derive(Debug)]
pub struct RouteIndex {
    /// The groups section of the table, from its group count on.
    bytes: Box<[u8]>,
    /// Their hash (attache_contract::document_id::hash_words), half of the
    /// document's identity, kept with them by an update that reuses them.
    groups_hash: u64,
    istio: bool,
    pub entries: Vec<Entry>,
    pub groups: Vec<Group>,
    /// The entries by name: (name hash, entry + 1) per slot, entry 0 when
    /// empty; a power of two long. The hash spares most name comparisons.
    /// Empty in a document keyed by istiod's names.
    by_name: Vec<(u32, u32)>,
    /// The entries by istiod's names, made on the first lookup.
    istio_names: OnceCell<IstioNames>,
    /// The listener ports the istiod names are decided by.
    ports: BTreeMap<String, u16>,
    /// Fallback candidates the entries make.
    pub candidates: usize,
    /// The fallback table, built on first use (crate::config::fallback).
    pub fallback: OnceCell<FallbackTable>,
}

/// A 32-bit hash, the same in every VM, eight bytes a step (a multiply and
/// an xor-shift per word, a last multiply; the product's high half). A
/// fresh load hashes every entry name (30,000 at 10,000 routes: FNV-1a's
/// byte loop cost about 100 instructions a name), a request its route
/// name, a configuration its fingerprint (crate::plugin). Spread as well as
/// FNV-1a on entry and istiod names (tests/lookup.rs); a probe compares
/// whole keys, so a collision costs a comparison, never a wrong answer.
pub(crate) fn hash(key: &[u8]) -> u32 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let step = |h: u64, word: u64| {
        let h = (h ^ word).wrapping_mul(K);
        h ^ (h >> 29)
    };
    let mut words = key.chunks_exact(8);
    let start = (key.len() as u64).wrapping_mul(K);
    let h = (&mut words).fold(start, |h, word| {
        step(h, word.try_into().map_or(0, u64::from_le_bytes))
    });
    let mut last = [0u8; 8];
    let rest = words.remainder();
    if let Some(room) = last.get_mut(..rest.len()) {
        room.copy_from_slice(rest);
    }
    let h = step(h, u64::from_le_bytes(last)).wrapping_mul(K);
    (h >> 32) as u32
}

fn table(path: impl Into<String>, e: TableError) -> ConfigError {
    ConfigError::invalid(path, Problem::Table(e))
}

impl RouteIndex {
    /// Walks the groups section (`bytes`, from the group count to the end
    /// of the table) of a table with `profiles` profiles.
    pub fn build(
        bytes: &[u8],
        profiles: usize,
        istio: bool,
        ports: &BTreeMap<String, u16>,
    ) -> Result<Self, ConfigError> {
        let mut r = Reader::new(bytes);
        let groups = r.count().map_err(|e| table("$.groups", e))?;
        let mut index = RouteIndex {
            bytes: bytes.into(),
            groups_hash: attache_contract::document_id::hash_words(bytes),
            istio,
            entries: Vec::new(),
            groups: Vec::with_capacity(groups),
            by_name: Vec::new(),
            istio_names: OnceCell::new(),
            ports: ports.clone(),
            candidates: 0,
            fallback: OnceCell::new(),
        };
        for g in 0..groups {
            index.group(&mut r, g, profiles)?;
        }
        if !r.is_empty() {
            return Err(table("$", TableError::Length(bytes.len() as u64)));
        }
        index.by_name = index.unique_names()?;
        if index.istio {
            // Proven unique; istiod's names are the lookup keys.
            index.by_name = Vec::new();
        }
        Ok(index)
    }

    fn group(&mut self, r: &mut Reader<'_>, g: usize, profiles: usize) -> Result<(), ConfigError> {
        let at = |field: &str| format!("$.groups[{g}]{field}");
        let profile = match r.varint().map_err(|e| table(at(".profile"), e))? {
            0 => None,
            p => {
                let index = u32::try_from(p - 1).unwrap_or(u32::MAX);
                if index as usize >= profiles {
                    let problem = Problem::Index {
                        index,
                        table: "profiles",
                        len: profiles,
                    };
                    return Err(ConfigError::invalid(at(".profile"), problem));
                }
                Some(index)
            }
        };
        let hosts = r.position() as u32;
        let count = r.count().map_err(|e| table(at(".hostnames"), e))?;
        for j in 0..count {
            let host = r
                .str()
                .map_err(|e| table(at(&format!(".hostnames[{j}]")), e))?;
            // Checked in each group that names it: the one-pass check costs
            // less than remembering the names already checked did.
            if !syntax::is_hostname(host) {
                let problem = Problem::Hostname(host.to_string());
                return Err(ConfigError::invalid(
                    at(&format!(".hostnames[{j}]")),
                    problem,
                ));
            }
        }
        let hosts_made = count.max(1);
        let first = self.entries.len() as u32;
        let routes = r.count().map_err(|e| table(at(".routes"), e))?;
        self.entries.reserve(routes);
        for j in 0..routes {
            let at = |field: &str| format!("$.groups[{g}].routes[{j}]{field}");
            let name = r.str().map_err(|e| table(at(".name"), e))?;
            if name.is_empty() {
                return Err(ConfigError::invalid(at(".name"), Problem::EmptyRouteName));
            }
            let name = (r.position() as u32 - name.len() as u32, name.len() as u32);
            let matches = r.position() as u32;
            let count = r.count().map_err(|e| table(at(".matches"), e))?;
            for k in 0..count {
                check_match(r).map_err(|(field, problem)| {
                    ConfigError::invalid(at(&format!(".matches[{k}]{field}")), problem)
                })?;
            }
            self.candidates += hosts_made * count.max(1);
            self.entries.push(Entry {
                name,
                group: g as u32,
                matches,
            });
        }
        self.groups.push(Group {
            profile,
            hosts,
            first,
        });
        Ok(())
    }

    /// Whether the index is keyed by istiod's names.
    pub fn istio(&self) -> bool {
        self.istio
    }

    /// The groups section this index was built from.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn groups_hash(&self) -> u64 {
        self.groups_hash
    }

    pub fn name(&self, e: &Entry) -> &str {
        name_in(&self.bytes, e)
    }

    /// Whether istiod's names have been keyed (by a lookup).
    #[cfg(test)]
    pub fn istio_names_keyed(&self) -> bool {
        self.istio_names.get().is_some()
    }

    /// A reader at `offset` of the groups section (hostnames, matches).
    pub fn reader_at(&self, offset: u32) -> Reader<'_> {
        Reader::at(&self.bytes, offset as usize)
    }

    /// The entries by name, each name once: else the first duplicate,
    /// naming both places.
    fn unique_names(&self) -> Result<Vec<(u32, u32)>, ConfigError> {
        let mut slots = vec![(0u32, 0u32); slot_count(self.entries.len())];
        let names = |o: u32| {
            self.entries
                .get(o as usize)
                .map_or(&[][..], |x| span(&self.bytes, x.name))
        };
        for (e, entry) in (0u32..).zip(&self.entries) {
            if let Some(first) = probe(&mut slots, span(&self.bytes, entry.name), e, names) {
                return Err(self.duplicate(first, e));
            }
        }
        Ok(slots)
    }

    /// Keys the entries by istiod's names; entries sharing one are chained
    /// and decided. Entry names are unique (the load proved it), so a chain
    /// holds different rules istiod names alike.
    fn key_istio_names(&self) -> IstioNames {
        let mut keys = String::new();
        let mut spans = Vec::with_capacity(self.entries.len());
        let mut slots = vec![(0u32, 0u32); slot_count(self.entries.len())];
        let mut chains: HashMap<u32, Vec<u32>> = HashMap::new();
        for (e, entry) in (0u32..).zip(&self.entries) {
            let start = keys.len();
            // An entry istiod gives no name (no rule) is found by fallback.
            let keyed = EntryName::split(self.name(entry)).push_istio_route_name(&mut keys);
            spans.push((start as u32, (keys.len() - start) as u32));
            if !keyed {
                continue;
            }
            let bytes = keys.as_bytes();
            let key_of = |o: u32| spans.get(o as usize).map_or(&[][..], |&at| span(bytes, at));
            let key = bytes.get(start..).unwrap_or_default();
            if let Some(head) = probe(&mut slots, key, e, key_of) {
                chains.entry(head).or_insert_with(|| vec![head]).push(e);
            }
        }
        let shared = chains
            .into_iter()
            .map(|(head, sharers)| (head, self.decide(&sharers, &self.ports)))
            .collect();
        IstioNames {
            keys,
            spans,
            slots,
            shared,
        }
    }

    /// Entry `e` has the name entry `first` already has.
    fn duplicate(&self, first: u32, e: u32) -> ConfigError {
        let name = self.entries.get(e as usize).map_or("", |x| self.name(x));
        let problem = Problem::DuplicateRoute {
            name: name.to_string(),
            first: self.path_of(first),
        };
        ConfigError::invalid(format!("{}.name", self.path_of(e)), problem)
    }

    /// `$.groups[g].routes[j]` of entry `e`, for an error.
    fn path_of(&self, e: u32) -> String {
        let g = self.entries.get(e as usize).map_or(0, |x| x.group);
        let first = self.groups.get(g as usize).map_or(0, |x| x.first);
        format!("$.groups[{g}].routes[{}]", e.saturating_sub(first))
    }

    fn profile_of(&self, e: u32) -> Option<u32> {
        let entry = self.entries.get(e as usize)?;
        self.groups.get(entry.group as usize)?.profile
    }

    /// The port of the listener an entry is on, when the document says.
    pub fn port_of(&self, e: &Entry, ports: &BTreeMap<String, u16>) -> Option<u16> {
        ports
            .get(&EntryName::split(self.name(e)).listener_key())
            .copied()
    }

    /// Entries of one istiod name: one profile for all finds the first; else
    /// by port, where each port's entries are alike; else nothing.
    fn decide(&self, sharers: &[u32], ports: &BTreeMap<String, u16>) -> Shared {
        let profile = |e: u32| self.profile_of(e);
        let Some(&first) = sharers.first() else {
            return Shared::ByPort(Vec::new());
        };
        if sharers.iter().all(|&e| profile(e) == profile(first)) {
            return Shared::One(first);
        }
        let port = |e: u32| {
            self.entries
                .get(e as usize)
                .and_then(|x| self.port_of(x, ports))
        };
        let mut by_port: Vec<(u16, u32)> = Vec::new();
        for &e in sharers {
            let Some(p) = port(e) else {
                return Shared::ByPort(Vec::new());
            };
            let alike = sharers
                .iter()
                .all(|&o| port(o) != Some(p) || profile(o) == profile(e));
            if alike && !by_port.iter().any(|(q, _)| *q == p) {
                by_port.push((p, e));
            }
        }
        Shared::ByPort(by_port)
    }

    /// The entry Envoy's route `name` stands for; `destination_port` is
    /// asked only for an istiod name shared across listeners.
    pub fn find(&self, name: &str, destination_port: impl FnOnce() -> Option<u16>) -> Option<u32> {
        if !self.istio {
            let names = |e: u32| {
                self.entries
                    .get(e as usize)
                    .map_or(&[][..], |x| span(&self.bytes, x.name))
            };
            return look_up(&self.by_name, name.as_bytes(), names);
        }
        let istio = self.istio_names.get_or_init(|| self.key_istio_names());
        let keys = |e: u32| {
            istio
                .spans
                .get(e as usize)
                .map_or(&[][..], |&at| span(istio.keys.as_bytes(), at))
        };
        let e = look_up(&istio.slots, name.as_bytes(), keys)?;
        match istio.shared.get(&e) {
            None => Some(e),
            Some(Shared::One(e)) => Some(*e),
            Some(Shared::ByPort(split)) if split.is_empty() => None,
            Some(Shared::ByPort(split)) => {
                let port = destination_port()?;
                split.iter().find(|(p, _)| *p == port).map(|(_, e)| *e)
            }
        }
    }
}

/// The entries keyed by istiod's names (`RouteIndex::key_istio_names`).
#[derive(Debug)]
struct IstioNames {
    /// Every entry's istiod name, one after the other.
    keys: String,
    /// Entry `e`'s name in `keys` (empty: istiod gives it none).
    spans: Vec<(u32, u32)>,
    /// (key hash, entry + 1) per slot, as `RouteIndex::by_name`.
    slots: Vec<(u32, u32)>,
    /// The head of each chain of entries sharing a name, decided.
    shared: HashMap<u32, Shared>,
}

/// Twice the entries, a power of two, at least 16: probes stay short.
fn slot_count(entries: usize) -> usize {
    (entries * 2).next_power_of_two().max(16)
}

/// The entry under `key` in `slots`, whose entries' keys `key_of` gives.
fn look_up<'k>(slots: &[(u32, u32)], key: &[u8], key_of: impl Fn(u32) -> &'k [u8]) -> Option<u32> {
    let mask = slots.len().checked_sub(1)?;
    let h = hash(key);
    let mut s = h as usize & mask;
    loop {
        let (slot_hash, e) = slots.get(s).copied()?;
        let e = e.checked_sub(1)?;
        if slot_hash == h && key_of(e) == key {
            return Some(e);
        }
        s = (s + 1) & mask;
    }
}

/// An entry's name: UTF-8 checked by the walk, never empty.
fn name_in<'a>(bytes: &'a [u8], e: &Entry) -> &'a str {
    std::str::from_utf8(span(bytes, e.name)).unwrap_or("")
}

/// Bytes `(start, len)` of `bytes`.
fn span(bytes: &[u8], (start, len): (u32, u32)) -> &[u8] {
    bytes
        .get(start as usize..(start + len) as usize)
        .unwrap_or_default()
}

/// Puts entry `e` under `key`, or returns the entry already there.
fn probe<'k>(
    slots: &mut [(u32, u32)],
    key: &[u8],
    e: u32,
    key_of: impl Fn(u32) -> &'k [u8],
) -> Option<u32> {
    let mask = slots.len().checked_sub(1)?;
    let h = hash(key);
    let mut s = h as usize & mask;
    loop {
        let slot = slots.get_mut(s)?;
        match slot.1.checked_sub(1) {
            None => {
                *slot = (h, e + 1);
                return None;
            }
            Some(o) if slot.0 == h && key_of(o) == key => return Some(o),
            Some(_) => s = (s + 1) & mask,
        }
    }
}

/// One match, checked as its compile would check it: a path-only Exact or
/// PathPrefix match (nearly every route's) without building it, any other
/// by compiling it.
fn check_match(r: &mut Reader<'_>) -> Result<(), (String, Problem)> {
    let mut peek = r.clone();
    let flags = peek.u8().map_err(|e| (String::new(), Problem::Table(e)))?;
    if flags == 1 || flags == 2 {
        let path = peek
            .str()
            .map_err(|e| (".path.value".into(), Problem::Table(e)))?;
        if path.as_bytes().first() != Some(&b'/') {
            return Err((".path.value".into(), Problem::Path(path.to_string())));
        }
        *r = peek;
        return Ok(());
    }
    let m = read_match(r).map_err(|e| (String::new(), Problem::Table(e)))?;
    Conditions::compile(&m).map_err(|e| (format!(".{}", e.field), e.problem))?;
    Ok(())
}
