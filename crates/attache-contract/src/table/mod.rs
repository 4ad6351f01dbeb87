//! The table encoding (schema 3): the data-plane document (schema 2) as a
//! compact binary the filter reads in place. Same meaning, same order; what
//! changes is the cost of a load. A 10,000-route distinct-policy Gateway is
//! 5.0 MB of schema-2 JSON, which the filter had to inflate and parse whole,
//! allocating every entry, on every update and in every VM
//! (docs/contract.md, "The table encoding"); the table is about a fifth of
//! that, needs no parse, and the filter validates it in one pass without
//! building the entries (it compiles each on first use).
//!
//! Layout, every integer an unsigned LEB128 varint, every string a varint
//! byte length then UTF-8 bytes:
//!
//! ```text
//! magic "AT", schema version 3, 0
//! gateway            string
//! options            u8: 1 trustClientControlHeaders, 2 istioRouteNames
//! listenerPorts      count, then (listener key string, port) each
//! profiles           count, then each: byte length, then the record
//! groups             count, then each:
//!   profile          index + 1 (0: no settings)
//!   hostnames        count, then strings
//!   routes           count, then each: name string, matches count, matches
//! ```
//!
//! A profile record holds its own strings, so its bytes are its content:
//! the filter keeps compiled profiles across updates keyed by those bytes.
//! Record: u8 flags (1 requestMs, 2 backendRequestMs, 4 retry, 8
//! requestHeaders, 16 responseHeaders, 32 timeouts), the values present;
//! retry: u8 flags (1 attempts, 2 codes, 4 backoffMs, 8 retryOn), each a
//! varint or a counted list; header changes: counted `set` pairs, `add`
//! pairs, `remove` names. A match: u8 flags (bits 0-1 path type: 0 none, 1
//! Exact, 2 PathPrefix, 3 RegularExpression; 4 method; 8 grpcMethod; 16
//! headers; 32 queryParams), then each present part.

use crate::{
    GrpcMethodMatch, HeaderMatch, HttpRouteMatch, PathMatch, PathMatchType, QueryParamMatch,
    StringMatchType,
};

mod decode;
mod profile;
mod write;

pub use decode::decode;
pub use profile::{read_profile, walk_profile, Changes, ProfileVisitor, Walked};
pub use write::{encode, encode_with_cuts, PER_CHUNK};

/// The schema version of the table encoding.
pub const TABLE_SCHEMA_VERSION: u8 = 3;
/// The first four bytes of a table: no JSON text starts with them.
pub const MAGIC: [u8; 4] = [b'A', b'T', TABLE_SCHEMA_VERSION, 0];

/// Retry triggers a profile record names by number (1 + the position here)
/// instead of spelling them: every profile with a retry carries Gateway API's
/// connection triggers (`connect-failure`, `refused-stream`, `reset`), 370 KB of
/// the table at 10,000 distinct policies. Part of the format: entries are
/// only ever appended. Any other trigger is spelled (number 0, then the
/// string).
pub const KNOWN_RETRY_TRIGGERS: [&str; 16] = [
    "5xx",
    "gateway-error",
    "reset",
    "reset-before-request",
    "connect-failure",
    "envoy-ratelimited",
    "retriable-4xx",
    "refused-stream",
    "retriable-status-codes",
    "retriable-headers",
    "http3-post-connect-failure",
    "cancelled",
    "deadline-exceeded",
    "internal",
    "resource-exhausted",
    "unavailable",
];

/// Whether `bytes` are a table (of any version: the reader names the one
/// it does not read).
pub fn is_table(bytes: &[u8]) -> bool {
    bytes.starts_with(&MAGIC[..2])
}

