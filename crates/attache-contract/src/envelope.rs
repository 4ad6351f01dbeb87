//! The compressed `pluginConfig`: the data-plane document (schema 2)
//! deflated (zlib) and base64-encoded into one string field, for Gateways
//! whose document would not fit inline in an Istio `WasmPlugin`
//! (docs/plugin-delivery.md).
//!
//! One definition for both halves: `attache render wasmplugin` (and the
//! controller, which applies render's object) writes it with [`seal`], the
//! filter reads it with [`Opened`]. The envelope is a JSON object, because a
//! `WasmPlugin.pluginConfig` is a protobuf `Struct`:
//!
//! ```json
//! {"encoding": "zlib+base64", "length": 5010099, "data": "eJzsvQ..."}
//! ```
//!
//! `length` is the inflated document's size in bytes; the reader stops at
//! it, so a small blob that inflates to gigabytes (a "zip bomb") costs at
//! most [`MAX_DOCUMENT_BYTES`] of work and no memory beyond a buffer.

use std::io;

use base64::Engine;
use miniz_oxide::inflate::stream::{inflate, InflateState};
use miniz_oxide::{DataFormat, MZError, MZFlush, MZStatus};
use serde::{Deserialize, Serialize};

/// The envelope's field naming how `data` is encoded.
pub const ENCODING_FIELD: &str = "encoding";
/// The envelope's field holding the inflated document's size in bytes.
pub const LENGTH_FIELD: &str = "length";
/// The envelope's field holding the encoded document.
pub const DATA_FIELD: &str = "data";
/// The only encoding: zlib (RFC 1950, deflate with an Adler-32 checksum of
/// the inflated bytes) in standard, padded base64 (RFC 4648 section 4).
pub const ZLIB_BASE64: &str = "zlib+base64";

/// Largest inline `pluginConfig` (compact JSON bytes) written as is; a larger
/// one is sealed. A plain `kubectl apply` stores the whole object in the
/// `last-applied-configuration` annotation, and a object's annotations may
/// hold 262,144 bytes in all (apimachinery `TotalAnnotationSizeLimitB`):
/// 240 KiB leaves 16 KiB for the rest of the WasmPlugin. Under it, the
/// document stays readable in `kubectl get -o yaml`.
pub const INLINE_MAX_BYTES: usize = 240 * 1024;

/// Largest inflated document a reader accepts: 64 MiB, about 13 times the
/// 10,000-route distinct-policy Gateway (5.0 MB) and more than a 1 MiB
/// object's worth of compressed data at the ratios measured
/// (docs/plugin-delivery.md), yet bounded, so a hostile envelope cannot make
/// the filter inflate without end.
pub const MAX_DOCUMENT_BYTES: u64 = 64 * 1024 * 1024;

/// The deflate level the writer uses: the best ratio (miniz level 9, like
/// `gzip -9`); the writer runs once per change, the reader is unaffected.
const LEVEL: u8 = 9;

/// The compressed `pluginConfig`. The field names are the constants above
/// (a test checks they agree).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    pub encoding: String,
    pub length: u64,
    pub data: String,
}

/// Seals a document's JSON bytes.
pub fn seal(document: &[u8]) -> Envelope {
    let deflated = miniz_oxide::deflate::compress_to_vec_zlib(document, LEVEL);
    Envelope {
        encoding: ZLIB_BASE64.to_string(),
        length: document.len() as u64,
        data: base64::engine::general_purpose::STANDARD.encode(deflated),
    }
}

/// Why an envelope cannot be opened; each names the field at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvelopeError {
    /// `encoding` is not [`ZLIB_BASE64`].
    Encoding(String),
    /// `length` is over [`MAX_DOCUMENT_BYTES`].
    TooLong(u64),
    /// `data` is not base64.
    Base64(String),
    /// `data` is not a zlib stream (or its checksum fails).
    Corrupt(String),
    /// `data` ends before the stream does.
    Truncated { inflated: u64 },
    /// `data` inflates to more than `length` bytes.
    Overflow { length: u64 },
    /// `data` inflates to fewer than `length` bytes.
    Short { inflated: u64, length: u64 },
    /// `data` goes on after the end of the zlib stream.
    Trailing(usize),
    /// The inflated document is itself an envelope.
    Nested,
}

