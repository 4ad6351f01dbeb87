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

use attache_contract::envelope::{Envelope, EnvelopeError, Opened};

use crate::error::{ConfigError, Problem};

/// Deflate cannot expand more than about 1,032 to 1: a declared length
/// beyond that many times the compressed size is not trusted for the
/// first allocation (the stream still stops at the declared length).
const MAX_RATIO: usize = 1032;

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
