//! Writing one generation's files in order, and waiting between them until
//! Envoy has applied each (docs/envoy.md, "Order of the writes"): through
//! its admin interface when `--envoy-admin` is given, else for
//! `--settle-ms` between two files.

use std::collections::VecDeque;
use std::path::Path;
use std::time::Duration;

use attache_render::xds::XdsState;

use super::envoy_admin::{Admin, Outcome, Progress};
use super::steps::FileStep;
use crate::error::EnvoyRefused;
use crate::output::write_atomically;

/// What went wrong with a generation.
pub enum Failure {
    /// A file could not be written: try the rest again later.
    Write(String),
    /// Envoy refused a file: writing it again would not help.
    Refused(String),
}

/// The Envoy the files are for, and what it has.
pub struct Envoy {
    pub admin: Option<Admin>,
    /// The admin answered since it last refused a connection: a refusal
    /// now means Envoy stopped (or crashed), which deserves a warning,
    /// whereas a refusal from the start only means it is not running yet.
    pub admin_answered: bool,
    pub settle: Duration,
    /// What Envoy has applied, as far as this watch knows.
    pub has: XdsState,
}

/// One generation's files, kept until every one of them is written.
pub struct Pending {
    pub generation: u64,
    pub routes: usize,
    pub files: VecDeque<FileStep>,
    /// `--out`'s text, written last.
    pub document: String,
    /// Labels of the files written so far, for the messages.
    written: Vec<String>,
}

impl Pending {
    pub fn new(generation: u64, routes: usize, files: Vec<FileStep>, document: String) -> Self {
        Pending {
            generation,
            routes,
            files: files.into(),
            document,
            written: Vec::new(),
        }
    }

    /// Every file in order, then `--out`. On failure what is left stays
    /// for the next try, and the message says what was and was not written.
    pub fn write(&mut self, out: &Path, envoy: &mut Envoy) -> Result<(), Failure> {
        while let Some(file) = self.files.front() {
            let last = self.files.len() == 1;
            let before = match (&envoy.admin, &file.subscription) {
                (Some(admin), Some(subscription)) => Some(admin.progress(subscription)),
                _ => None,
            };
            let changed = file
                .apply()
                .map_err(|err| Failure::Write(self.say(&err.to_string(), out)))?;
            if changed {
                if let Err(why) = envoy.wait_for(file, before, last) {
                    // Written, but not taken: what is left is never written.
                    let label = format!("{} (refused)", file.label);
                    self.written.push(label);
                    self.files.pop_front();
                    let message = self.say(&why.to_string(), out);
                    return Err(Failure::Refused(format!(
                        "{message}\n  Envoy keeps its last good configuration; waiting for the input to change"
                    )));
                }
            }
            file.record(&mut envoy.has);
            self.written.push(file.label.clone());
            self.files.pop_front();
        }
        write_atomically(out, self.document.as_bytes()).map_err(|err| {
            Failure::Write(format!(
                "generation {}: every file Envoy reads was written, but {err}",
                self.generation
            ))
        })
    }

    /// `why`, and which files were and were not written.
    fn say(&self, why: &str, out: &Path) -> String {
        let generation = self.generation;
        let out = out.display();
        if self.written.is_empty() {
            return format!(
                "generation {generation} not written: {why}\n  nothing was written: Envoy keeps its current configuration and {out} is left as it was"
            );
        }
        let mut not_written: Vec<String> = self.files.iter().map(|f| f.label.clone()).collect();
        not_written.push(format!("{out} (left as it was)"));
        format!(
            "generation {generation} written in part: {why}\n  written: {}; not written: {}",
            self.written.join(", "),
            not_written.join(", ")
        )
    }
}

impl Envoy {
    /// Waits until Envoy applied `file`; `Err` says why it never will.
    fn wait_for(
        &mut self,
        file: &FileStep,
        before: Option<Result<Progress, Outcome>>,
        last: bool,
    ) -> Result<(), EnvoyRefused> {
        let settle = |why: Option<String>| {
            if let Some(why) = why {
                eprintln!(
                    "warning: {why}; waiting {} ms instead",
                    self.settle.as_millis()
                );
            }
            if !last {
                std::thread::sleep(self.settle);
            }
        };
        let (Some(admin), Some(subscription)) = (&self.admin, &file.subscription) else {
            // Nobody reads it yet (a new listener's routes, a removal).
            if file.subscription.is_some() {
                settle(None);
            }
            return Ok(());
        };
        let outcome = match before {
            Some(Ok(before)) => {
                self.admin_answered = true;
                admin.await_applied(subscription, file.version(), &before)
            }
            Some(Err(outcome)) => outcome,
            None => Outcome::Applied,
        };
        if let Some(warning) = refusal_warning(&mut self.admin_answered, &outcome, admin) {
            eprintln!("{warning}");
        }
        match outcome {
            Outcome::Applied | Outcome::EnvoyDown => Ok(()),
            Outcome::Refused => Err(EnvoyRefused {
                label: file.label.clone(),
                path: file.path.display().to_string(),
                version: file.version().to_string(),
            }),
            Outcome::NotConfirmed => {
                eprintln!(
                    "warning: Envoy has not shown version {} of {} yet; going on",
                    file.version(),
                    file.label
                );
                Ok(())
            }
            Outcome::NoAnswer(why) => {
                settle(Some(why));
                Ok(())
            }
        }
    }
}

/// The warning for an admin that answered before and now refuses
/// connections, once per outage: until it answers again, files are written
/// without waiting, as for an Envoy that is not running. A refusal from the
/// start says nothing (Envoy is simply not up yet and reads every file when
/// it starts). `answered` is [`Envoy::admin_answered`].
fn refusal_warning(answered: &mut bool, outcome: &Outcome, admin: &Admin) -> Option<String> {
    match outcome {
        Outcome::EnvoyDown => std::mem::take(answered).then(|| {
            format!(
                "warning: Envoy's admin at {} answered before but now refuses connections; assuming Envoy stopped (it reads every file when it starts) and writing the remaining files without waiting",
                admin.address()
            )
        }),
        // Its own warning is printed where it is handled.
        Outcome::NoAnswer(_) => None,
        Outcome::Applied | Outcome::Refused | Outcome::NotConfirmed => {
            *answered = true;
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusing_admin_is_worth_a_warning_only_after_it_answered() {
        let admin = Admin::new("127.0.0.1:9");
        let mut answered = false;
        assert_eq!(
            refusal_warning(&mut answered, &Outcome::EnvoyDown, &admin),
            None,
            "not up yet"
        );
        assert_eq!(
            refusal_warning(&mut answered, &Outcome::Applied, &admin),
            None
        );
        let warning = refusal_warning(&mut answered, &Outcome::EnvoyDown, &admin);
        assert!(
            warning.as_deref().is_some_and(|w| w.starts_with(
                "warning: Envoy's admin at 127.0.0.1:9 answered before but now refuses connections"
            )),
            "{warning:?}"
        );
        assert_eq!(
            refusal_warning(&mut answered, &Outcome::EnvoyDown, &admin),
            None,
            "once per outage"
        );
        refusal_warning(&mut answered, &Outcome::NotConfirmed, &admin);
        assert!(refusal_warning(&mut answered, &Outcome::EnvoyDown, &admin).is_some());
    }
}
