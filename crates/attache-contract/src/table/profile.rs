//! A profile record, read without allocating: [`walk_profile`] hands each
//! value to a [`ProfileVisitor`] as it is read. The filter validates a
//! record that way at load (10,000 distinct profiles must not cost 10,000
//! entries' allocations, docs/filter.md), and [`read_profile`] builds the
//! schema-1 settings from the same walk, so the two cannot read a record
//! differently.

use crate::{Header, HeaderChanges, Retry, Settings, Timeouts};

use super::{Reader, TableError, KNOWN_RETRY_TRIGGERS};

/// Which header changes: the request's or the response's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Changes {
    Request,
    Response,
}

impl Changes {
    /// The field's name in the document.
    pub fn field(self) -> &'static str {
        match self {
            Changes::Request => "requestHeaders",
            Changes::Response => "responseHeaders",
        }
    }
}

/// What went wrong: the record itself (at a field relative to the profile),
/// or what the visitor made of a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Walked<E> {
    Table(&'static str, TableError),
    Visitor(E),
}

/// Receives a record's values in record order. Every method may refuse.
pub trait ProfileVisitor<'a> {
    type Error;
    fn timeouts(
        &mut self,
        request_ms: Option<u64>,
        backend_ms: Option<u64>,
    ) -> Result<(), Self::Error>;
    /// A retry section starts; `attempts` and `backoff_ms` as present.
    fn retry(&mut self, attempts: Option<u32>, backoff_ms: Option<u64>) -> Result<(), Self::Error>;
    /// `codes` and `retryOn` present (possibly empty), before their items.
    fn retry_lists(&mut self, codes: bool, retry_on: bool) -> Result<(), Self::Error>;
    fn code(&mut self, j: usize, code: u16) -> Result<(), Self::Error>;
    fn retry_on(&mut self, j: usize, trigger: &'a str) -> Result<(), Self::Error>;
    /// A header changes section starts, with its counts.
    fn changes(
        &mut self,
        which: Changes,
        set: usize,
        add: usize,
        remove: usize,
    ) -> Result<(), Self::Error>;
    /// `add` false: a `set` pair.
    fn header(
        &mut self,
        which: Changes,
        add: bool,
        j: usize,
        name: &'a str,
        value: &'a str,
    ) -> Result<(), Self::Error>;
    fn remove(&mut self, which: Changes, j: usize, name: &'a str) -> Result<(), Self::Error>;
}

/// Reads `record` to its end, handing every value to `v`.
pub fn walk_profile<'a, V: ProfileVisitor<'a>>(
    record: &'a [u8],
    v: &mut V,
) -> Result<(), Walked<V::Error>> {
    let mut r = Reader::new(record);
    let table = |field: &'static str| move |e| Walked::Table(field, e);
    let flags = r.u8().map_err(table(""))?;
    if flags >= 64 {
        return Err(Walked::Table("", TableError::Value(flags.into())));
    }
    if flags & 32 != 0 || flags & 3 != 0 {
        let request = if flags & 1 != 0 {
            Some(r.varint().map_err(table("timeouts.requestMs"))?)
        } else {
            None
        };
        let backend = if flags & 2 != 0 {
            Some(r.varint().map_err(table("timeouts.backendRequestMs"))?)
        } else {
            None
        };
        v.timeouts(request, backend).map_err(Walked::Visitor)?;
    }
    if flags & 4 != 0 {
        walk_retry(&mut r, v)?;
    }
    for (bit, which) in [(8, Changes::Request), (16, Changes::Response)] {
        if flags & bit != 0 {
            walk_changes(&mut r, which, v).map_err(|e| match e {
                Walked::Table(_, t) => Walked::Table(which.field(), t),
                other => other,
            })?;
        }
    }
    if !r.is_empty() {
        return Err(Walked::Table("", TableError::Length(record.len() as u64)));
    }
    Ok(())
}

fn walk_retry<'a, V: ProfileVisitor<'a>>(
    r: &mut Reader<'a>,
    v: &mut V,
) -> Result<(), Walked<V::Error>> {
    let table = |field: &'static str| move |e| Walked::Table(field, e);
    let flags = r.u8().map_err(table("retry"))?;
    if flags >= 16 {
        return Err(Walked::Table("retry", TableError::Value(flags.into())));
    }
    let attempts = if flags & 1 != 0 {
        Some(r.u32().map_err(table("retry.attempts"))?)
    } else {
        None
    };
    // The codes come before the back-off in the record; the visitor is told
    // of the back-off first, with the attempts, as validation reads them.
    let mut rest = r.clone();
    if flags & 2 != 0 {
        let n = rest.count().map_err(table("retry.codes"))?;
        for _ in 0..n {
            rest.varint().map_err(table("retry.codes"))?;
        }
    }
    let backoff = if flags & 4 != 0 {
        Some(rest.varint().map_err(table("retry.backoffMs"))?)
    } else {
        None
    };
    v.retry(attempts, backoff).map_err(Walked::Visitor)?;
    v.retry_lists(flags & 2 != 0, flags & 8 != 0)
        .map_err(Walked::Visitor)?;
    if flags & 2 != 0 {
        let n = r.count().map_err(table("retry.codes"))?;
        for j in 0..n {
            let code = u16::try_from(r.varint().map_err(table("retry.codes"))?)
                .map_err(|_| Walked::Table("retry.codes", TableError::Number))?;
            v.code(j, code).map_err(Walked::Visitor)?;
        }
    }
    if flags & 4 != 0 {
        r.varint().map_err(table("retry.backoffMs"))?;
    }
    if flags & 8 != 0 {
        let n = r.count().map_err(table("retry.retryOn"))?;
        for j in 0..n {
            let trigger = match r.varint().map_err(table("retry.retryOn"))? {
                0 => r.str().map_err(table("retry.retryOn"))?,
                k => usize::try_from(k - 1)
                    .ok()
                    .and_then(|k| KNOWN_RETRY_TRIGGERS.get(k).copied())
                    .ok_or(Walked::Table("retry.retryOn", TableError::Value(k)))?,
            };
            v.retry_on(j, trigger).map_err(Walked::Visitor)?;
        }
    }
    Ok(())
}

fn walk_changes<'a, V: ProfileVisitor<'a>>(
    r: &mut Reader<'a>,
    which: Changes,
    v: &mut V,
) -> Result<(), Walked<V::Error>> {
    let table = |e| Walked::Table("", e);
    // The counts first (the operation limit is checked before the items).
    let mut skim = r.clone();
    let mut counts = [0usize; 3];
    for (k, count) in counts.iter_mut().enumerate() {
        *count = skim.count().map_err(table)?;
        for _ in 0..*count * if k < 2 { 2 } else { 1 } {
            skim.bytes().map_err(table)?;
        }
    }
    let [set, add, remove] = counts;
    v.changes(which, set, add, remove)
        .map_err(Walked::Visitor)?;
    for is_add in [false, true] {
        let n = r.count().map_err(table)?;
        for j in 0..n {
            let name = r.str().map_err(table)?;
            let value = r.str().map_err(table)?;
            v.header(which, is_add, j, name, value)
                .map_err(Walked::Visitor)?;
        }
    }
    let n = r.count().map_err(table)?;
    for j in 0..n {
        let name = r.str().map_err(table)?;
        v.remove(which, j, name).map_err(Walked::Visitor)?;
    }
    Ok(())
}

/// Builds the schema-1 settings of a record.
#[derive(Default)]
struct Build(Settings);

impl Build {
    fn retry(&mut self) -> &mut Retry {
        self.0.retry.get_or_insert_with(Retry::default)
    }

    fn changes(&mut self, which: Changes) -> &mut HeaderChanges {
        let slot = match which {
            Changes::Request => &mut self.0.request_headers,
            Changes::Response => &mut self.0.response_headers,
        };
        slot.get_or_insert_with(HeaderChanges::default)
    }
}

impl<'a> ProfileVisitor<'a> for Build {
    type Error = std::convert::Infallible;

    fn timeouts(
        &mut self,
        request_ms: Option<u64>,
        backend_ms: Option<u64>,
    ) -> Result<(), Self::Error> {
        self.0.timeouts = Some(Timeouts {
            request_ms,
            backend_request_ms: backend_ms,
        });
        Ok(())
    }

    fn retry(&mut self, attempts: Option<u32>, backoff_ms: Option<u64>) -> Result<(), Self::Error> {
        let retry = self.retry();
        retry.attempts = attempts;
        retry.backoff_ms = backoff_ms;
        Ok(())
    }

    fn retry_lists(&mut self, codes: bool, retry_on: bool) -> Result<(), Self::Error> {
        let retry = self.retry();
        retry.codes = codes.then(Vec::new);
        retry.retry_on = retry_on.then(Vec::new);
        Ok(())
    }

    fn code(&mut self, _: usize, code: u16) -> Result<(), Self::Error> {
        self.retry().codes.get_or_insert_with(Vec::new).push(code);
        Ok(())
    }

    fn retry_on(&mut self, _: usize, trigger: &'a str) -> Result<(), Self::Error> {
        let list = self.retry().retry_on.get_or_insert_with(Vec::new);
        list.push(trigger.to_string());
        Ok(())
    }

    fn changes(
        &mut self,
        which: Changes,
        set: usize,
        add: usize,
        remove: usize,
    ) -> Result<(), Self::Error> {
        let c = self.changes(which);
        c.set.reserve_exact(set);
        c.add.reserve_exact(add);
        c.remove.reserve_exact(remove);
        Ok(())
    }

    fn header(
        &mut self,
        which: Changes,
        add: bool,
        _: usize,
        name: &'a str,
        value: &'a str,
    ) -> Result<(), Self::Error> {
        let c = self.changes(which);
        let list = if add { &mut c.add } else { &mut c.set };
        list.push(Header {
            name: name.to_string(),
            value: value.to_string(),
        });
        Ok(())
    }

    fn remove(&mut self, which: Changes, _: usize, name: &'a str) -> Result<(), Self::Error> {
        self.changes(which).remove.push(name.to_string());
        Ok(())
    }
}

/// A profile record's settings (what the filter's compile takes). Errors name the field relative to the
/// profile.
pub fn read_profile(record: &[u8]) -> Result<Settings, (&'static str, TableError)> {
    let mut build = Build::default();
    match walk_profile(record, &mut build) {
        Ok(()) => Ok(build.0),
        Err(Walked::Table(field, e)) => Err((field, e)),
        Err(Walked::Visitor(never)) => match never {},
    }
}
