//! The compressed `pluginConfig` (attache_contract::envelope): opened and
//! inflated, at most the declared length, then parsed by the same pass as
//! an inline document. Any fault of the envelope is one error naming its
//! field; the caller keeps the last good configuration.
//!
//! The inflated text is parsed from a slice, not streamed into the parser:
//! a second, reader-based instance of the typed parse cost the `.wasm`
//! about 100 KB (460,400 bytes against 356,581), over its 400,000-byte
//! budget, and the slice parse is the faster one. The text is held once,
//! as an inline configuration's bytes are (docs/plugin-delivery.md).

use std::io::Read;

use attache_contract::envelope::{self, Envelope, EnvelopeError, Opened, ZLIB_BASE64_CHUNKS};

use crate::config::CompiledConfig;
use crate::error::{ConfigError, Problem};

/// Deflate cannot expand more than about 1,032 to 1: a declared length
/// beyond that many times the compressed size is not trusted for the
/// first allocation (the stream still stops at the declared length).
const MAX_RATIO: usize = 1032;

/// One piece of a chunked envelope as the configuration keeps it: its text
/// (base64, what the next update's piece is compared with) and where its
/// bytes are in the table.
#[derive(Debug)]
pub struct Chunk {
    pub text: Box<str>,
    pub start: usize,
    pub len: u64,
}

/// The document of either form, and the pieces of a chunked one. A piece
/// whose text is the one `previous` had at the same place is not inflated:
/// its bytes are copied from what `previous` holds. A policy edit changes
/// one piece (render cuts the table where its content is), so an update
/// inflates that one piece, not the whole table (issue 31).
pub fn inflate_reusing(
    envelope: Envelope,
    previous: Option<&CompiledConfig>,
) -> Result<(Inflated, Vec<Chunk>), ConfigError> {
    if envelope.encoding != ZLIB_BASE64_CHUNKS {
        return Ok((Inflated::Whole(inflate(envelope)?), Vec::new()));
    }
    envelope::check_chunks(&envelope).map_err(refused)?;
    // When every piece of the previous groups is unchanged (a policy edit),
    // the groups are the previous ones: not inflated, not even copied.
    let tail = previous.and_then(|p| p.groups_unchanged_from(&envelope.chunks));
    let upto = tail.unwrap_or(envelope.chunks.len());
    let length: u64 = envelope.chunks.iter().take(upto).map(|c| c.length).sum();
    let length = usize::try_from(length).unwrap_or(usize::MAX);
    let compressed: usize = envelope.chunks.iter().map(|c| c.data.len()).sum();
    let mut text = Vec::with_capacity(length.min(compressed.saturating_mul(MAX_RATIO)));
    let mut kept = Vec::with_capacity(envelope.chunks.len());
    let mut start = 0usize;
    for (i, chunk) in envelope.chunks.into_iter().enumerate() {
        let len = chunk.length;
        let same = previous.and_then(|p| p.chunk_bytes(i, &chunk.data, len));
        let data: Box<str> = match same {
            _ if i >= upto => chunk.data.into_boxed_str(),
            Some(bytes) => {
                text.extend_from_slice(bytes);
                chunk.data.into_boxed_str()
            }
            None => {
                let data = chunk.data.clone().into_boxed_str();
                let mut opened = Opened::new(chunk).map_err(|e| refused_chunk(i, e))?;
                if let Err(e) = opened.read_to_end(&mut text) {
                    let failure = opened.failure().cloned();
                    let e = failure.unwrap_or(EnvelopeError::Corrupt(e.to_string()));
                    return Err(refused_chunk(i, e));
                }
                data
            }
        };
        kept.push(Chunk {
            text: data,
            start,
            len,
        });
        start = start.saturating_add(usize::try_from(len).unwrap_or(usize::MAX));
    }
    let inflated = match tail {
        Some(_) => Inflated::Head(text),
        None => Inflated::Whole(text),
    };
    Ok((inflated, kept))
}

/// What [`inflate_reusing`] gives: the whole table, or the table up to
/// groups that are the previous configuration's.
#[derive(Debug)]
pub enum Inflated {
    Whole(Vec<u8>),
    Head(Vec<u8>),
}

fn refused_chunk(i: usize, e: EnvelopeError) -> ConfigError {
    ConfigError::invalid(format!("$.chunks[{i}].{}", e.field()), Problem::Envelope(e))
}

/// The envelope's inflated document, the envelope's text freed first.
pub fn inflate(envelope: Envelope) -> Result<Vec<u8>, ConfigError> {
    let mut opened = Opened::new(envelope).map_err(refused)?;
    let length = usize::try_from(opened.length()).unwrap_or(usize::MAX);
    let mut text =
        Vec::with_capacity(length.min(opened.compressed_len().saturating_mul(MAX_RATIO)));
    match opened.read_to_end(&mut text) {
        Ok(_) => Ok(text),
        Err(e) => Err(match opened.failure() {
            Some(failure) => refused(failure.clone()),
            None => refused(EnvelopeError::Corrupt(e.to_string())),
        }),
    }
}

fn refused(e: EnvelopeError) -> ConfigError {
    ConfigError::invalid(format!("$.{}", e.field()), Problem::Envelope(e))
}
