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
//! The head (gateway, options, profiles) and the groups are hashed apart
//! ([`of_parts`]), so that an update that keeps its routes costs the filter
//! a pass over the head only.
//!
//! [`BITS`] bits: a Prometheus sample is a double, exact for integers below
//! 2^53, and so is a number that goes through a `Struct`. Never 0, which
//! the gauge reads before any document was accepted.

/// How many bits an identity has.
pub const BITS: u32 = 52;

const K: u64 = 0x517c_c1b7_2722_0a95;

fn step(h: u64, word: u64) -> u64 {
    let h = (h ^ word).wrapping_mul(K);
    h ^ (h >> 29)
}

/// A 64-bit hash of `bytes`, eight bytes a step, their length first.
pub fn hash_words(bytes: &[u8]) -> u64 {
    let mut words = bytes.chunks_exact(8);
    let mut h = step(K, bytes.len() as u64);
    for word in &mut words {
        h = step(h, word.try_into().map_or(0, u64::from_le_bytes));
    }
    let mut last = [0u8; 8];
    let rest = words.remainder();
    if let Some(room) = last.get_mut(..rest.len()) {
        room.copy_from_slice(rest);
    }
    step(h, u64::from_le_bytes(last))
}

/// The identity from the hashes of the table's head and of its groups
/// ([`crate::table::groups_offset`] splits them): hashed apart so that the
/// filter, whose update keeps the groups of its last document when they
/// are the same bytes, keeps their hash too and hashes only the head.
/// [`BITS`] bits, never 0.
pub fn of_parts(head: u64, groups: u64) -> u64 {
    let h = step(step(K, head), groups).wrapping_mul(K);
    let id = (h ^ (h >> 32)) >> (64 - BITS);
    id.max(1)
}

/// The identity of a table (attache_contract::table's bytes). Bytes that
/// are not a table are hashed as a head without groups (the filter refuses
/// them; they have an identity all the same).
pub fn document_id(table: &[u8]) -> u64 {
    let split = crate::table::groups_offset(table).unwrap_or(table.len());
    let (head, groups) = table.split_at(split.min(table.len()));
    of_parts(hash_words(head), hash_words(groups))
}

/// The identity of a schema-2 document: that of its table.
pub fn of_document(doc: &crate::DataPlaneDocument) -> u64 {
    document_id(&crate::table::encode(doc))
}

#[cfg(test)]
mod tests {
    use super::{document_id, hash_words, of_parts, BITS};
    use crate::table::groups_offset;

    fn table() -> Vec<u8> {
        let doc: crate::DataPlaneDocument = serde_json::from_str(
            r#"{"schemaVersion": 2, "gateway": "infra/edge", "strings": ["x-a", "1"],
                "profiles": [{"timeouts": {"requestMs": 1500}, "requestHeaders": {"set": [[0, 1]]}}],
                "groups": [{"profile": 0, "hostnames": ["a.example"], "routes": [{"name": "http/shop/a/0"}]}]}"#,
        )
        .unwrap();
        crate::table::encode(&doc)
    }

    #[test]
    fn a_tables_identity_is_that_of_its_head_and_groups() {
        let table = table();
        let split = groups_offset(&table).unwrap();
        assert!(split > crate::table::MAGIC.len() && split < table.len());
        let (head, groups) = table.split_at(split);
        assert_eq!(
            document_id(&table),
            of_parts(hash_words(head), hash_words(groups))
        );
        // The same bytes cut elsewhere are another document.
        let (a, b) = table.split_at(split - 1);
        assert_ne!(document_id(&table), of_parts(hash_words(a), hash_words(b)));
    }

    #[test]
    fn identities_tell_tables_apart_and_fit_a_double() {
        let table = table();
        let mut changed = table.clone();
        if let Some(last) = changed.last_mut() {
            *last ^= 1;
        }
        assert_ne!(document_id(&table), document_id(&changed));
        assert_ne!(hash_words(b"a"), hash_words(b"a\0"));
        assert_ne!(hash_words(b""), hash_words(b"\0"));
        for bytes in [&b""[..], b"x", b"12345678", b"123456789", &table] {
            let id = document_id(bytes);
            assert!(id > 0 && id < 1 << BITS, "{id}");
            // Exact as a Prometheus sample and as a protobuf Struct number.
            assert_eq!(id as f64 as u64, id);
        }
    }
}
