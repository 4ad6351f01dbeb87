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

use base64::Engine;
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
    seal_chunks_with(document, cuts, seal)
}

/// [`seal_chunks`] with each piece sealed by `seal_piece`, which must give
/// what [`seal`] gives for it: a writer that kept the pieces of its last
/// document hands back those an edit left alone instead of deflating them
/// again (the controller, issue 30). The envelope is the same either way.
pub fn seal_chunks_with(
    document: &[u8],
    cuts: &[usize],
    mut seal_piece: impl FnMut(&[u8]) -> Envelope,
) -> Envelope {
    let mut chunks = Vec::with_capacity(cuts.len() + 1);
    let mut start = 0;
    for &cut in cuts.iter().chain([&document.len()]) {
        if let Some(piece) = document.get(start..cut).filter(|p| !p.is_empty()) {
            chunks.push(seal_piece(piece));
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
    let pieces = if envelope.encoding == ZLIB_BASE64_CHUNKS {
        check_chunks(&envelope)?;
        envelope.chunks
    } else {
        vec![envelope]
    };
    let mut out = Vec::new();
    for piece in pieces {
        Opened::new(piece)?.inflate_onto(&mut out)?;
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

/// Deflate cannot expand more than about 1,032 to 1 (258 bytes from one
/// 2-bit code): a declared length beyond that many times the compressed size
/// cannot be met, so no more room than that is set aside for it.
pub const MAX_RATIO: usize = 1032;

/// Appends `n` zero bytes: a copy of a zeroed block at a time, because
/// `Vec::resize` at the contract's opt-level ("z") writes one byte per loop
/// turn (5.5M instructions for the 1.4 MB document at 10,000 routes).
fn extend_with_zeros(out: &mut Vec<u8>, mut n: usize) {
    const ZEROS: [u8; 1024] = [0; 1024];
    out.reserve(n);
    while n > 0 {
        let step = n.min(ZEROS.len());
        out.extend_from_slice(&ZEROS[..step]);
        n -= step;
    }
}

/// An opened envelope: the decoded (still deflated) data and the declared
/// inflated length, checked; [`Opened::inflate_onto`] inflates it.
pub struct Opened {
    deflated: Vec<u8>,
    length: u64,
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
            length: envelope.length,
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

    /// The most bytes this envelope can inflate to: its declared length, or
    /// less when the data is too small to inflate that far.
    pub fn room(&self) -> usize {
        let length = usize::try_from(self.length).unwrap_or(usize::MAX);
        length.min(self.deflated.len().saturating_mul(MAX_RATIO))
    }

    /// Inflates the document onto the end of `out`, in one pass straight
    /// into place: at most [`Opened::room`] bytes are ever written, so a
    /// small blob that inflates to gigabytes (a "zip bomb") is stopped at
    /// the declared length. On an error `out` is as it was.
    ///
    /// One pass into the final buffer, rather than a stream through a
    /// 32 KiB window copied out in 16 KiB pieces: the window's set-up per
    /// piece of a chunked envelope and the copy were a fifth of a fresh
    /// VM's load (bench/findings.md, issue 31).
    pub fn inflate_onto(self, out: &mut Vec<u8>) -> Result<(), EnvelopeError> {
        use miniz_oxide::inflate::core::inflate_flags::{
            TINFL_FLAG_COMPUTE_ADLER32, TINFL_FLAG_PARSE_ZLIB_HEADER,
            TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF,
        };
        use miniz_oxide::inflate::core::{decompress, DecompressorOxide};
        use miniz_oxide::inflate::TINFLStatus;

        let start = out.len();
        let room = self.room();
        extend_with_zeros(out, room);
        let flags = TINFL_FLAG_PARSE_ZLIB_HEADER
            | TINFL_FLAG_COMPUTE_ADLER32
            | TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF;
        // Boxed: about 11 KB, too much for a Wasm stack frame.
        let mut decompressor = Box::<DecompressorOxide>::default();
        let into = out.get_mut(start..).unwrap_or_default();
        let (status, consumed, written) =
            decompress(&mut decompressor, &self.deflated, into, 0, flags);
        out.truncate(start + written);
        let inflated = written as u64;
        let length = self.length;
        let failure = match status {
            TINFLStatus::Done if consumed < self.deflated.len() => {
                EnvelopeError::Trailing(self.deflated.len() - consumed)
            }
            TINFLStatus::Done if inflated != length => EnvelopeError::Short { inflated, length },
            TINFLStatus::Done => return Ok(()),
            TINFLStatus::HasMoreOutput if inflated == length => EnvelopeError::Overflow { length },
            // Data left to inflate past the deflate bound: not a real stream.
            TINFLStatus::HasMoreOutput => EnvelopeError::Corrupt("bad stream".into()),
            // All the input given and the stream not at its end.
            TINFLStatus::NeedsMoreInput | TINFLStatus::FailedCannotMakeProgress => {
                EnvelopeError::Truncated { inflated }
            }
            TINFLStatus::Adler32Mismatch | TINFLStatus::Failed => {
                EnvelopeError::Corrupt("corrupt data or checksum mismatch".into())
            }
            _ => EnvelopeError::Corrupt("bad stream".into()),
        };
        out.truncate(start);
        Err(failure)
    }
}

#[cfg(test)]
mod tests;
