//! The compiled configuration: the document's table (attache_contract::table)
//! validated whole at load, then read in place. Nothing per entry is built at
//! load: an entry's compiled route is made on its first request and kept,
//! each profile's header operations are rendered once on first use and
//! shared by its entries, and the fallback table is built on the first
//! request that needs it. An update reuses what the previous configuration of
//! the VM already did: a profile whose bytes are unchanged is neither
//! validated nor rendered again, and unchanged route entries keep their
//! index (docs/filter.md, "Updates").
//!
//! Immutable once accepted; the caches only fill in, from bytes that were
//! validated before the configuration was accepted, so no request is served
//! by a half-loaded document.

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use attache_contract::document_id::{hash_words, of_parts};
use attache_contract::precedence::MatchPrecedence;
use attache_contract::table::{self, read_match, read_profile, Reader, TableError, Walked};
use attache_contract::{DataPlaneDocument, HttpRouteMatch};

use crate::document;
use crate::envelope::{Chunk, Inflated, PreviousPieces};
use crate::error::{ConfigError, Problem};
use crate::fallback::{Conditions, FallbackTable, HostPattern};
use crate::index::RouteIndex;
use crate::route::CompiledRoute;
use crate::validate::{CheckRecord, EntryError};

#[derive(Debug)]
pub struct CompiledConfig {
    pub gateway: String,
    pub trust_client_control_headers: bool,
    /// attache_contract::document_id of the table: what the filter
    /// publishes as served.
    document_id: u64,
    ports: BTreeMap<String, u16>,
    /// The table up to its groups (the header and the profiles); `spans`
    /// are each profile record's place in it.
    head: Box<[u8]>,
    /// The pieces it came in, if it came in a chunked envelope.
    chunks: Vec<Chunk>,
    spans: Vec<(u32, u32)>,
    profiles: Vec<OnceCell<Rc<CompiledRoute>>>,
    bare: OnceCell<Rc<CompiledRoute>>,
    /// Shared with the next configuration when its entries are the same.
    index: Rc<RouteIndex>,
    routes: Vec<OnceCell<Rc<CompiledRoute>>>,
}