impl EnvelopeError {
    /// The envelope's field the error is about.
    pub fn field(&self) -> &'static str {
        match self {
            EnvelopeError::Encoding(_) | EnvelopeError::Nested => ENCODING_FIELD,
            EnvelopeError::TooLong(_) | EnvelopeError::Short { .. } => LENGTH_FIELD,
            _ => DATA_FIELD,
        }
    }
}

impl std::fmt::Display for EnvelopeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EnvelopeError::Encoding(e) => write!(
                f,
                "encoding {e:?} is not supported: this filter reads {ZLIB_BASE64:?} (what `attache render wasmplugin` writes)"
            ),
            EnvelopeError::TooLong(n) => write!(
                f,
                "{n} bytes, over the {MAX_DOCUMENT_BYTES} bytes a compressed document may inflate to"
            ),
            EnvelopeError::Base64(e) => write!(f, "not standard base64: {e}"),
            EnvelopeError::Corrupt(e) => write!(f, "not a zlib stream: {e}"),
            EnvelopeError::Truncated { inflated } => write!(
                f,
                "the zlib stream is cut short after {inflated} inflated bytes"
            ),
            EnvelopeError::Overflow { length } => write!(
                f,
                "inflates to more than the {length} bytes `length` declares: refused before inflating further"
            ),
            EnvelopeError::Short { inflated, length } => write!(
                f,
                "declares {length} bytes but data inflates to {inflated}"
            ),
            EnvelopeError::Trailing(n) => {
                write!(f, "{n} bytes follow the end of the zlib stream")
            }
            EnvelopeError::Nested => write!(
                f,
                "the inflated document is another envelope: expected the data-plane document"
            ),
        }
    }
}

impl std::error::Error for EnvelopeError {}

/// Standard, padded base64 (RFC 4648 section 4), strictly: the length a
/// multiple of 4, padding only at the end, no other characters. The writer
/// encodes with the `base64` crate; the reader decodes with these few
/// lines, 4 KB less in the `.wasm` than the crate's engine; a test holds the
/// two to each other.
fn decode_base64(text: &[u8]) -> Result<Vec<u8>, EnvelopeError> {
    fn value(c: u8) -> Option<u32> {
        Some(u32::from(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        }))
    }
    if text.len() % 4 != 0 {
        return Err(EnvelopeError::Base64(format!(
            "{} characters, not a multiple of 4",
            text.len()
        )));
    }
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let quads = text.len() / 4;
    for (q, quad) in text.chunks_exact(4).enumerate() {
        let last = q + 1 == quads;
        let pad = match quad {
            [_, _, b'=', b'='] if last => 2,
            [_, _, _, b'='] if last => 1,
            _ => 0,
        };
        let mut n = 0u32;
        for (i, &c) in quad[..4 - pad].iter().enumerate() {
            let v = value(c).ok_or_else(|| {
                EnvelopeError::Base64(format!(
                    "invalid character {:?} at offset {}",
                    char::from(c),
                    q * 4 + i
                ))
            })?;
            n |= v << (18 - 6 * i);
        }
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..4 - pad]);
    }
    Ok(out)
}

/// Size of the buffer [`Opened`] inflates into: small, so that the inflated
/// document is never held whole by the reader.
const CHUNK: usize = 16 * 1024;

/// An opened envelope: reads the inflated document, at most `length` bytes,
/// so a parser can stream it without the whole text ever being in memory.
/// After a read error, [`Opened::failure`] says which envelope field is at
/// fault (the parser wraps the error in its own).
pub struct Opened {
    deflated: Vec<u8>,
    consumed: usize,
    state: Box<InflateState>,
    buffer: Vec<u8>,
    start: usize,
    end: usize,
    inflated: u64,
    length: u64,
    finished: bool,
    failure: Option<EnvelopeError>,
}

