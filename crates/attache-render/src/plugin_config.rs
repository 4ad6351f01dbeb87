//! The document as the data plane receives it: the compact data-plane
//! encoding (schema 2, `attache_contract::schema2`) as compact JSON.
//! Every data-plane artefact (`render envoy`, `render ecds`, `render
//! wasmplugin`, `watch`) comes from here. Shared settings are carried once
//! as profiles, provenance and the name's parts are left out: the filter
//! never reads them, and Envoy parses every byte of its configuration (YAML
//! or JSON to proto) before the filter sees any. `attache resolve` keeps
//! schema 1 with `sources`: that output is for people and tools.

use std::io;

use attache_contract::{envelope, table, DataPlaneDocument, Document};
use serde::Serialize;
use serde_json::Value;

/// The data-plane encoding of `document`.
pub fn encode(document: &Document) -> DataPlaneDocument {
    DataPlaneDocument::encode(document)
}

/// The plugin configuration string Envoy hands the filter: the compact
/// JSON while it is small enough to read (up to
/// `attache_contract::envelope::INLINE_MAX_BYTES`), above that the table
/// encoding sealed in the envelope ([`sealed_table`]).
pub fn compact_json(document: &Document) -> Result<String, serde_json::Error> {
    let encoded = encode(document);
    if json_longer_than(&encoded, envelope::INLINE_MAX_BYTES)? {
        return serde_json::to_string(&sealed_table(&encoded));
    }
    serde_json::to_string(&encoded)
}