impl CompiledConfig {
    /// Parses, validates and compiles plugin configuration bytes: the table
    /// or the data-plane JSON (docs/contract.md).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ConfigError> {
        Self::load(document::table(bytes)?, None)
    }

    /// The same, taking the bytes, which are dropped as soon as they are
    /// read into the table.
    pub fn from_owned_bytes(bytes: Vec<u8>) -> Result<Self, ConfigError> {
        Self::from_owned_bytes_after(bytes, None)
    }

    /// The same, reusing what `previous` (the VM's last accepted
    /// configuration) validated and compiled where the bytes are the same.
    pub fn from_owned_bytes_after(
        bytes: Vec<u8>,
        previous: Option<&CompiledConfig>,
    ) -> Result<Self, ConfigError> {
        let (inflated, chunks) = document::table_owned(bytes, previous)?;
        let mut config = match inflated {
            Inflated::Whole(table) => Self::load(table, previous)?,
            Inflated::Head(head) => Self::load_head(head, previous)?,
        };
        config.chunks = chunks;
        Ok(config)
    }

    /// A schema-2 document, through its table.
    pub fn compile_data_plane(doc: DataPlaneDocument) -> Result<Self, ConfigError> {
        Self::load(document::encode_checked(&doc)?, None)
    }

    /// A table whose groups are `previous`'s, byte for byte (the pieces
    /// that carry them were unchanged, so they were not even inflated):
    /// `head` is the table up to them. Should the head not end where the
    /// groups begin, the groups are appended and the table loaded whole.
    fn load_head(head: Vec<u8>, previous: Option<&CompiledConfig>) -> Result<Self, ConfigError> {
        Self::load_parts(head, previous, true)
    }

    /// Validates a table whole; compiles nothing it need not.
    pub fn load(bytes: Vec<u8>, previous: Option<&CompiledConfig>) -> Result<Self, ConfigError> {
        Self::load_parts(bytes, previous, false)
    }

    fn load_parts(
        bytes: Vec<u8>,
        previous: Option<&CompiledConfig>,
        groups_from_previous: bool,
    ) -> Result<Self, ConfigError> {
        let version = bytes.get(2).copied().unwrap_or(0);
        if !bytes.starts_with(&table::MAGIC) {
            let problem = Problem::SchemaVersion(u32::from(version));
            return Err(ConfigError::invalid("$.schemaVersion", problem));
        }
        let mut r = Reader::at(&bytes, table::MAGIC.len());
        let gateway = r.str().map_err(|e| tabled("$.gateway", e))?.to_string();
        let flags = r.u8().map_err(|e| tabled("$.options", e))?;
        let mut ports = BTreeMap::new();
        let count = r
            .count()
            .map_err(|e| tabled("$.options.listenerPorts", e))?;
        for _ in 0..count {
            let key = r.str().map_err(|e| tabled("$.options.listenerPorts", e))?;
            let port = r.varint().ok().and_then(|p| u16::try_from(p).ok());
            let port = port.ok_or_else(|| tabled("$.options.listenerPorts", TableError::Number))?;
            ports.insert(key.to_string(), port);
        }
        let count = r.count().map_err(|e| tabled("$.profiles", e))?;
        let first = r.position();
        let mut spans = Vec::with_capacity(count);
        for p in 0..count {
            let record = r
                .bytes()
                .map_err(|e| tabled(format!("$.profiles[{p}]"), e))?;
            let end = r.position() - first;
            spans.push(((end - record.len()) as u32, record.len() as u32));
        }
        // Spans are kept relative to the table's start: `head` is the table
        // up to the groups.
        let spans: Vec<(u32, u32)> = spans
            .into_iter()
            .map(|(start, len)| (start + first as u32, len))
            .collect();
        // (The groups start where `head` ends: render cuts a piece there,
        // so every piece lies in one or the other; chunk_bytes.)
        let head_len = r.position();
        let groups = match previous.filter(|_| groups_from_previous) {
            Some(old) if head_len == bytes.len() => old.index.bytes(),
            Some(old) => {
                let mut whole = bytes;
                whole.extend_from_slice(old.index.bytes());
                return Self::load_parts(whole, previous, false);
            }
            None => bytes.get(head_len..).unwrap_or_default(),
        };
        let head = bytes.get(..head_len).unwrap_or_default();
        let mut profiles = Vec::with_capacity(count);
        for (p, &(start, len)) in spans.iter().enumerate() {
            let record = head
                .get(start as usize..(start + len) as usize)
                .unwrap_or_default();
            let cell = OnceCell::new();
            match previous.and_then(|old| old.same_profile(p, record)) {
                Some(Some(compiled)) => {
                    let _ = cell.set(compiled);
                }
                Some(None) => {}
                None => check_profile(p, record)?,
            }
            profiles.push(cell);
        }
        let istio = flags & 2 != 0;
        let index = match previous.filter(|old| {
            // The index depends on these alone: the groups' bytes, how
            // many profiles they may name, how names are keyed and ports.
            old.profiles.len() == count
                && old.index.istio() == istio
                && old.ports == ports
                && *old.index.bytes() == *groups
        }) {
            Some(old) => Rc::clone(&old.index),
            None => Rc::new(RouteIndex::build(groups, count, istio, &ports)?),
        };
        // The groups' half of the identity comes with the index: an update
        // that reuses them hashes the head alone.
        let document_id = of_parts(hash_words(head), index.groups_hash());
        // The groups are in the index now: keep the head only, without a
        // second copy of it beside the whole table.
        let mut bytes = bytes;
        bytes.truncate(head_len);
        let head = bytes.into_boxed_slice();
        let routes = std::iter::repeat_with(OnceCell::new)
            .take(index.entries.len())
            .collect();
        Ok(CompiledConfig {
            gateway,
            trust_client_control_headers: flags & 1 != 0,
            document_id,
            ports,
            head,
            chunks: Vec::new(),
            spans,
            profiles,
            bare: OnceCell::new(),
            index,
            routes,
        })
    }

    /// Whether profile `p` has exactly these bytes here: `Some` with its
    /// compiled form if one was made (it was validated either way).
    fn same_profile(&self, p: usize, record: &[u8]) -> Option<Option<Rc<CompiledRoute>>> {
        let &(start, len) = self.spans.get(p)?;
        let mine = self.head.get(start as usize..(start + len) as usize)?;
        (mine == record).then(|| self.profiles.get(p).and_then(|c| c.get().cloned()))
    }

    /// Profile `p`'s compiled settings, rendered on first use.
    fn template(&self, profile: Option<u32>) -> &Rc<CompiledRoute> {
        let render = |record: &[u8]| {
            // Validated at load from these same bytes, so it reads; were it
            // not to, no settings is the safe reading.
            let settings = read_profile(record).unwrap_or_default();
            Rc::new(CompiledRoute::render(&settings))
        };
        let bare = || self.bare.get_or_init(|| render(&[0]));
        let Some(p) = profile else {
            return bare();
        };
        match (self.profiles.get(p as usize), self.spans.get(p as usize)) {
            (Some(cell), Some(&(start, len))) => cell.get_or_init(|| {
                render(
                    self.head
                        .get(start as usize..(start + len) as usize)
                        .unwrap_or_default(),
                )
            }),
            _ => bare(),
        }
    }

    /// Entry `e`'s compiled route, made on first use.
    pub fn route_at(&self, e: u32) -> Option<&Rc<CompiledRoute>> {
        let cell = self.routes.get(e as usize)?;
        let entry = self.index.entries.get(e as usize)?;
        Some(cell.get_or_init(|| {
            let profile = self
                .index
                .groups
                .get(entry.group as usize)
                .and_then(|g| g.profile);
            Rc::new(self.template(profile).named(self.index.name(entry)))
        }))
    }

    /// The entry for Envoy's route `name`; the destination port is asked
    /// for only when the name needs it.
    pub fn route_named_at(
        &self,
        name: &str,
        destination_port: impl FnOnce() -> Option<u16>,
    ) -> Option<&Rc<CompiledRoute>> {
        self.route_at(self.index.find(name, destination_port)?)
    }

    pub fn route_named(&self, name: &str) -> Option<&Rc<CompiledRoute>> {
        self.route_named_at(name, || None)
    }

    /// The fallback table, built on the first request that needs it. It
    /// lives in the route index: it depends on the entries and the ports
    /// alone, so a policy edit, which keeps the index, keeps it too.
    pub fn fallback(&self) -> &FallbackTable {
        self.index
            .fallback
            .get_or_init(|| build_fallback(&self.index, &self.ports))
    }

    #[cfg(test)]
    pub fn index(&self) -> &RouteIndex {
        &self.index
    }

    /// The document's identity (attache_contract::document_id), the same
    /// in every VM and for every form the document came in.
    pub fn document_id(&self) -> u64 {
        self.document_id
    }

    pub fn route_count(&self) -> usize {
        self.index.entries.len()
    }

    /// How many fallback candidates the entries make (the table itself is
    /// built on first use).
    pub fn candidate_count(&self) -> usize {
        self.index.candidates
    }
}

