//! The schema-2 encoder: a schema-1 document to its data-plane encoding,
//! profiles and strings numbered by first use. Built for the controller's
//! edit rounds too (issue 30): each entry's settings are compared with the
//! entry before's before a profile is built, and [`DataPlaneDocument::encode_owned`]
//! moves names and matches instead of copying them.

use std::collections::HashMap;

use super::{
    DataPlaneDocument, DataPlaneRoute, InternedChanges, Profile, RouteGroup,
    DATA_PLANE_SCHEMA_VERSION,
};
use crate::{Document, Header, HeaderChanges, HttpRouteMatch, RouteEntry, Settings};

impl DataPlaneDocument {
    /// Encodes a schema-1 document: profiles and strings deduplicated in
    /// order of first use, so the same document always encodes alike.
    pub fn encode(document: &Document) -> Self {
        let mut encoder = Encoder::sized(document.routes.len());
        for (i, entry) in document.routes.iter().enumerate() {
            let before = i.checked_sub(1).and_then(|j| document.routes.get(j));
            encoder.push(entry, before, entry.name.clone(), entry.matches.clone());
        }
        encoder.finish(document)
    }

    /// [`DataPlaneDocument::encode`] of a document the caller is done
    /// with: each entry's name and matches are moved, not copied (at
    /// 10,000 routes x 3 rules, 30,000 names and match lists a round of
    /// the controller otherwise copied and freed, issue 30).
    pub fn encode_owned(mut document: Document) -> Self {
        let mut encoder = Encoder::sized(document.routes.len());
        for i in 0..document.routes.len() {
            let (done, rest) = document.routes.split_at_mut(i);
            let Some(entry) = rest.first_mut() else {
                break;
            };
            let name = std::mem::take(&mut entry.name);
            let matches = std::mem::take(&mut entry.matches);
            encoder.push(entry, done.last(), name, matches);
        }
        encoder.finish(&document)
    }
}

/// The tables [`DataPlaneDocument::encode`] builds, entry by entry.
struct Encoder {
    strings: Interner,
    /// Each distinct profile with its index (its place in the document's
    /// `profiles`): kept only here, and put in order at the end, so that
    /// no profile is copied.
    profile_index: HashMap<Profile, u32>,
    groups: Vec<RouteGroup>,
    /// The profile of the entry pushed last.
    last: Option<u32>,
}

impl Encoder {
    fn sized(entries: usize) -> Self {
        Encoder {
            strings: Interner::default(),
            // Sized for a profile per entry, the worst case and a common
            // one (a policy per route): growing the table rehashes every
            // profile.
            profile_index: HashMap::with_capacity(entries),
            groups: Vec::new(),
            last: None,
        }
    }

    /// Adds `entry` (named `name`, matching `matches`), which follows
    /// `before` in the document.
    fn push(
        &mut self,
        entry: &RouteEntry,
        before: Option<&RouteEntry>,
        name: String,
        matches: Vec<HttpRouteMatch>,
    ) {
        // Most entries have the settings of the entry before (a route's
        // rules), so the profile of that one: compared before a profile is
        // built and looked up, which interns and hashes every setting.
        let index = match before {
            Some(before) if before.settings == entry.settings => self.last,
            _ => self.profile_of(entry),
        };
        self.last = index;
        let route = DataPlaneRoute { name, matches };
        match self.groups.last_mut() {
            Some(group) if group.profile == index && group.hostnames == entry.hostnames => {
                group.routes.push(route)
            }
            _ => self.groups.push(RouteGroup {
                profile: index,
                hostnames: entry.hostnames.clone(),
                routes: vec![route],
            }),
        }
    }

    /// The index of the entry's profile, numbered at its first use; `None`
    /// for an entry without settings.
    fn profile_of(&mut self, entry: &RouteEntry) -> Option<u32> {
        // Every setting is named (no `..`): a new one does not compile
        // until a profile carries it.
        let Settings {
            timeouts,
            retry,
            request_headers,
            response_headers,
        } = &entry.settings;
        let strings = &mut self.strings;
        let profile = Profile {
            timeouts: timeouts.clone(),
            retry: retry.clone(),
            request_headers: request_headers.as_ref().map(|c| strings.changes(c)),
            response_headers: response_headers.as_ref().map(|c| strings.changes(c)),
        };
        if profile == Profile::default() {
            return None;
        }
        // A new profile takes the next index (one hash, no copy).
        let next = index_u32(self.profile_index.len());
        Some(*self.profile_index.entry(profile).or_insert(next))
    }

    fn finish(self, document: &Document) -> DataPlaneDocument {
        let mut profiles = vec![Profile::default(); self.profile_index.len()];
        for (profile, index) in self.profile_index {
            if let Some(place) = profiles.get_mut(index as usize) {
                *place = profile;
            }
        }
        DataPlaneDocument {
            schema_version: DATA_PLANE_SCHEMA_VERSION,
            gateway: document.gateway.clone(),
            options: document.options.clone(),
            strings: self.strings.table,
            profiles,
            groups: self.groups,
        }
    }
}

#[derive(Default)]
struct Interner {
    table: Vec<String>,
    index: HashMap<String, u32>,
}

impl Interner {
    fn intern(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = index_u32(self.table.len());
        self.table.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }

    /// Every field is named (no `..`): a new kind of header change does not
    /// compile until it is interned here.
    fn changes(&mut self, changes: &HeaderChanges) -> InternedChanges {
        let HeaderChanges { set, add, remove } = changes;
        let mut pairs = |headers: &[Header]| {
            headers
                .iter()
                .map(|h| [self.intern(&h.name), self.intern(&h.value)])
                .collect::<Vec<_>>()
        };
        let set = pairs(set);
        let add = pairs(add);
        InternedChanges {
            set,
            add,
            remove: remove.iter().map(|n| self.intern(n)).collect(),
        }
    }
}

/// Tables beyond 4 billion entries cannot come from a real Gateway; the
/// saturated index would be refused by the reader as out of range.
fn index_u32(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(u32::MAX)
}
