use super::*;

fn text(n: usize) -> Vec<u8> {
    (0..n)
        .map(|i| format!("{{\"name\":\"r{i}\",\"x\":{}}}", i * 7919 % 1000))
        .collect::<Vec<_>>()
        .join(",")
        .into_bytes()
}

#[test]
fn field_names_are_the_constants() {
    let value = serde_json::to_value(seal(b"{}")).unwrap();
    let mut keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    keys.sort_unstable();
    assert_eq!(keys, [DATA_FIELD, ENCODING_FIELD, LENGTH_FIELD]);
    assert_eq!(value[ENCODING_FIELD], ZLIB_BASE64);
    assert_eq!(value[LENGTH_FIELD], 2);
}

#[test]
fn round_trip_small_and_large() {
    for n in [0, 1, 100, 20_000] {
        let doc = text(n);
        let sealed = seal(&doc);
        assert_eq!(sealed.length, doc.len() as u64);
        assert_eq!(open_all(sealed).unwrap(), doc, "{n}");
    }
    // Larger than the chunk and compressible: it really is compressed.
    let doc = text(20_000);
    assert!(seal(&doc).data.len() * 4 < doc.len());
}

#[test]
fn wrong_encoding_is_refused_naming_the_field() {
    let mut e = seal(b"{}");
    e.encoding = "gzip".into();
    let err = open_all(e).unwrap_err();
    assert_eq!(err.field(), ENCODING_FIELD);
    assert!(err.to_string().contains("\"gzip\""), "{err}");
}

#[test]
fn bad_base64_is_refused() {
    let mut e = seal(b"{}");
    e.data.insert(3, '!');
    let err = open_all(e).unwrap_err();
    assert!(matches!(err, EnvelopeError::Base64(_)), "{err:?}");
    assert_eq!(err.field(), DATA_FIELD);
}

#[test]
fn the_reader_decodes_what_the_writer_encodes_and_nothing_else() {
    // The reader's own base64 (small in the .wasm) against the base64
    // crate the writer uses: every length and every byte value.
    for n in 0..70 {
        let bytes: Vec<u8> = (0..n).map(|i| (i * 37 + n) as u8).collect();
        let text = base64::engine::general_purpose::STANDARD.encode(&bytes);
        assert_eq!(decode_base64(text.as_bytes()).unwrap(), bytes, "{n}");
    }
    let all: Vec<u8> = (0..=255).collect();
    let text = base64::engine::general_purpose::STANDARD.encode(&all);
    assert_eq!(decode_base64(text.as_bytes()).unwrap(), all);
    for bad in ["abc", "ab=c", "a===", "ab==abcd", "ab\ncd==", "abc-", "YQ"] {
        assert!(decode_base64(bad.as_bytes()).is_err(), "{bad}");
    }
    let e = decode_base64(b"abcd ab=").unwrap_err().to_string();
    assert_eq!(e, "not standard base64: invalid character ' ' at offset 4");
    // Found after the loop, in the body as in the last quad: the first one.
    let e = decode_base64(b"abcdab-d!bcdabc=").unwrap_err().to_string();
    assert_eq!(e, "not standard base64: invalid character '-' at offset 6");
}

#[test]
fn truncated_data_is_refused() {
    let doc = text(2_000);
    let sealed = seal(&doc);
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&sealed.data)
        .unwrap();
    let cut = Envelope {
        data: base64::engine::general_purpose::STANDARD.encode(&bytes[..bytes.len() / 2]),
        chunks: Vec::new(),
        ..sealed
    };
    let err = open_all(cut).unwrap_err();
    assert!(matches!(err, EnvelopeError::Truncated { .. }), "{err:?}");
}