/// Every (entry, hostname, match) of `index` as a fallback candidate, in
/// precedence order. Hostnames and matches were checked at load: one that
/// fails here cannot occur, and is left out.
fn build_fallback(index: &RouteIndex, ports: &BTreeMap<String, u16>) -> FallbackTable {
    let mut table = FallbackTable::with_capacity(index.candidates);
    for (g, group) in index.groups.iter().enumerate() {
        let mut r = index.reader_at(group.hosts);
        let mut hosts: Vec<u32> = (0..r.count().unwrap_or(0))
            .filter_map(|_| r.str().ok().and_then(|h| HostPattern::parse(h).ok()))
            .map(|h| table.add_host(h))
            .collect();
        if hosts.is_empty() {
            hosts.push(table.add_host(HostPattern::Any));
        }
        let last = index
            .groups
            .get(g + 1)
            .map_or(index.entries.len() as u32, |n| n.first);
        for e in group.first..last {
            let Some(entry) = index.entries.get(e as usize) else {
                continue;
            };
            let mut r = index.reader_at(entry.matches);
            let matches: Vec<HttpRouteMatch> = (0..r.count().unwrap_or(0))
                .filter_map(|_| read_match(&mut r).ok())
                .collect();
            let port = index.port_of(entry, ports);
            let _ = add_candidates(&mut table, port, &hosts, &matches, e);
        }
    }
    table.finish();
    table
}

