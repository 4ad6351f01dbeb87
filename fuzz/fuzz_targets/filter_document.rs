//! Arbitrary bytes as the filter's configuration: parse, validate, compile.
//! Refusing is fine; panicking, hanging or unbounded memory is not.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let _ = attache_filter::CompiledConfig::from_bytes(bytes);
});