/// Where a table's groups begin: after the magic, the gateway, the
/// options (flags, listener ports) and the profiles. Everything before is
/// its head (what a policy edit changes), everything after its groups
/// (what a route edit changes); crate::document_id hashes them apart.
pub fn groups_offset(bytes: &[u8]) -> Result<usize, TableError> {
    let mut r = Reader::at(bytes, MAGIC.len());
    r.str()?;
    r.u8()?;
    for _ in 0..r.count()? {
        r.str()?;
        r.varint()?;
    }
    for _ in 0..r.count()? {
        r.bytes()?;
    }
    Ok(r.position())
}

/// Why a table could not be read, at the field being read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableError {
    Truncated,
    /// A varint longer than ten bytes or over the field's range.
    Number,
    Utf8,
    /// A length or count past what is left of the table.
    Length(u64),
    /// A value no writer produces (an unknown flag or type).
    Value(u64),
    /// A profile index past the profiles.
    Index(u64),
}

impl std::fmt::Display for TableError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TableError::Truncated => write!(f, "the table ends here (truncated)"),
            TableError::Number => write!(f, "malformed or out-of-range number"),
            TableError::Utf8 => write!(f, "string is not UTF-8"),
            TableError::Length(n) => write!(f, "length {n} runs past the end of the table"),
            TableError::Value(v) => write!(f, "unknown flag or type {v}"),
            TableError::Index(i) => write!(f, "index {i} is past the end of profiles"),
        }
    }
}

/// A cursor over a table. Every read checks bounds; nothing panics.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    /// `bytes[text_at..]`, as far as it is known to be UTF-8: a run of the
    /// table checked once, whose strings [`Reader::str`] slices out.
    text: &'a str,
    text_at: usize,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Self::at(bytes, 0)
    }

    pub fn at(bytes: &'a [u8], at: usize) -> Self {
        Reader {
            bytes,
            at,
            text: "",
            text_at: 0,
        }
    }

    pub fn position(&self) -> usize {
        self.at
    }

    pub fn is_empty(&self) -> bool {
        self.at >= self.bytes.len()
    }

    pub fn u8(&mut self) -> Result<u8, TableError> {
        let b = *self.bytes.get(self.at).ok_or(TableError::Truncated)?;
        self.at += 1;
        Ok(b)
    }

    /// An unsigned LEB128 number of at most 64 bits. Most of a table's
    /// numbers (lengths, counts, indexes) fit in one byte, so that case
    /// returns first: a fresh load reads 340,000 numbers at 10,000 routes,
    /// and the general loop cost about 38 instructions each.
    #[inline(always)]
    pub fn varint(&mut self) -> Result<u64, TableError> {
        match self.bytes.get(self.at) {
            Some(&first) if first & 0x80 == 0 => {
                self.at += 1;
                Ok(u64::from(first))
            }
            _ => self.long_varint(),
        }
    }

    /// A varint of two bytes or more (or none left).
    #[inline(never)]
    fn long_varint(&mut self) -> Result<u64, TableError> {
        let first = self.u8()?;
        let mut value = u64::from(first & 0x7f);
        let mut shift = 7;
        loop {
            let b = self.u8()?;
            let part = u64::from(b & 0x7f);
            if shift == 63 && part > 1 {
                return Err(TableError::Number);
            }
            value |= part << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
            shift += 7;
            if shift > 63 {
                return Err(TableError::Number);
            }
        }
    }

    pub fn u32(&mut self) -> Result<u32, TableError> {
        u32::try_from(self.varint()?).map_err(|_| TableError::Number)
    }

    /// A count of items of at least one byte each: never more than the
    /// bytes left, so a hostile count cannot make a reader reserve memory.
    #[inline(always)]
    pub fn count(&mut self) -> Result<usize, TableError> {
        let n = self.varint()?;
        let left = self.bytes.len().saturating_sub(self.at);
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= left)
            .ok_or(TableError::Length(n))
    }

    pub fn bytes(&mut self) -> Result<&'a [u8], TableError> {
        let n = self.count()?;
        let out = self
            .bytes
            .get(self.at..self.at + n)
            .ok_or(TableError::Length(n as u64))?;
        self.at += n;
        Ok(out)
    }

    /// A string, UTF-8 checked. Checked one by one, the 120,000 short
    /// strings of a 10,000-route table cost a fresh load about 130
    /// instructions each (`from_utf8` walks an unaligned start byte by
    /// byte); so the table is checked in runs instead, from a string to the
    /// next byte that is not UTF-8 (the high byte of a number of 128 or
    /// more, usually: strings and most numbers are ASCII), and each string
    /// inside the run is a slice of it. A string the run does not cover
    /// is checked alone, so the answer is the same either way.
    pub fn str(&mut self) -> Result<&'a str, TableError> {
        let n = self.count()?;
        let (start, end) = (self.at, self.at + n);
        if start < self.text_at || end > self.text_at + self.text.len() {
            self.text = utf8_run(self.bytes.get(start..).unwrap_or_default());
            self.text_at = start;
        }
        let text = match self.text.get(start - self.text_at..end - self.text_at) {
            Some(text) => text,
            // Past the run, or not on its character boundaries.
            None => std::str::from_utf8(
                self.bytes
                    .get(start..end)
                    .ok_or(TableError::Length(n as u64))?,
            )
            .map_err(|_| TableError::Utf8)?,
        };
        self.at = end;
        Ok(text)
    }

    pub(crate) fn string(&mut self) -> Result<String, TableError> {
        self.str().map(str::to_string)
    }
}