/// Whether `value`'s compact JSON is longer than `limit` bytes. Writing
/// stops once the limit is passed: a 10,000-route document is 5 MB of JSON,
/// of which the first 240 KiB tell (issue 30: the whole text took longer
/// than the table it is replaced by).
pub(crate) fn json_longer_than(
    value: &impl Serialize,
    limit: usize,
) -> Result<bool, serde_json::Error> {
    /// Counts what is written and refuses the byte past the limit.
    struct Bounded {
        written: usize,
        limit: usize,
    }
    impl io::Write for Bounded {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.written += bytes.len();
            if self.written > self.limit {
                return Err(io::Error::other("past the limit"));
            }
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut out = Bounded { written: 0, limit };
    match serde_json::to_writer(&mut out, value) {
        Ok(()) => Ok(false),
        Err(_) if out.written > limit => Ok(true),
        Err(e) => Err(e),
    }
}

/// The compact form for a large Gateway: the table encoding (schema 3,
/// `attache_contract::table`) zlib-compressed in the envelope. The filter
/// validates it in one pass and builds each entry on first use, where it
/// had to inflate, parse and build every entry of the JSON (5.0 MB at
/// 10,000 distinct-policy routes): docs/contract.md, "The table encoding".
///
/// Sealed in pieces (`envelope::seal_chunks`) cut where the table's content
/// is: a filter that kept the previous document's pieces inflates only the
/// ones an edit changed.
pub fn sealed_table(encoded: &DataPlaneDocument) -> envelope::Envelope {
    sealed_table_reusing(encoded, &mut SealedPieces::default())
}

/// The pieces a Gateway's last table was sealed into, in table order, so
/// that the next table deflates only the pieces an edit changed (a 10,000
/// route table is ~100 pieces; a one-policy edit changes one or two). Pure
/// memory of pure results: a piece seals to the same chunk whenever it is
/// sealed, so reusing one changes nothing in the envelope.
///
/// A piece is compared with the one at its place last time, byte for byte:
/// the cuts follow the table's content (`table::encode_with_cuts`), so an
/// edit that leaves a piece alone leaves it where it was. Keyed by the
/// pieces' bytes instead, every round hashed the whole table twice (issue
/// 30: a tenth of an edit round's encode at 10,000 routes).
#[derive(Debug, Default, Clone)]
pub struct SealedPieces {
    in_order: Vec<(Vec<u8>, envelope::Envelope)>,
    /// How many pieces the last table deflated (the others were reused).
    deflated: usize,
}

impl SealedPieces {
    /// How many pieces the last table deflated rather than reused.
    pub fn deflated(&self) -> usize {
        self.deflated
    }
}

/// [`sealed_table`], reusing the chunks of `pieces` and leaving it holding
/// this table's pieces (and only those: a piece no longer in the table is
/// forgotten).
pub fn sealed_table_reusing(
    encoded: &DataPlaneDocument,
    pieces: &mut SealedPieces,
) -> envelope::Envelope {
    let (bytes, cuts) = table::encode_with_cuts(encoded);
    let mut last = std::mem::take(&mut pieces.in_order).into_iter();
    let mut kept = Vec::with_capacity(cuts.len() + 1);
    pieces.deflated = 0;
    let sealed = envelope::seal_chunks_with(&bytes, &cuts, |piece| {
        let chunk = match last.next() {
            Some((was, chunk)) if was == piece => chunk,
            _ => {
                pieces.deflated += 1;
                envelope::seal(piece)
            }
        };
        kept.push((piece.to_vec(), chunk.clone()));
        chunk
    });
    pieces.in_order = kept;
    sealed
}

/// The same document as a structured value, for manifests (Istio's
/// `pluginConfig`) that embed it as an object rather than a string.
pub fn value(document: &Document) -> Result<Value, serde_json::Error> {
    serde_json::to_value(encode(document))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_fixtures::one_route_document;
    use attache_contract::RouteEntry;
    use attache_contract::DATA_PLANE_SCHEMA_VERSION;

    #[test]
    fn the_data_plane_gets_the_compact_encoding_without_provenance() {
        let original = one_route_document(500);
        let carried: DataPlaneDocument =
            serde_json::from_str(&compact_json(&original).unwrap()).unwrap();
        assert_eq!(carried, DataPlaneDocument::encode(&original));
        assert_eq!(carried.schema_version, DATA_PLANE_SCHEMA_VERSION);
        assert_eq!(carried.groups[0].routes[0].name, original.routes[0].name);
        let profile = carried.groups[0].profile.unwrap() as usize;
        assert_eq!(
            carried.profiles[profile].timeouts,
            original.routes[0].settings.timeouts
        );
        // The caller's document (what `attache resolve` prints) is untouched.
        assert_eq!(original.routes[0].sources.len(), 1);
    }

    #[test]
    fn a_large_gateway_gets_the_table_sealed_in_pieces_small_ones_the_json() {
        let large = distinct_routes(1000);
        assert!(serde_json::to_vec(&encode(&large)).unwrap().len() > envelope::INLINE_MAX_BYTES);
        // What `render ecds`, `render envoy` and `watch` put in the ECDS file.
        let text = compact_json(&large).unwrap();
        let sealed: envelope::Envelope = serde_json::from_str(&text).unwrap();
        assert_eq!(sealed.encoding, envelope::ZLIB_BASE64_CHUNKS);
        assert!(sealed.chunks.len() > 2, "{}", sealed.chunks.len());
        let table = envelope::open_all(sealed).unwrap();
        assert_eq!(table::decode(&table).unwrap(), encode(&large));
        let small = compact_json(&one_route_document(500)).unwrap();
        assert!(small.starts_with(r#"{"schemaVersion":2"#), "{small}");
    }

    /// 4,000 routes, each with its own request timeout (so its own
    /// profile), starting at `base` ms.
    fn distinct_routes(base: u64) -> Document {
        let mut large = one_route_document(500);
        let template = large.routes[0].clone();
        large.routes = (0..4000u64)
            .map(|i| RouteEntry {
                name: format!("http/shop/r{i}/0"),
                settings: attache_contract::Settings {
                    timeouts: Some(attache_contract::Timeouts {
                        request_ms: Some(base + i),
                        ..attache_contract::Timeouts::default()
                    }),
                    ..Default::default()
                },
                ..template.clone()
            })
            .collect();
        large
    }

    #[test]
    fn a_table_sealed_reusing_the_last_pieces_is_the_table_sealed_afresh() {
        let mut pieces = SealedPieces::default();
        let first = encode(&distinct_routes(1000));
        assert_eq!(
            sealed_table_reusing(&first, &mut pieces),
            sealed_table(&first)
        );
        let kept = pieces.in_order.len();
        assert!(kept > 2, "{kept}");
        assert_eq!(pieces.deflated(), kept, "nothing to reuse the first time");
        // One route's timeout changes: its profile's piece changes, the
        // others are handed back; the envelope is the fresh one.
        let mut edited = distinct_routes(1000);
        edited.routes[1234].settings.timeouts = Some(attache_contract::Timeouts {
            request_ms: Some(99),
            ..attache_contract::Timeouts::default()
        });
        let edited = encode(&edited);
        let sealed = sealed_table_reusing(&edited, &mut pieces);
        assert_eq!(sealed, sealed_table(&edited));
        assert_ne!(sealed, sealed_table(&first));
        assert_eq!(pieces.deflated(), 1, "only the edited profile's piece");
        assert_eq!(
            pieces.in_order.len(),
            kept,
            "the replaced piece is forgotten"
        );
        // Every value changes: no piece is reused, and none is stale.
        let other = encode(&distinct_routes(7000));
        assert_eq!(
            sealed_table_reusing(&other, &mut pieces),
            sealed_table(&other)
        );
    }

    #[test]
    fn the_length_check_stops_past_the_limit_and_is_exact_at_it() {
        let value = serde_json::json!({"a": "0123456789"});
        let length = serde_json::to_vec(&value).unwrap().len();
        assert!(!json_longer_than(&value, length).unwrap());
        assert!(json_longer_than(&value, length - 1).unwrap());
        assert!(json_longer_than(&value, 0).unwrap());
    }

    #[test]
    fn the_json_is_compact() {
        let text = compact_json(&one_route_document(500)).unwrap();
        assert!(!text.contains('\n'), "{text}");
        assert!(!text.contains(": "), "{text}");
        assert!(!text.contains("sources"), "{text}");
    }

    #[test]
    fn the_value_has_no_sources_key() {
        let value = value(&one_route_document(500)).unwrap();
        assert!(
            value["groups"][0]["routes"][0].get("sources").is_none(),
            "{value}"
        );
        assert_eq!(value["schemaVersion"], 2);
        assert_eq!(value["profiles"][0]["timeouts"]["requestMs"], 500);
    }
}
