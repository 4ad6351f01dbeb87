//! The table back to the schema-2 document, for tools and tests.

use crate::schema2::{DataPlaneDocument, DataPlaneRoute, Profile, RouteGroup};
use crate::{Header, HeaderChanges, Options, Settings};

use super::{read_match, read_profile, Reader, TableError, MAGIC};

/// Back to the schema-2 document (tools and tests; the filter reads the
/// table in place). Profiles come back with their own `strings`.
pub fn decode(bytes: &[u8]) -> Result<DataPlaneDocument, TableError> {
    if !bytes.starts_with(&MAGIC) {
        return Err(TableError::Value(bytes.get(2).copied().unwrap_or(0).into()));
    }
    let mut r = Reader::at(bytes, MAGIC.len());
    let gateway = r.string()?;
    let flags = r.u8()?;
    let mut options = Options {
        trust_client_control_headers: flags & 1 != 0,
        istio_route_names: flags & 2 != 0,
        ..Options::default()
    };
    for _ in 0..r.count()? {
        let key = r.string()?;
        let port = u16::try_from(r.varint()?).map_err(|_| TableError::Number)?;
        options.listener_ports.insert(key, port);
    }
    let mut strings = Strings::default();
    let mut profiles = Vec::new();
    for _ in 0..r.count()? {
        let Settings {
            timeouts,
            retry,
            request_headers,
            response_headers,
        } = read_profile(r.bytes()?).map_err(|(_, e)| e)?;
        profiles.push(Profile {
            timeouts,
            retry,
            request_headers: request_headers.map(|c| strings.changes(&c)),
            response_headers: response_headers.map(|c| strings.changes(&c)),
        });
    }
    let mut groups = Vec::new();
    for _ in 0..r.count()? {
        let profile = match r.varint()? {
            0 => None,
            p => Some(u32::try_from(p - 1).map_err(|_| TableError::Number)?),
        };
        let hostnames = (0..r.count()?)
            .map(|_| r.string())
            .collect::<Result<_, _>>()?;
        let mut routes = Vec::new();
        for _ in 0..r.count()? {
            let name = r.string()?;
            let matches = (0..r.count()?)
                .map(|_| read_match(&mut r))
                .collect::<Result<_, _>>()?;
            routes.push(DataPlaneRoute { name, matches });
        }
        groups.push(RouteGroup {
            profile,
            hostnames,
            routes,
        });
    }
    Ok(DataPlaneDocument {
        schema_version: crate::DATA_PLANE_SCHEMA_VERSION,
        gateway,
        options,
        strings: strings.table,
        profiles,
        groups,
    })
}

/// The schema-2 string table, rebuilt by [`decode`].
#[derive(Default)]
struct Strings {
    table: Vec<String>,
    index: std::collections::HashMap<String, u32>,
}

impl Strings {
    fn intern(&mut self, s: &str) -> u32 {
        let next = u32::try_from(self.table.len()).unwrap_or(u32::MAX);
        let table = &mut self.table;
        *self.index.entry(s.to_string()).or_insert_with(|| {
            table.push(s.to_string());
            next
        })
    }

    fn changes(&mut self, c: &HeaderChanges) -> crate::schema2::InternedChanges {
        let mut pairs = |hs: &[Header]| {
            hs.iter()
                .map(|h| [self.intern(&h.name), self.intern(&h.value)])
                .collect::<Vec<_>>()
        };
        let set = pairs(&c.set);
        let add = pairs(&c.add);
        crate::schema2::InternedChanges {
            set,
            add,
            remove: c.remove.iter().map(|n| self.intern(n)).collect(),
        }
    }
}
