//! Arbitrary bytes inside the compressed pluginConfig envelope
//! (attache_contract::envelope): as the zlib stream itself, with an
//! arbitrary declared length, and as the inflated document of a well-formed
//! envelope. Refusing is fine; panicking, hanging or inflating past the
//! declared length (a zip bomb) is not.
#![no_main]

use attache_contract::envelope::{seal, Envelope, ZLIB_BASE64};
use libfuzzer_sys::fuzz_target;

/// Standard padded base64, here so that the target needs no other crate.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] =
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

fuzz_target!(|input: &[u8]| {
    let Some((&mode, rest)) = input.split_first() else {
        return;
    };
    let envelope = if mode & 1 == 0 {
        // The first 4 bytes: the declared length (small, so that bombs show).
        let (length, stream) = rest.split_at(rest.len().min(4));
        let mut declared = [0u8; 4];
        declared[..length.len()].copy_from_slice(length);
        Envelope {
            encoding: ZLIB_BASE64.to_string(),
            length: u64::from(u32::from_le_bytes(declared)),
            data: base64(stream),
            chunks: Vec::new(),
        }
    } else {
        seal(rest)
    };
    if let Ok(bytes) = serde_json::to_vec(&envelope) {
        let _ = attache_filter::CompiledConfig::from_bytes(&bytes);
    }
});
