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
/// The one-stream encoding: zlib (RFC 1950, deflate with an Adler-32
/// checksum of the inflated bytes) in standard, padded base64 (RFC 4648
/// section 4).
pub const ZLIB_BASE64: &str = "zlib+base64";
/// The document in pieces: `chunks` holds one [`ZLIB_BASE64`] envelope per
/// piece, in order, each compressed on its own; `length` is their sum. A
/// reader that kept the previous document's chunks inflates only the chunks
/// whose text changed (the filter, at each update: issue 31).
pub const ZLIB_BASE64_CHUNKS: &str = "zlib+base64-chunks";
/// The chunked envelope's field holding the chunks.
pub const CHUNKS_FIELD: &str = "chunks";

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
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    pub encoding: String,
    pub length: u64,
    /// Empty in a chunked envelope.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub data: String,
    /// Only in a chunked envelope ([`ZLIB_BASE64_CHUNKS`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chunks: Vec<Envelope>,
}

/// Seals a document's JSON bytes.
pub fn seal(document: &[u8]) -> Envelope {
    let deflated = miniz_oxide::deflate::compress_to_vec_zlib(document, LEVEL);
    Envelope {
        encoding: ZLIB_BASE64.to_string(),
        length: document.len() as u64,
        data: base64::engine::general_purpose::STANDARD.encode(deflated),
        chunks: Vec::new(),
    }
}

/// Seals a document in pieces, cut at `cuts` (offsets, ascending): each
/// piece its own zlib stream. Cut where the content has boundaries (the
/// table's profiles and groups), so that an edit changes the text of the
/// pieces it touches and no other.
pub fn seal_chunks(document: &[u8], cuts: &[usize]) -> Envelope {
    let mut chunks = Vec::with_capacity(cuts.len() + 1);
    let mut start = 0;
    for &cut in cuts.iter().chain([&document.len()]) {
        if let Some(piece) = document.get(start..cut).filter(|p| !p.is_empty()) {
            chunks.push(seal(piece));
            start = cut;
        }
    }
    Envelope {
        encoding: ZLIB_BASE64_CHUNKS.to_string(),
        length: document.len() as u64,
        data: String::new(),
        chunks,
    }
}

/// The whole document of either form, for tools and tests (the filter
/// inflates its own way, reusing unchanged chunks).
pub fn open_all(envelope: Envelope) -> Result<Vec<u8>, EnvelopeError> {
    use std::io::Read;
    let pieces = if envelope.encoding == ZLIB_BASE64_CHUNKS {
        check_chunks(&envelope)?;
        envelope.chunks
    } else {
        vec![envelope]
    };
    let mut out = Vec::new();
    for piece in pieces {
        let mut opened = Opened::new(piece)?;
        if let Err(e) = opened.read_to_end(&mut out) {
            return Err(opened
                .failure()
                .cloned()
                .unwrap_or(EnvelopeError::Corrupt(e.to_string())));
        }
    }
    Ok(out)
}

/// Checks a chunked envelope before any chunk is opened: its encoding, no
/// `data`, every chunk a one-stream envelope, the lengths adding up and
/// within [`MAX_DOCUMENT_BYTES`]. Each chunk is then opened with
/// [`Opened::new`].
pub fn check_chunks(envelope: &Envelope) -> Result<(), EnvelopeError> {
    if envelope.length > MAX_DOCUMENT_BYTES {
        return Err(EnvelopeError::TooLong(envelope.length));
    }
    if !envelope.data.is_empty() {
        return Err(EnvelopeError::Chunks(
            "a chunked envelope has no `data`".into(),
        ));
    }
    let mut sum = 0u64;
    for (i, chunk) in envelope.chunks.iter().enumerate() {
        if chunk.encoding != ZLIB_BASE64 || !chunk.chunks.is_empty() {
            let why = format!("chunk {i} is not a one-stream {ZLIB_BASE64:?} envelope");
            return Err(EnvelopeError::Chunks(why));
        }
        sum = sum.saturating_add(chunk.length);
    }
    if sum != envelope.length {
        let why = format!(
            "the chunks' lengths add up to {sum}, not the {} declared",
            envelope.length
        );
        return Err(EnvelopeError::Chunks(why));
    }
    Ok(())
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
    /// A chunked envelope whose chunks do not make one document.
    Chunks(String),
}

