//! One filter configuration of the module (one ECDS resource, one
//! generation of the document) and each thread's compiled copy of it.
//!
//! The core's compiled table ([`attache_filter::CompiledConfig`]) is built
//! for one thread, as a Wasm VM is: routes compile on first use into shared
//! `Rc`s. Envoy calls `on_http_filter_config_new` on the main thread and the
//! stream hooks on every worker, so the module keeps what every thread may
//! share in [`ModuleConfig`] (the document's bytes, Envoy's handle, the
//! counter ids) and lets each thread compile its own copy on its first
//! stream of that configuration ([`Loaded`]), as Envoy's Wasm host gives
//! each worker its own VM. The main thread's load decides acceptance: a
//! document the core refuses makes `config_new` fail, so Envoy keeps the
//! previous configuration (ECDS) or refuses the listener (at start), as it
//! does for the `.wasm`.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use attache_filter::plugin::{Generations, Plugin};
use attache_filter::Stream;

use crate::abi::ConfigPtr;
use crate::host::{CounterIds, LoadHost};

/// Configurations get ids so that each thread can find its copy.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// What Envoy's configuration pointer leads to: shared by every thread.
#[derive(Debug)]
pub struct ModuleConfig {
    id: u64,
    envoy: Option<ConfigPtr>,
    counters: CounterIds,
    bytes: Vec<u8>,
    /// Dropped with the configuration; each thread's copy holds a `Weak`
    /// and is dropped at that thread's next load.
    alive: Arc<()>,
}

impl ModuleConfig {
    /// Loads `bytes` on this (the main) thread, logging and counting the
    /// outcome as the `.wasm` does; `None` if the core refuses them.
    pub fn load(envoy: Option<ConfigPtr>, counters: CounterIds, bytes: Vec<u8>) -> Option<Self> {
        let config = ModuleConfig {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            envoy,
            counters,
            bytes,
            alive: Arc::new(()),
        };
        let host = LoadHost {
            config: envoy,
            counters: &config.counters,
            quiet: false,
        };
        let accepted = LOADED.with(|loaded| {
            loaded
                .try_borrow_mut()
                .is_ok_and(|mut loaded| loaded.load(&config, host))
        });
        accepted.then_some(config)
    }

    pub fn counters(&self) -> &CounterIds {
        &self.counters
    }

    /// A new stream holding this thread's compiled copy of the document,
    /// compiled now if this thread has none yet.
    pub fn stream(&self) -> Stream {
        LOADED.with(|loaded| match loaded.try_borrow_mut() {
            Ok(mut loaded) => loaded.stream(self),
            // Only if a hook re-entered another (Envoy does not): pass through.
            Err(_) => Stream::default(),
        })
    }
}

thread_local! {
    static LOADED: RefCell<Loaded> = RefCell::new(Loaded::default());
}

/// One thread's compiled configurations.
#[derive(Default)]
struct Loaded {
    /// The core's per-thread generation counter and last accepted table,
    /// which the next load reuses (an edit recompiles only what changed).
    generations: Generations,
    copies: Vec<ThreadCopy>,
}

struct ThreadCopy {
    id: u64,
    alive: Weak<()>,
    plugin: Plugin,
}

impl Loaded {
    fn load(&mut self, config: &ModuleConfig, mut host: LoadHost<'_>) -> bool {
        // Copies of configurations Envoy has destroyed go first: at most
        // the live ones stay.
        self.copies.retain(|copy| copy.alive.strong_count() > 0);
        let mut plugin = Plugin::default();
        let accepted = plugin.configure(&mut host, &self.generations, config.bytes.clone());
        // Kept even if refused, so that a worker does not retry a load per
        // stream; its streams then pass through as without a document.
        self.copies.push(ThreadCopy {
            id: config.id,
            alive: Arc::downgrade(&config.alive),
            plugin,
        });
        accepted
    }

    fn stream(&mut self, config: &ModuleConfig) -> Stream {
        if !self.copies.iter().any(|copy| copy.id == config.id) {
            let host = LoadHost {
                config: config.envoy,
                counters: &config.counters,
                quiet: true,
            };
            self.load(config, host);
        }
        match self.copies.iter().find(|copy| copy.id == config.id) {
            Some(copy) => Stream::new(copy.plugin.current(), copy.plugin.generation()),
            None => Stream::default(),
        }
    }
}
