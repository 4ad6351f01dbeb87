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
//! Entries sharing an istiod name are chained and decided at load, as
//! before: one profile for all, or by listener port, or none (fallback).

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
    /// The lookup key in `keys` (Istio names); the name itself otherwise.
    key: (u32, u32),
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
    keys: String,
    istio: bool,
    pub entries: Vec<Entry>,
    pub groups: Vec<Group>,
    /// (key hash, entry + 1) per slot, entry 0 when empty; a power of two
    /// long. The hash spares most key comparisons.
    slots: Vec<(u32, u32)>,
    shared: HashMap<u32, Shared>,
    /// Fallback candidates the entries make.
    pub candidates: usize,
    /// The fallback table, built on first use (crate::config::fallback).
    pub fallback: OnceCell<FallbackTable>,
}

/// FNV-1a: short keys, no allocation, the same in every VM.
fn hash(key: &[u8]) -> u32 {
    key.iter().fold(0x811c_9dc5_u32, |h, &b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
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
            keys: String::new(),
            istio,
            entries: Vec::new(),
            groups: Vec::with_capacity(groups),
            slots: Vec::new(),
            shared: HashMap::new(),
            candidates: 0,
            fallback: OnceCell::new(),
        };
        for g in 0..groups {
            index.group(&mut r, g, profiles)?;
        }
        if !r.is_empty() {
            return Err(table("$", TableError::Length(bytes.len() as u64)));
        }
        index.link(ports)?;
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
                key: name,
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

    pub fn name(&self, e: &Entry) -> &str {
        name_in(&self.bytes, e)
    }

    fn key(&self, e: &Entry) -> &[u8] {
        if !self.istio {
            return span(&self.bytes, e.name);
        }
        span(self.keys.as_bytes(), e.key)
    }

    /// A reader at `offset` of the groups section (hostnames, matches).
    pub fn reader_at(&self, offset: u32) -> Reader<'_> {
        Reader::at(&self.bytes, offset as usize)
    }

    /// Fills the slots: entry names must be unique; under Istio names the
    /// slots hold istiod's names, and entries sharing one are decided.
    fn link(&mut self, ports: &BTreeMap<String, u16>) -> Result<(), ConfigError> {
        let size = (self.entries.len() * 2).next_power_of_two().max(16);
        // Under istiod's names one table does both jobs: entries of one
        // name share its istiod name, so names are compared only within a
        // chain of entries sharing one (one hash per entry, not two).
        let mut by_name = vec![(0u32, 0u32); if self.istio { 0 } else { size }];
        let mut chains: HashMap<u32, Vec<u32>> = HashMap::new();
        let mut slots = vec![(0u32, 0u32); if self.istio { size } else { 0 }];
        for e in 0..self.entries.len() as u32 {
            let Some(entry) = self.entries.get(e as usize).copied() else {
                break;
            };
            let start = self.keys.len();
            let keyed = self.istio
                && EntryName::split(name_in(&self.bytes, &entry))
                    .push_istio_route_name(&mut self.keys);
            if !keyed {
                // Plain names; or an entry istiod gives no name (no rule),
                // which only a name of its own could collide with.
                if by_name.is_empty() {
                    by_name = vec![(0u32, 0u32); size];
                }
                let names = |o: u32| {
                    self.entries
                        .get(o as usize)
                        .map_or(&[][..], |x| span(&self.bytes, x.name))
                };
                let name = span(&self.bytes, entry.name);
                if let Some(first) = probe(&mut by_name, name, e, names) {
                    return Err(self.duplicate(first, e));
                }
                continue;
            }
            let len = self.keys.len() - start;
            if let Some(x) = self.entries.get_mut(e as usize) {
                x.key = (start as u32, len as u32);
            }
            let key = self.keys.as_bytes().get(start..).unwrap_or_default();
            let entries = &self.entries;
            let keys = self.keys.as_bytes();
            let key_of = |o: u32| {
                entries
                    .get(o as usize)
                    .map_or(&[][..], |x| span(keys, x.key))
            };
            if let Some(head) = probe(&mut slots, key, e, key_of) {
                let chain = chains.entry(head).or_insert_with(|| vec![head]);
                let name = span(&self.bytes, entry.name);
                let same = |o: &&u32| {
                    self.entries
                        .get(**o as usize)
                        .is_some_and(|x| span(&self.bytes, x.name) == name)
                };
                if let Some(&first) = chain.iter().find(same) {
                    return Err(self.duplicate(first, e));
                }
                chain.push(e);
            }
        }
        self.slots = if self.istio { slots } else { by_name };
        for (head, sharers) in chains {
            let decided = self.decide(&sharers, ports);
            self.shared.insert(head, decided);
        }
        Ok(())
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
        let mask = self.slots.len().checked_sub(1)?;
        let h = hash(name.as_bytes());
        let mut s = h as usize & mask;
        let e = loop {
            let (slot_hash, e) = self.slots.get(s).copied()?;
            let e = e.checked_sub(1)?;
            if slot_hash == h && self.key(self.entries.get(e as usize)?) == name.as_bytes() {
                break e;
            }
            s = (s + 1) & mask;
        };
        match self.shared.get(&e) {
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
        if !path.starts_with('/') {
            return Err((".path.value".into(), Problem::Path(path.to_string())));
        }
        *r = peek;
        return Ok(());
    }
    let m = read_match(r).map_err(|e| (String::new(), Problem::Table(e)))?;
    Conditions::compile(&m).map_err(|e| (format!(".{}", e.field), e.problem))?;
    Ok(())
}