impl EnvelopeError {
    /// The envelope's field the error is about.
    pub fn field(&self) -> &'static str {
        match self {
            EnvelopeError::Encoding(_) | EnvelopeError::Nested => ENCODING_FIELD,
            EnvelopeError::Chunks(_) => CHUNKS_FIELD,
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
                "encoding {e:?} is not supported: this filter reads {ZLIB_BASE64:?} and {ZLIB_BASE64_CHUNKS:?} (what `attache render` writes)"
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
            EnvelopeError::Chunks(why) => write!(f, "{why}"),
        }
    }
}

impl std::error::Error for EnvelopeError {}

/// Standard, padded base64 (RFC 4648 section 4), strictly: the length a
/// multiple of 4, padding only at the end, no other characters. The writer
/// encodes with the `base64` crate; the reader decodes with these few
/// lines, 4 KB less in the `.wasm` than the crate's engine; a test holds the
/// two to each other.
///
/// A fresh VM decodes the whole envelope (318 KB at 10,000 distinct routes),
/// so the loop has no branch per character: every quad but the last is four
/// table look-ups written straight into place, and an invalid character
/// (its value has the high bit set) is noticed once, after the loop, by the
/// OR of all values; only then is the text searched for it. This took the
/// decode from about 15M to 4M instructions (bench/findings.md, issue 31).
fn decode_base64(text: &[u8]) -> Result<Vec<u8>, EnvelopeError> {
    if text.len() % 4 != 0 {
        return Err(EnvelopeError::Base64(format!(
            "{} characters, not a multiple of 4",
            text.len()
        )));
    }
    let (body, last) = text.split_at(text.len().saturating_sub(4));
    let mut out = vec![0u8; text.len() / 4 * 3];
    let (body_out, last_out) = out.split_at_mut(body.len() / 4 * 3);
    let mut seen = 0u8;
    for (quad, bytes) in body.chunks_exact(4).zip(body_out.chunks_exact_mut(3)) {
        let n = quad.iter().fold(0u32, |n, &c| {
            let v = BASE64_VALUES[usize::from(c)];
            seen |= v;
            n << 6 | u32::from(v)
        });
        bytes.copy_from_slice(&n.to_be_bytes()[1..]);
    }
    // The last quad alone may end in padding, which reads as 0.
    let pad = match last {
        [_, _, b'=', b'='] => 2,
        [_, _, _, b'='] => 1,
        _ => 0,
    };
    let n = last.iter().enumerate().fold(0u32, |n, (i, &c)| {
        let v = if i >= 4 - pad {
            0
        } else {
            BASE64_VALUES[usize::from(c)]
        };
        seen |= v;
        n << 6 | u32::from(v & 63)
    });
    last_out.copy_from_slice(&n.to_be_bytes()[1..=last_out.len()]);
    if seen & INVALID_BIT != 0 {
        return Err(first_invalid(&text[..text.len() - pad]));
    }
    out.truncate(out.len() - pad);
    Ok(out)
}

/// The error for the first character of `text` that is not base64 (the
/// cold path of [`decode_base64`]).
#[cold]
fn first_invalid(text: &[u8]) -> EnvelopeError {
    let at = text
        .iter()
        .position(|&c| BASE64_VALUES[usize::from(c)] == INVALID)
        .unwrap_or(0);
    EnvelopeError::Base64(format!(
        "invalid character {:?} at offset {at}",
        char::from(text.get(at).copied().unwrap_or(b'?')),
    ))
}

/// A base64 character's value, [`INVALID`] for any other byte.
const BASE64_VALUES: [u8; 256] = {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut values = [INVALID; 256];
    let mut i = 0;
    while i < 64 {
        values[alphabet[i] as usize] = i as u8;
        i += 1;
    }
    values
};
const INVALID: u8 = 0xff;
/// The bit only [`INVALID`] has among the values (a valid one is < 64).
const INVALID_BIT: u8 = 0x80;

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
        if envelope.encoding != ZLIB_BASE64 || !envelope.chunks.is_empty() {
            return Err(EnvelopeError::Encoding(envelope.encoding));
        }
        if envelope.length > MAX_DOCUMENT_BYTES {
            return Err(EnvelopeError::TooLong(envelope.length));
        }
        // `data` may be left out of a chunked envelope only.
        if envelope.data.is_empty() {
            return Err(EnvelopeError::Corrupt("`data` is missing or empty".into()));
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
mod tests;
