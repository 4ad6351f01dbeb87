//! The root context's job: accept or refuse configurations and keep the
//! last good one. Each accepted configuration gets the next generation
//! number, which every log line about configuration names.
//!
//! Envoy gives every new plugin configuration (an ECDS or WasmPlugin update)
//! a fresh root context, so the generation counter lives in [`Generations`],
//! shared by all root contexts of a VM, not in [`Plugin`]. Envoy also runs
//! one VM per worker (and sometimes a fresh VM for an update), so generations
//! are per VM; the log lines add a fingerprint of the configuration bytes,
//! which is the same in every VM.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::config::CompiledConfig;
use crate::error::RefusalClass;
use crate::host::{Counter, Gauge, Host, LogLevel};

/// Accepted-configuration counter of one VM. A Wasm VM is single-threaded;
/// the atomic only makes a `static` possible without `unsafe`.
///
/// It also keeps the VM's last accepted configuration, so that the next one
/// reuses what it already validated and compiled (crate::config): the VM
/// persists across configurations. That configuration is the newest root
/// context's, alive anyway; keeping it costs no memory.
#[derive(Debug, Default)]
pub struct Generations(AtomicU64, RefCell<Option<Rc<CompiledConfig>>>);

impl Generations {
    pub const fn new() -> Self {
        Generations(AtomicU64::new(0), RefCell::new(None))
    }

    fn last_config(&self) -> Option<Rc<CompiledConfig>> {
        self.1.borrow().clone()
    }

    fn keep(&self, config: &Rc<CompiledConfig>) {
        *self.1.borrow_mut() = Some(Rc::clone(config));
    }

    /// The last generation handed out; 0 before any configuration was accepted.
    pub fn last(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    fn next(&self) -> u64 {
        self.0.fetch_add(1, Ordering::Relaxed) + 1
    }
}

#[derive(Debug, Default)]
pub struct Plugin {
    generation: u64,
    current: Option<Rc<CompiledConfig>>,
}

impl Plugin {
    /// Returns whether the configuration was accepted. On refusal the
    /// previous configuration (if any) stays in force and exactly one error
    /// line says why.
    pub fn configure(
        &mut self,
        host: &mut impl Host,
        generations: &Generations,
        bytes: Vec<u8>,
    ) -> bool {
        let fingerprint = fingerprint(&bytes);
        let started = host.clock_nanos();
        match CompiledConfig::from_owned_bytes_after(bytes, generations.last_config().as_deref()) {
            Ok(config) => {
                self.generation = generations.next();
                host.increment(Counter::ConfigsAccepted);
                // What this Envoy serves, for the controller to compare
                // with what it applied (docs/filter.md, "What it serves").
                host.set_gauge(Gauge::DocumentId, config.document_id());
                host.log(
                    LogLevel::Info,
                    &format!(
                        "attache: configuration generation {} (fingerprint {fingerprint:08x}, document {}) accepted: gateway {:?}, {} routes, {} fallback candidates, client control headers {}; {}",
                        self.generation,
                        config.document_id(),
                        config.gateway,
                        config.route_count(),
                        config.candidate_count(),
                        if config.trust_client_control_headers { "trusted" } else { "stripped" },
                        load_cost(host, started),
                    ),
                );
                let config = Rc::new(config);
                generations.keep(&config);
                self.current = Some(config);
                true
            }
            Err(err) => {
                host.increment(Counter::ConfigsRejected);
                host.increment(rejected_counter(err.class()));
                // What stays in force is Envoy's decision (the previous
                // configuration on an update, nothing at start); the line says
                // what this VM last accepted.
                let last = match generations.last() {
                    0 => "none accepted in this VM".to_string(),
                    g => format!("last accepted in this VM: generation {g}"),
                };
                host.log(
                    LogLevel::Error,
                    &format!("attache: configuration (fingerprint {fingerprint:08x}) rejected ({last}): {err}"),
                );
                false
            }
        }
    }

    /// The generation of this plugin's configuration (0 if none).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub fn current(&self) -> Option<Rc<CompiledConfig>> {
        self.current.clone()
    }
}

/// The counter of one class of refusals.
fn rejected_counter(class: RefusalClass) -> Counter {
    match class {
        RefusalClass::Syntax => Counter::RejectedSyntax,
        RefusalClass::Schema => Counter::RejectedSchema,
        RefusalClass::Encoding => Counter::RejectedEncoding,
        RefusalClass::Invalid => Counter::RejectedInvalid,
    }
}

/// How long the load took and how large the VM's memory is after it, for
/// operators sizing a gateway (docs/filter.md): "loaded in 12.3 ms, Wasm
/// memory 5.2 MiB", or what of it the host can tell.
fn load_cost(host: &impl Host, started: Option<u64>) -> String {
    let took = started
        .zip(host.clock_nanos())
        .map(|(start, end)| end.saturating_sub(start));
    let took = took.map_or("load time unknown".to_string(), |ns| {
        format!("loaded in {} ms", tenths(ns, 1_000_000))
    });
    let memory = host
        .memory_bytes()
        .map_or("Wasm memory unknown".to_string(), |b| {
            format!("Wasm memory {} MiB", tenths(b, 1024 * 1024))
        });
    format!("{took}, {memory}")
}

/// `value / unit` with one decimal, rounded down, in integers: float
/// formatting would add about 20 KB to the .wasm for two log figures.
fn tenths(value: u64, unit: u64) -> String {
    let tenths = value / (unit / 10);
    format!("{}.{}", tenths / 10, tenths % 10)
}

/// A hash of the configuration bytes: a short name for "this document"
/// that every VM computes alike, so log lines from different workers can be
/// matched up. Eight bytes a step (`index::hash`): every VM hashes the whole
/// configuration on every update, the worker's on the thread that serves
/// requests (FNV-1a's byte loop: about 1.6M instructions at 10,000 routes).
pub(crate) fn fingerprint(bytes: &[u8]) -> u32 {
    crate::index::hash(bytes)
}

#[cfg(test)]
mod tests {
    use super::fingerprint;

    #[test]
    fn fingerprints_tell_documents_apart() {
        assert_eq!(fingerprint(b"{\"a\":1}"), fingerprint(b"{\"a\":1}"));
        assert_ne!(fingerprint(b"{\"a\":1}"), fingerprint(b"{\"a\":2}"));
        // A byte past the last whole word, and a trailing zero byte, count.
        assert_ne!(fingerprint(b"12345678a"), fingerprint(b"12345678b"));
        assert_ne!(fingerprint(b"a"), fingerprint(b"a\0"));
    }
}
