//! The root context's job: accept or refuse configurations and keep the
//! last good one. Each accepted configuration gets the next generation
//! number, which every log line about configuration names.

use std::rc::Rc;

use crate::config::CompiledConfig;
use crate::host::{Counter, Host, LogLevel};

#[derive(Debug, Default)]
pub struct Plugin {
    generation: u64,
    current: Option<Rc<CompiledConfig>>,
}

impl Plugin {
    /// Returns whether the configuration was accepted. On refusal the
    /// previous configuration (if any) stays in force and exactly one error
    /// line says why.
    pub fn configure(&mut self, host: &mut impl Host, bytes: &[u8]) -> bool {
        match CompiledConfig::from_bytes(bytes) {
            Ok(config) => {
                self.generation += 1;
                host.increment(Counter::ConfigsAccepted);
                host.log(
                    LogLevel::Info,
                    &format!(
                        "attache: configuration generation {} accepted: gateway {:?}, {} routes, {} fallback candidates, client control headers {}",
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
                let kept = match self.generation {
                    0 => "no configuration in force".to_string(),
                    g => format!("generation {g} stays in force"),
                };
                host.log(LogLevel::Error, &format!("attache: configuration rejected ({kept}): {err}"));
                false
            }
        }
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub fn current(&self) -> Option<Rc<CompiledConfig>> {
        self.current.clone()
    }
}