/// A profile record read and its settings checked, as the profile's
/// compile will take them, without building them.
fn check_profile(p: usize, record: &[u8]) -> Result<(), ConfigError> {
    let at = |field: &str| {
        if field.is_empty() {
            format!("$.profiles[{p}]")
        } else {
            format!("$.profiles[{p}].{field}")
        }
    };
    table::walk_profile(record, &mut CheckRecord).map_err(|e| match e {
        Walked::Table(field, e) => tabled(at(field), e),
        Walked::Visitor((field, problem)) => ConfigError::invalid(at(&field), problem),
    })
}

fn tabled(path: impl Into<String>, e: TableError) -> ConfigError {
    ConfigError::invalid(path, Problem::Table(e))
}

/// Files one candidate per (hostname, match); `hosts` is never empty (no
/// hostnames is `HostPattern::Any`), as ids from `FallbackTable::add_host`.
fn add_candidates(
    table: &mut FallbackTable,
    port: Option<u16>,
    hosts: &[u32],
    matches: &[HttpRouteMatch],
    entry: u32,
) -> Result<(), EntryError> {
    let conditions = if matches.is_empty() {
        vec![(MatchPrecedence::of(None), Conditions::match_all())]
    } else {
        matches
            .iter()
            .enumerate()
            .map(|(j, m)| {
                let compiled = Conditions::compile(m)
                    .map_err(|e| (format!("matches[{j}].{}", e.field), e.problem))?;
                Ok((MatchPrecedence::of(Some(m)), compiled))
            })
            .collect::<Result<Vec<_>, EntryError>>()?
    };
    // The last host takes the compiled match itself; the others a copy.
    let Some((&last, others)) = hosts.split_last() else {
        return Ok(());
    };
    for (precedence, cond) in conditions {
        for &host in others {
            let (p, c) = (precedence.clone(), cond.clone());
            table.push(port, host, p, c, entry);
        }
        table.push(port, last, precedence, cond, entry);
    }
    Ok(())
}

impl PreviousPieces for CompiledConfig {
    /// The bytes of piece `i` of the chunked envelope this configuration
    /// came in, if its text was `text` and its length `len`: what the next
    /// update need not inflate again.
    fn chunk_bytes(&self, i: usize, text: &str, len: u64) -> Option<&[u8]> {
        let chunk = self
            .chunks
            .get(i)
            .filter(|c| c.len == len && *c.text == *text)?;
        let (start, end) = (chunk.start, chunk.start + usize::try_from(len).ok()?);
        let head = self.head.len();
        if end <= head {
            self.head.get(start..end)
        } else if start >= head {
            self.index.bytes().get(start - head..end - head)
        } else {
            None
        }
    }

    /// The first piece of this configuration's groups, if all pieces from
    /// it on are the same in `next` (same place, text and length): the next
    /// update's groups are then these groups, and need not be inflated.
    fn groups_unchanged_from(
        &self,
        next: &[attache_contract::envelope::Envelope],
    ) -> Option<usize> {
        let g = self
            .chunks
            .iter()
            .position(|c| c.start == self.head.len())?;
        let same = next.len() == self.chunks.len()
            && self
                .chunks
                .iter()
                .zip(next)
                .skip(g)
                .all(|(mine, theirs)| mine.len == theirs.length && *mine.text == *theirs.data);
        same.then_some(g)
    }
}