/// The longest start of `bytes` that is UTF-8.
fn utf8_run(bytes: &[u8]) -> &str {
    match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => bytes
            .get(..e.valid_up_to())
            .and_then(|valid| std::str::from_utf8(valid).ok())
            .unwrap_or_default(),
    }
}

/// One match, as the schema-1 type fallback matching compiles.
pub fn read_match(r: &mut Reader<'_>) -> Result<HttpRouteMatch, TableError> {
    let flags = r.u8()?;
    if flags >= 64 {
        return Err(TableError::Value(flags.into()));
    }
    let kind = match flags & 3 {
        1 => Some(PathMatchType::Exact),
        2 => Some(PathMatchType::PathPrefix),
        3 => Some(PathMatchType::RegularExpression),
        _ => None,
    };
    let mut m = HttpRouteMatch::default();
    if let Some(kind) = kind {
        m.path = Some(PathMatch {
            kind,
            value: r.string()?,
        });
    }
    if flags & 4 != 0 {
        m.method = Some(r.string()?);
    }
    if flags & 8 != 0 {
        let g = r.u8()?;
        if g >= 8 {
            return Err(TableError::Value(g.into()));
        }
        m.grpc_method = Some(GrpcMethodMatch {
            kind: string_kind(g & 1),
            service: (g & 2 != 0).then(|| r.string()).transpose()?,
            method: (g & 4 != 0).then(|| r.string()).transpose()?,
        });
    }
    let triples =
        |r: &mut Reader<'_>| -> Result<Vec<(StringMatchType, String, String)>, TableError> {
            let n = r.count()?;
            (0..n)
                .map(|_| {
                    let k = r.u8()?;
                    if k > 1 {
                        return Err(TableError::Value(k.into()));
                    }
                    Ok((string_kind(k), r.string()?, r.string()?))
                })
                .collect()
        };
    if flags & 16 != 0 {
        m.headers = triples(r)?
            .into_iter()
            .map(|(kind, name, value)| HeaderMatch { kind, name, value })
            .collect();
    }
    if flags & 32 != 0 {
        m.query_params = triples(r)?
            .into_iter()
            .map(|(kind, name, value)| QueryParamMatch { kind, name, value })
            .collect();
    }
    Ok(m)
}

fn string_kind(bit: u8) -> StringMatchType {
    if bit == 1 {
        StringMatchType::RegularExpression
    } else {
        StringMatchType::Exact
    }
}
