//! One stream's filter: what `on_http_filter_new` hands Envoy and the
//! request and response hooks work on. Safe code; `crate::exports` only
//! turns Envoy's pointers into references.

use attache_filter::Stream;

use crate::abi::FilterPtr;
use crate::config::ModuleConfig;
use crate::host::{CounterIds, StreamHost};

#[derive(Debug, Default)]
pub struct ModuleFilter {
    stream: Stream,
    counters: CounterIds,
    /// Set while the core runs and cleared after: still set, the core
    /// panicked part way (caught at the hook), and the rest of the stream
    /// passes through untouched rather than resume from a broken state.
    broken: bool,
}

impl ModuleFilter {
    pub fn new(config: &ModuleConfig) -> Self {
        ModuleFilter {
            stream: config.stream(),
            counters: *config.counters(),
            broken: false,
        }
    }

    pub fn request_headers(&mut self, filter: FilterPtr) {
        self.run(filter, |stream, host| stream.on_request_headers(host));
    }

    pub fn response_headers(&mut self, filter: FilterPtr) {
        self.run(filter, |stream, host| stream.on_response_headers(host));
    }

    fn run(&mut self, filter: FilterPtr, step: fn(&mut Stream, &mut StreamHost<'_>)) {
        if self.broken {
            return;
        }
        self.broken = true;
        let mut host = StreamHost::new(filter, &self.counters);
        step(&mut self.stream, &mut host);
        self.broken = false;
    }
}
