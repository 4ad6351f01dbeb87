//! The built .wasm exports exactly the callbacks the filter needs and
//! imports only the host calls it makes. proxy-wasm-cpp-host enters the VM
//! for every `proxy_on_*` a module exports, so an export added by accident
//! (say, by linking the proxy-wasm SDK again, which exports all of them)
//! costs a VM entry per request or per body chunk; docs/filter.md,
//! "Exported callbacks", says why each one is here.

use crate::harness::paths;

/// Every export, sorted: crates/attache-filter/src/proxy.rs.
const EXPORTS: [&str; 10] = [
    "_initialize",
    "memory",
    "proxy_abi_version_0_2_1",
    "proxy_on_configure",
    "proxy_on_context_create",
    "proxy_on_delete",
    "proxy_on_memory_allocate",
    "proxy_on_request_headers",
    "proxy_on_response_headers",
    "proxy_on_tick",
];

/// The host calls of crates/attache-filter/src/abi.rs, sorted. No
/// `proxy_get_header_map_pairs` / `proxy_set_header_map_pairs`: the filter
/// never copies a whole header map. `proxy_set_property`: the mark a
/// configured instance leaves on the stream (a second instance then
/// changes nothing; `stream::ENFORCED_PROPERTY`). `proxy_record_metric`: the
/// gauge of the document served, set at load (`Host::set_gauge`).
const PROXY_IMPORTS: [&str; 14] = [
    "proxy_add_header_map_value",
    "proxy_define_metric",
    "proxy_get_buffer_bytes",
    "proxy_get_current_time_nanoseconds",
    "proxy_get_header_map_value",
    "proxy_get_log_level",
    "proxy_get_property",
    "proxy_increment_metric",
    "proxy_log",
    "proxy_record_metric",
    "proxy_remove_header_map_value",
    "proxy_replace_header_map_value",
    "proxy_set_property",
    "proxy_set_tick_period_milliseconds",
];

#[test]
fn the_wasm_exports_only_the_callbacks_the_filter_needs() {
    if crate::harness::filter::wasm_only("the_wasm_exports_only_the_callbacks_the_filter_needs") {
        return;
    }
    let bytes = std::fs::read(paths::wasm()).unwrap();
    let module = Module::parse(&bytes);
    let mut exports = module.exports.clone();
    exports.sort();
    assert_eq!(exports, EXPORTS);
    let mut proxy: Vec<&str> = module
        .imports
        .iter()
        .filter(|(m, _)| m == "env")
        .map(|(_, name)| name.as_str())
        .collect();
    proxy.sort_unstable();
    assert_eq!(proxy, PROXY_IMPORTS);
    // Nothing else but WASI, which the standard library links.
    for (m, name) in &module.imports {
        assert!(
            m == "env" || m == "wasi_snapshot_preview1",
            "unexpected import {m}.{name}"
        );
    }
    assert!(
        bytes.len() < 400_000,
        "the .wasm is {} bytes, over the 400,000-byte budget",
        bytes.len()
    );
}

/// The names in a module's import and export sections (the Wasm binary
/// format, core spec 5.5: sections 2 and 7); everything else is skipped.
#[derive(Debug, Default)]
struct Module {
    imports: Vec<(String, String)>,
    exports: Vec<String>,
}

impl Module {
    fn parse(bytes: &[u8]) -> Module {
        assert_eq!(
            bytes.get(..8),
            Some(&b"\0asm\x01\0\0\0"[..]),
            "not a Wasm module"
        );
        let mut r = Reader { bytes, at: 8 };
        let mut module = Module::default();
        while r.at < bytes.len() {
            let id = r.byte();
            let size = r.leb() as usize;
            let end = r.at + size;
            match id {
                2 => {
                    for _ in 0..r.leb() {
                        let (m, name) = (r.name(), r.name());
                        match r.byte() {
                            0 => drop(r.leb()), // function: type index
                            kind => panic!("import {m}.{name} of kind {kind}, not a function"),
                        }
                        module.imports.push((m, name));
                    }
                }
                7 => {
                    for _ in 0..r.leb() {
                        let name = r.name();
                        r.byte(); // kind
                        r.leb(); // index
                        module.exports.push(name);
                    }
                }
                _ => {}
            }
            r.at = end;
        }
        module
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> u8 {
        let b = self.bytes[self.at];
        self.at += 1;
        b
    }

    /// An unsigned LEB128 number.
    fn leb(&mut self) -> u64 {
        let (mut value, mut shift) = (0u64, 0);
        loop {
            let b = self.byte();
            value |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return value;
            }
            shift += 7;
        }
    }

    fn name(&mut self) -> String {
        let len = self.leb() as usize;
        let name = std::str::from_utf8(&self.bytes[self.at..self.at + len]).unwrap();
        self.at += len;
        name.to_string()
    }
}
