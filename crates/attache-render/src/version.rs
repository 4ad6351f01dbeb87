//! Content versions for the files Envoy reads: the same content gives the
//! same version (and bytes), a change a new one; Envoy shows it in
//! `/config_dump` and in each subscription's `version_text` stat.

use serde_json::Value;

/// A digest of `value`'s JSON, as 16 hex digits.
pub fn content_version(value: &Value) -> String {
    format!("{:016x}", fnv1a(value.to_string().as_bytes()))
}

/// FNV-1a, 64 bit: a stable, dependency-free content digest (not security).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
