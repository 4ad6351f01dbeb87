//! The identity of a data-plane document: the number the filter publishes
//! once it serves the document (the gauge `attache.config.document_id`,
//! docs/filter.md "What it serves") and the controller compares with what
//! it applied (docs/controller.md, "Programmed means served").
//!
//! It is a hash of the document's table encoding (schema 3, [`crate::table`])
//! and not of the bytes Envoy hands the filter, because only the table is
//! the same on both sides: istiod re-serialises a `WasmPlugin`'s
//! `pluginConfig` (a protobuf `Struct`, numbers as doubles), an envelope may
//! carry the JSON or the table, and the filter turns every form into the
//! table with [`crate::table::encode`], the writer `render` uses too. So the
//! controller computes the same number from the document it applied, with
//! no knowledge of how it travelled.
//!
//! [`BITS`] bits: a Prometheus sample is a double, exact for integers below
//! 2^53, and so is a number that goes through a `Struct`. Never 0, which
//! the gauge reads before any document was accepted.

/// How many bits an identity has.
pub const BITS: u32 = 52;

const K: u64 = 0x517c_c1b7_2722_0a95;

/// A streaming hash over the table's bytes, eight bytes a step: the filter
/// holds a table as two slices (its head and its groups), the controller
/// as one, and any split gives the same identity.
#[derive(Debug, Clone)]
pub struct DocumentId {
    state: u64,
    len: u64,
    pending: [u8; 8],
    filled: usize,
}

impl Default for DocumentId {
    fn default() -> Self {
        DocumentId {
            state: K,
            len: 0,
            pending: [0; 8],
            filled: 0,
        }
    }
}

fn step(h: u64, word: u64) -> u64 {
    let h = (h ^ word).wrapping_mul(K);
    h ^ (h >> 29)
}

impl DocumentId {
    pub fn new() -> Self {
        DocumentId::default()
    }

    /// Hashes the next bytes of the table.
    pub fn update(&mut self, mut bytes: &[u8]) {
        self.len = self.len.wrapping_add(bytes.len() as u64);
        if self.filled > 0 {
            let take = (8 - self.filled).min(bytes.len());
            let (now, rest) = bytes.split_at(take);
            if let Some(room) = self.pending.get_mut(self.filled..self.filled + take) {
                room.copy_from_slice(now);
            }
            self.filled += take;
            bytes = rest;
            if self.filled < 8 {
                return;
            }
            self.state = step(self.state, u64::from_le_bytes(self.pending));
            self.filled = 0;
        }
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            self.state = step(self.state, word.try_into().map_or(0, u64::from_le_bytes));
        }
        let rest = words.remainder();
        if let Some(room) = self.pending.get_mut(..rest.len()) {
            room.copy_from_slice(rest);
        }
        self.filled = rest.len();
    }

    /// The identity: [`BITS`] bits, never 0.
    pub fn finish(self) -> u64 {
        let mut last = [0u8; 8];
        if let (Some(room), Some(rest)) =
            (last.get_mut(..self.filled), self.pending.get(..self.filled))
        {
            room.copy_from_slice(rest);
        }
        // The length last: a table and the same table with zero bytes
        // appended differ.
        let h = step(step(self.state, u64::from_le_bytes(last)), self.len).wrapping_mul(K);
        let id = (h ^ (h >> 32)) >> (64 - BITS);
        id.max(1)
    }
}

/// The identity of a table (attache_contract::table's bytes).
pub fn document_id(table: &[u8]) -> u64 {
    let mut id = DocumentId::new();
    id.update(table);
    id.finish()
}

/// The identity of a schema-2 document: that of its table.
pub fn of_document(doc: &crate::DataPlaneDocument) -> u64 {
    document_id(&crate::table::encode(doc))
}

#[cfg(test)]
mod tests {
    use super::{document_id, DocumentId, BITS};

    #[test]
    fn any_split_of_the_bytes_gives_the_same_identity() {
        let bytes: Vec<u8> = (0..61u8).map(|b| b.wrapping_mul(37)).collect();
        let whole = document_id(&bytes);
        for a in 0..=bytes.len() {
            for b in a..=bytes.len() {
                let mut id = DocumentId::new();
                id.update(&bytes[..a]);
                id.update(&bytes[a..b]);
                id.update(&bytes[b..]);
                assert_eq!(id.finish(), whole, "split at {a} and {b}");
            }
        }
    }

    #[test]
    fn identities_tell_tables_apart_and_fit_a_double() {
        let base = document_id(b"AT\x03\0edge");
        assert_ne!(base, document_id(b"AT\x03\0edgf"));
        assert_ne!(document_id(b"a"), document_id(b"a\0"));
        assert_ne!(document_id(b""), document_id(b"\0"));
        for table in [&b""[..], b"x", b"12345678", b"123456789"] {
            let id = document_id(table);
            assert!(id > 0 && id < 1 << BITS, "{id}");
            // Exact as a Prometheus sample and as a protobuf Struct number.
            assert_eq!(id as f64 as u64, id);
        }
    }
}
