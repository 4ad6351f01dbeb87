//! The context table behind the filter's own proxy-wasm exports
//! (`crate::proxy`): which ids are root contexts (one per plugin
//! configuration, holding a [`Plugin`]) and which are HTTP streams (one per
//! request, holding a [`Stream`]). Plain Rust over [`Host`], so the
//! lifecycle is unit-tested natively; the wasm32 exports only translate
//! arguments.
//!
//! The host's lifecycle, as proxy-wasm-cpp-host and Envoy drive it (so the
//! table stays bounded):
//! - `proxy_on_context_create(id, 0)` creates a root context
//!   (`ContextBase::onStart`/`onConfigure`, src/context.cc), and
//!   `proxy_on_context_create(id, root_id)` an HTTP stream, before its
//!   request headers (Envoy's `Context::decodeHeaders` calls `onCreate`,
//!   source/extensions/common/wasm/context.cc);
//! - `proxy_on_delete(id)` follows for every context that was created:
//!   a stream's `Context::onDestroy` calls `onDone` then `onDelete`, a root's
//!   `WasmBase::startShutdown` likewise (src/wasm.cc). `proxy_on_done` is not
//!   exported, so the host takes every context as done at once.
//!
//! A stream of an unknown root (the host never does this) gets no
//! configuration and passes untouched, as a stream created before any
//! configuration was accepted.

use std::collections::HashMap;

use crate::host::Host;
use crate::plugin::{Generations, Plugin};
use crate::stream::Stream;

/// Every live context of one VM, by the host's context id.
#[derive(Debug, Default)]
pub struct Dispatcher {
    roots: HashMap<u32, Plugin>,
    streams: HashMap<u32, Stream>,
    generations: Generations,
}

impl Dispatcher {
    pub fn new() -> Self {
        Dispatcher::default()
    }

    /// `proxy_on_context_create`: `root_id` 0 makes a root context,
    /// anything else a stream of that root, holding the root's current
    /// configuration for its whole life.
    pub fn create(&mut self, id: u32, root_id: u32) {
        if root_id == 0 {
            self.roots.entry(id).or_default();
            return;
        }
        let stream = match self.roots.get(&root_id) {
            Some(plugin) => Stream::new(plugin.current(), plugin.generation()),
            None => Stream::default(),
        };
        self.streams.insert(id, stream);
    }

    /// `proxy_on_configure`: the root context's new configuration. A root
    /// the host did not announce (it always does) is created first.
    pub fn configure(&mut self, host: &mut impl Host, root_id: u32, bytes: Vec<u8>) -> bool {
        self.roots
            .entry(root_id)
            .or_default()
            .configure(host, &self.generations, bytes)
    }

    /// `proxy_on_request_headers`; a context that is not a stream is left
    /// alone.
    pub fn request_headers(&mut self, host: &mut impl Host, id: u32) {
        if let Some(stream) = self.streams.get_mut(&id) {
            stream.on_request_headers(host);
        }
    }

    pub fn response_headers(&mut self, host: &mut impl Host, id: u32) {
        if let Some(stream) = self.streams.get_mut(&id) {
            stream.on_response_headers(host);
        }
    }

    /// `proxy_on_delete`: frees the context. Returns whether it was a root
    /// context, whose teardown the adapter marks by publishing the VM's
    /// counts.
    pub fn delete(&mut self, id: u32) -> bool {
        if self.streams.remove(&id).is_some() {
            return false;
        }
        self.roots.remove(&id).is_some()
    }

    /// Live (root contexts, streams): what the table holds now.
    pub fn live(&self) -> (usize, usize) {
        (self.roots.len(), self.streams.len())
    }
}