impl Opened {
    /// Checks the encoding and the declared length and decodes the base64;
    /// nothing is inflated yet. Takes the envelope so that its text is freed
    /// once decoded.
    pub fn new(envelope: Envelope) -> Result<Self, EnvelopeError> {
        if envelope.encoding != ZLIB_BASE64 {
            return Err(EnvelopeError::Encoding(envelope.encoding));
        }
        if envelope.length > MAX_DOCUMENT_BYTES {
            return Err(EnvelopeError::TooLong(envelope.length));
        }
        let deflated = decode_base64(envelope.data.as_bytes())?;
        Ok(Opened {
            deflated,
            consumed: 0,
            state: InflateState::new_boxed(DataFormat::Zlib),
            buffer: Vec::new(),
            start: 0,
            end: 0,
            inflated: 0,
            length: envelope.length,
            finished: false,
            failure: None,
        })
    }

    /// The declared inflated size.
    pub fn length(&self) -> u64 {
        self.length
    }

    /// The size of the decoded (still deflated) data.
    pub fn compressed_len(&self) -> usize {
        self.deflated.len()
    }

    /// Why the last read failed, if it did.
    pub fn failure(&self) -> Option<&EnvelopeError> {
        self.failure.as_ref()
    }

    fn fail(&mut self, e: EnvelopeError) -> io::Error {
        self.failure = Some(e.clone());
        io::Error::new(io::ErrorKind::InvalidData, e)
    }

    /// Inflates the next chunk into the buffer; false at the end.
    fn refill(&mut self) -> Result<bool, io::Error> {
        if self.finished {
            return Ok(false);
        }
        if self.buffer.is_empty() {
            self.buffer = vec![0; CHUNK];
        }
        loop {
            let input = self.deflated.get(self.consumed..).unwrap_or_default();
            let result = inflate(&mut self.state, input, &mut self.buffer, MZFlush::None);
            self.consumed += result.bytes_consumed;
            self.inflated += result.bytes_written as u64;
            if self.inflated > self.length {
                let length = self.length;
                return Err(self.fail(EnvelopeError::Overflow { length }));
            }
            self.start = 0;
            self.end = result.bytes_written;
            match result.status {
                Ok(MZStatus::StreamEnd) => {
                    self.finished = true;
                    let rest = self.deflated.len() - self.consumed;
                    if rest > 0 {
                        return Err(self.fail(EnvelopeError::Trailing(rest)));
                    }
                    if self.inflated != self.length {
                        let (inflated, length) = (self.inflated, self.length);
                        return Err(self.fail(EnvelopeError::Short { inflated, length }));
                    }
                    return Ok(self.end > 0);
                }
                Ok(_) if self.end > 0 => return Ok(true),
                // No output and no error: more input is needed, and there
                // is none left.
                Ok(_) | Err(MZError::Buf) if self.consumed >= self.deflated.len() => {
                    let inflated = self.inflated;
                    return Err(self.fail(EnvelopeError::Truncated { inflated }));
                }
                Ok(_) | Err(MZError::Buf) => {}
                Err(e) => {
                    let why = match e {
                        MZError::Data => "corrupt data or checksum mismatch",
                        _ => "bad stream",
                    };
                    return Err(self.fail(EnvelopeError::Corrupt(why.into())));
                }
            }
        }
    }
}

impl io::Read for Opened {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        if self.start == self.end && !self.refill()? {
            return Ok(0);
        }
        let n = out.len().min(self.end - self.start);
        out[..n].copy_from_slice(&self.buffer[self.start..self.start + n]);
        self.start += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn open_all(envelope: Envelope) -> Result<Vec<u8>, EnvelopeError> {
        let mut opened = Opened::new(envelope)?;
        let mut out = Vec::new();
        match opened.read_to_end(&mut out) {
            Ok(_) => Ok(out),
            Err(_) => Err(opened.failure().cloned().expect("a recorded failure")),
        }
    }

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
        let mut opened = Opened::new(bomb).unwrap();
        let mut out = Vec::new();
        assert!(opened.read_to_end(&mut out).is_err());
        assert_eq!(
            opened.failure(),
            Some(&EnvelopeError::Overflow { length: 1_000 })
        );
        // At most one chunk past the declared length was ever inflated.
        assert!(out.len() <= 1_000 + CHUNK, "{}", out.len());
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
}
