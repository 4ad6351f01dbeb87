//! The table's writer (`attache render`, `attache watch`, the controller).

use crate::schema2::{DataPlaneDocument, InternedChanges, Profile};
use crate::{HttpRouteMatch, PathMatchType, Retry, StringMatchType, Timeouts};

use super::{KNOWN_RETRY_TRIGGERS, MAGIC};

/// Encodes a data-plane document; the same document always encodes alike.
pub fn encode(doc: &DataPlaneDocument) -> Vec<u8> {
    encode_with_cuts(doc).0
}

/// Profiles or groups per piece when the table is sealed in pieces.
pub const PER_CHUNK: usize = 512;

/// The table, and where to cut it into pieces that an edit changes alone
/// (`envelope::seal_chunks`): before the profiles, every [`PER_CHUNK`]
/// profiles, before the groups (the one place the filter needs a cut: the
/// two sections are kept apart) and every [`PER_CHUNK`] groups. A policy edit
/// changes one profile record, so one piece; the cuts follow the content,
/// not byte offsets, so a record that grows shifts no other piece.
pub fn encode_with_cuts(doc: &DataPlaneDocument) -> (Vec<u8>, Vec<usize>) {
    let mut cuts = Vec::new();
    let mut w = Writer(MAGIC.to_vec());
    w.str(&doc.gateway);
    let flags = u8::from(doc.options.trust_client_control_headers)
        | (u8::from(doc.options.istio_route_names) << 1);
    w.0.push(flags);
    w.varint(doc.options.listener_ports.len() as u64);
    for (key, port) in &doc.options.listener_ports {
        w.str(key);
        w.varint(u64::from(*port));
    }
    cuts.push(w.0.len());
    w.varint(doc.profiles.len() as u64);
    for (p, profile) in doc.profiles.iter().enumerate() {
        if p > 0 && p % PER_CHUNK == 0 {
            cuts.push(w.0.len());
        }
        let mut record = Writer(Vec::new());
        // Written from the interned profile, not through `settings`, which
        // copies every string of every profile (a tenth of an edit round's
        // encode at 10,000 routes, issue 30). An index past `strings`
        // cannot be carried (the schema-2 reader refuses such a document
        // before it is ever encoded): such a profile is written empty.
        if profile.strings_within(doc.strings.len()) {
            record.profile(profile, &doc.strings);
        } else {
            record.profile(&Profile::default(), &doc.strings);
        }
        w.varint(record.0.len() as u64);
        w.0.extend_from_slice(&record.0);
    }
    cuts.push(w.0.len());
    w.varint(doc.groups.len() as u64);
    for (g, group) in doc.groups.iter().enumerate() {
        if g > 0 && g % PER_CHUNK == 0 {
            cuts.push(w.0.len());
        }
        w.varint(group.profile.map_or(0, |p| u64::from(p) + 1));
        w.varint(group.hostnames.len() as u64);
        for h in &group.hostnames {
            w.str(h);
        }
        w.varint(group.routes.len() as u64);
        for route in &group.routes {
            w.str(&route.name);
            w.varint(route.matches.len() as u64);
            for m in &route.matches {
                w.route_match(m);
            }
        }
    }
    (w.0, cuts)
}

struct Writer(Vec<u8>);

impl Writer {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn str(&mut self, s: &str) {
        self.varint(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }

    /// Every settings field is named (no `..`): a new one does not compile
    /// until the table carries it (and `profile.rs` reads it back). Header
    /// names and values are `strings`' (the caller checked the indices).
    fn profile(&mut self, p: &Profile, strings: &[String]) {
        let Profile {
            timeouts,
            retry,
            request_headers,
            response_headers,
        } = p;
        let t = timeouts.as_ref();
        let (request, backend) = match t {
            Some(Timeouts {
                request_ms,
                backend_request_ms,
            }) => (*request_ms, *backend_request_ms),
            None => (None, None),
        };
        let flags = u8::from(request.is_some())
            | u8::from(backend.is_some()) << 1
            | u8::from(retry.is_some()) << 2
            | u8::from(request_headers.is_some()) << 3
            | u8::from(response_headers.is_some()) << 4
            | u8::from(t.is_some()) << 5;
        self.0.push(flags);
        for v in [request, backend].into_iter().flatten() {
            self.varint(v);
        }
        if let Some(Retry {
            attempts,
            codes,
            backoff_ms,
            retry_on,
        }) = retry
        {
            let flags = u8::from(attempts.is_some())
                | u8::from(codes.is_some()) << 1
                | u8::from(backoff_ms.is_some()) << 2
                | u8::from(retry_on.is_some()) << 3;
            self.0.push(flags);
            if let Some(a) = attempts {
                self.varint(u64::from(*a));
            }
            if let Some(codes) = codes {
                self.varint(codes.len() as u64);
                codes.iter().for_each(|&c| self.varint(u64::from(c)));
            }
            if let Some(b) = backoff_ms {
                self.varint(*b);
            }
            if let Some(on) = retry_on {
                self.varint(on.len() as u64);
                for trigger in on {
                    match KNOWN_RETRY_TRIGGERS.iter().position(|k| k == trigger) {
                        Some(k) => self.varint(k as u64 + 1),
                        None => {
                            self.varint(0);
                            self.str(trigger);
                        }
                    }
                }
            }
        }
        let text = |index: &u32| strings.get(*index as usize).map_or("", String::as_str);
        for InternedChanges { set, add, remove } in
            [request_headers, response_headers].into_iter().flatten()
        {
            for pairs in [set, add] {
                self.varint(pairs.len() as u64);
                for [name, value] in pairs {
                    self.str(text(name));
                    self.str(text(value));
                }
            }
            self.varint(remove.len() as u64);
            remove.iter().for_each(|n| self.str(text(n)));
        }
    }

    fn route_match(&mut self, m: &HttpRouteMatch) {
        let path = m.path.as_ref().map_or(0, |p| match p.kind {
            PathMatchType::Exact => 1,
            PathMatchType::PathPrefix => 2,
            PathMatchType::RegularExpression => 3,
        });
        let flags = path
            | u8::from(m.method.is_some()) << 2
            | u8::from(m.grpc_method.is_some()) << 3
            | u8::from(!m.headers.is_empty()) << 4
            | u8::from(!m.query_params.is_empty()) << 5;
        self.0.push(flags);
        if let Some(p) = &m.path {
            self.str(&p.value);
        }
        if let Some(method) = &m.method {
            self.str(method);
        }
        if let Some(g) = &m.grpc_method {
            let flags = u8::from(g.kind == StringMatchType::RegularExpression)
                | u8::from(g.service.is_some()) << 1
                | u8::from(g.method.is_some()) << 2;
            self.0.push(flags);
            for s in [&g.service, &g.method].into_iter().flatten() {
                self.str(s);
            }
        }
        let kind = |k: StringMatchType| u8::from(k == StringMatchType::RegularExpression);
        if !m.headers.is_empty() {
            self.varint(m.headers.len() as u64);
            for h in &m.headers {
                self.0.push(kind(h.kind));
                self.str(&h.name);
                self.str(&h.value);
            }
        }
        if !m.query_params.is_empty() {
            self.varint(m.query_params.len() as u64);
            for q in &m.query_params {
                self.0.push(kind(q.kind));
                self.str(&q.name);
                self.str(&q.value);
            }
        }
    }
}
