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

use attache_contract::envelope::{
    self, Envelope, EnvelopeError, Opened, MAX_RATIO, ZLIB_BASE64_CHUNKS,
};

use crate::error::{ConfigError, Problem};

/// What an update may reuse of the configuration it replaces: the pieces
/// of the chunked envelope that configuration came in. `CompiledConfig`
/// implements it; this module only asks, so it does not depend on the
/// configuration it feeds (no import circle with `config`).
pub trait PreviousPieces {
    /// The bytes of piece `i`, if its text was `text` and its length `len`.
    fn chunk_bytes(&self, i: usize, text: &str, len: u64) -> Option<&[u8]>;
    /// The first piece of the groups, if every piece from it on is the
    /// same in `next`.
    fn groups_unchanged_from(&self, next: &[Envelope]) -> Option<usize>;
}

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
pub fn inflate_reusing<P: PreviousPieces>(
    envelope: Envelope,
    previous: Option<&P>,
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
    // A declared length beyond what the data can inflate to is not trusted
    // for the allocation (each chunk still stops at its declared length).
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
                Opened::new(chunk)
                    .and_then(|opened| opened.inflate_onto(&mut text))
                    .map_err(|e| refused_chunk(i, e))?;
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
    let opened = Opened::new(envelope).map_err(refused)?;
    let mut text = Vec::with_capacity(opened.room());
    opened.inflate_onto(&mut text).map_err(refused)?;
    Ok(text)
}

fn refused(e: EnvelopeError) -> ConfigError {
    ConfigError::invalid(format!("$.{}", e.field()), Problem::Envelope(e))
}
