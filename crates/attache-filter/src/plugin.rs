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

use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::config::CompiledConfig;
use crate::host::{Counter, Host, LogLevel};

/// Accepted-configuration counter of one VM. A Wasm VM is single-threaded;
/// the atomic only makes a `static` possible without `unsafe`.
#[derive(Debug, Default)]
pub struct Generations(AtomicU64);

impl Generations {
    pub const fn new() -> Self {
        Generations(AtomicU64::new(0))
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
        bytes: &[u8],
    ) -> bool {
        let fingerprint = fingerprint(bytes);
        match CompiledConfig::from_bytes(bytes) {
            Ok(config) => {
                self.generation = generations.next();
                host.increment(Counter::ConfigsAccepted);
                host.log(
                    LogLevel::Info,
                    &format!(
                        "attache: configuration generation {} (fingerprint {fingerprint:08x}) accepted: gateway {:?}, {} routes, {} fallback candidates, client control headers {}",
                        self.generation,
                        config.gateway,
                        config.route_count(),
                        config.fallback().len(),
                        if config.trust_client_control_headers { "trusted" } else { "stripped" },
                    ),
                );
                self.current = Some(Rc::new(config));
                true
            }
            Err(err) => {
                host.increment(Counter::ConfigsRejected);
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

/// FNV-1a over the configuration bytes: a short name for "this document"
/// that every VM computes alike, so log lines from different workers can be
/// matched up.
pub(crate) fn fingerprint(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |hash, &b| {
        (hash ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::fingerprint;

    #[test]
    fn fingerprint_is_fnv1a() {
        // Reference values of 32-bit FNV-1a.
        assert_eq!(fingerprint(b""), 0x811c_9dc5);
        assert_eq!(fingerprint(b"a"), 0xe40c_292c);
        assert_ne!(fingerprint(b"{\"a\":1}"), fingerprint(b"{\"a\":2}"));
    }
}