#[test]
fn corrupt_data_and_trailing_bytes_are_refused() {
    let doc = text(50);
    let sealed = seal(&doc);
    let mut bytes = base64::engine::general_purpose::STANDARD
        .decode(&sealed.data)
        .unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff; // the Adler-32 checksum
    let bad = Envelope {
        data: base64::engine::general_purpose::STANDARD.encode(&bytes),
        chunks: Vec::new(),
        ..sealed.clone()
    };
    assert!(matches!(
        open_all(bad).unwrap_err(),
        EnvelopeError::Corrupt(_)
    ));
    bytes[last] ^= 0xff;
    bytes.extend_from_slice(b"more");
    let trailing = Envelope {
        data: base64::engine::general_purpose::STANDARD.encode(&bytes),
        chunks: Vec::new(),
        ..sealed
    };
    assert_eq!(open_all(trailing).unwrap_err(), EnvelopeError::Trailing(4));
}

#[test]
fn a_bomb_stops_at_the_declared_length() {
    // 32 MiB of zeros deflate to ~32 KB; the envelope claims 1,000 bytes.
    let zeros = vec![0u8; 32 * 1024 * 1024];
    let mut bomb = seal(&zeros);
    assert!(bomb.data.len() < 100_000);
    bomb.length = 1_000;
    let opened = Opened::new(bomb).unwrap();
    // No more room than the declared length is ever set aside.
    assert_eq!(opened.room(), 1_000);
    let mut out = b"kept".to_vec();
    assert_eq!(
        opened.inflate_onto(&mut out),
        Err(EnvelopeError::Overflow { length: 1_000 })
    );
    // What `out` held before is left as it was, nothing of the bomb added.
    assert_eq!(out, b"kept");
    // A declared length that the data is too small to inflate to is not
    // set aside either: deflate expands at most 1,032 to 1.
    let mut tall = seal(b"{}");
    tall.length = MAX_DOCUMENT_BYTES;
    let opened = Opened::new(tall).unwrap();
    assert_eq!(opened.room(), opened.compressed_len() * 1032);
    // A declared length over the cap is refused before anything.
    let mut huge = seal(b"{}");
    huge.length = MAX_DOCUMENT_BYTES + 1;
    let err = open_all(huge).unwrap_err();
    assert_eq!(err.field(), LENGTH_FIELD);
}

#[test]
fn a_short_stream_is_refused() {
    let mut e = seal(b"{\"a\":1}");
    e.length = 100;
    assert_eq!(
        open_all(e).unwrap_err(),
        EnvelopeError::Short {
            inflated: 7,
            length: 100
        }
    );
}

#[test]
fn a_document_sealed_in_pieces_opens_whole_and_each_piece_alone() {
    let document: Vec<u8> = (0..40_000u32).flat_map(|i| i.to_le_bytes()).collect();
    let sealed = seal_chunks(&document, &[0, 1000, 1000, 70_000, 160_000]);
    assert_eq!(sealed.encoding, ZLIB_BASE64_CHUNKS);
    // An empty piece (a cut at 0, two cuts at one place) is not written.
    assert_eq!(sealed.chunks.len(), 3);
    assert!(sealed.data.is_empty());
    assert!(open_all(sealed.clone()) == Ok(document.clone()));
    let first = open_all(sealed.chunks[0].clone()).unwrap();
    assert!(first == document[..1000]);
    // Pieces whose lengths do not add up, a piece in pieces, data beside
    // the pieces: each refused before anything is inflated.
    let mut short = sealed.clone();
    short.length -= 1;
    assert!(matches!(
        check_chunks(&short),
        Err(EnvelopeError::Chunks(_))
    ));
    let mut nested = sealed.clone();
    nested.chunks[1] = seal_chunks(&document[1000..70_000], &[]);
    assert!(matches!(
        check_chunks(&nested),
        Err(EnvelopeError::Chunks(_))
    ));
    let mut both = sealed.clone();
    both.data = "eJw=".into();
    assert_eq!(check_chunks(&both).unwrap_err().field(), CHUNKS_FIELD);
    // A one-stream reader does not take the chunked form.
    assert!(matches!(
        Opened::new(sealed),
        Err(EnvelopeError::Encoding(_))
    ));
}
