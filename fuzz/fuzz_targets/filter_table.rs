//! Arbitrary bytes as the table encoding (attache_contract::table, schema 3)
//! the filter reads in place. Refusing is fine; panicking, hanging or
//! unbounded memory is not. A table the filter accepts must also be one the
//! contract reads back, and every entry must then be found by its name (or,
//! under Istio names, leave the request to fallback matching), with the
//! fallback table built without a panic: the caches the filter fills on
//! first use only ever read bytes the load validated.
#![no_main]

use attache_contract::table::{self, MAGIC};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let mut bytes = MAGIC.to_vec();
    bytes.extend_from_slice(input);
    let Ok(config) = attache_filter::CompiledConfig::from_bytes(&bytes) else {
        return;
    };
    let Ok(doc) = table::decode(&bytes) else {
        panic!("the filter accepted a table the contract cannot read");
    };
    for route in doc.groups.iter().flat_map(|g| &g.routes) {
        let found = config.route_named(&route.name);
        if !doc.options.istio_route_names {
            assert!(found.is_some_and(|r| *r.name == *route.name));
        }
    }
    let _ = config.fallback().len();
});
