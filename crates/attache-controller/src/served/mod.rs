//! Programmed means served (docs/controller.md, "Programmed means
//! served"): whether the Envoys of a Gateway serve the document the
//! controller applied, from what each ready replica's filter publishes
//! (docs/filter.md, "What it serves").
//!
//! Pure: [`GatewayServed::applied`] when a round applies (or first sees) a
//! document, [`GatewayServed::scraped`] with each scrape's readings and the
//! time; the verdict status reads is [`GatewayServed::published`]. The
//! scrape itself is `crate::kube::scrape`.
//!
//! **Hysteresis** (docs/semantics.md, "The controller": written only on
//! change). A reading changes the published verdict only once the same
//! new verdict was read in [`CONFIRM`] scrapes in a row, so a replica that
//! flaps between two answers never moves it (and never causes a status
//! write); a replica whose scrape fails keeps its last reading for
//! [`UNKNOWN_AFTER`] failures before it counts as unknown. A new applied
//! document is a fact, not a reading: the verdict turns `Pending` at once.
//!
//! **Per policy** (docs/status.md, "Which policies go Pending"). Each
//! applied document comes with each policy's part in it
//! ([`Contributions`], from the status fold). The policies whose part
//! differs in some document applied since the last one every replica
//! served are touched ([`GatewayServed::parts`]): they read the verdict of
//! the applied document. Every other policy gives the same values in each of
//! those documents, so a replica serving any of them serves it: it reads
//! [`GatewayServed::kept`], and an edit of one policy writes no other.

pub mod condition;
pub mod document;
pub mod stats;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

use attache_core::model::PolicyKind;
use attache_core::status::PolicyId;

pub use stats::{ProxyStats, Refusals, CLASSES};

/// Scrapes in a row that must agree before the published verdict moves.
pub const CONFIRM: u8 = 2;
/// Failed scrapes in a row before a replica's last reading is dropped.
pub const UNKNOWN_AFTER: u32 = 3;
/// Earlier documents remembered per Gateway, to say when the one a
/// lagging replica serves was applied.
const HISTORY: usize = 8;

/// A document the controller applied for a Gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedDoc {
    /// attache_contract::document_id of it.
    pub id: u64,
    pub at: Instant,
    /// The same time on the wall clock (RFC 3339), for messages.
    pub stamp: String,
}

/// Per policy ([`policy_key`]), a hash of its part in one Gateway's
/// document (`attache_core::status::GatewayShare::contributions`).
pub type Contributions = HashMap<u64, u64>;

/// A policy's key in [`Contributions`]: a hash of its kind, namespace and
/// name, as [`PolicyId`] holds them.
pub fn policy_key((kind, namespace, name): &PolicyId) -> u64 {
    policy_key_of(kind, namespace, name)
}

/// [`policy_key`] from the parts of a policy's identity, borrowed: a round
/// asks for every policy's, and need not copy their names.
pub fn policy_key_of(kind: &PolicyKind, namespace: &Option<String>, name: &str) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    (kind, namespace, name).hash(&mut hasher);
    hasher.finish()
}

/// One ready replica's scrape: its figures, or why none were read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scrape {
    Read(ProxyStats),
    Failed(String),
}

/// What is known of one replica.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replica {
    /// Its last good reading.
    pub reading: Option<ProxyStats>,
    /// Failed scrapes since then, and the last failure.
    pub failures: u32,
    pub why: Option<String>,
    /// Its refusals when the current document was applied (0 for a
    /// replica first seen after): more than these, and it refused it.
    pub baseline: Refusals,
}

impl Replica {
    fn known(&self) -> Option<&ProxyStats> {
        self.reading
            .as_ref()
            .filter(|_| self.failures < UNKNOWN_AFTER)
    }
}

/// What status says of a Gateway's replicas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every ready replica serves the applied document.
    Served { replicas: usize },
    /// Some do not yet: how many do, of how many; how many could not be
    /// read; the apply time of the oldest document still served (`None`:
    /// one older than the controller remembers, or none at all).
    Pending {
        serving: usize,
        replicas: usize,
        unknown: usize,
        oldest: Option<String>,
    },
    /// At least one refused it (its refusal counters rose while it does
    /// not serve it), with the classes that rose.
    Rejected {
        refused: usize,
        replicas: usize,
        classes: Vec<&'static str>,
    },
    /// No ready replica was found.
    NoReplicas,
    /// Not scraped yet since the controller started: status waits for the
    /// first scrape rather than write a guess it would take back (a cold
    /// start writes each policy once).
    Unread,
}

/// The two verdicts status reads: for the policies whose part changed
/// since the last document every replica served, and for the others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdicts {
    /// Replicas against the applied document.
    pub changed: Verdict,
    /// Replicas against any document of the epoch.
    pub kept: Verdict,
}

impl Verdicts {
    const UNREAD: Verdicts = Verdicts {
        changed: Verdict::Unread,
        kept: Verdict::Unread,
    };
}

/// One Gateway's replicas against its applied document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayServed {
    pub applied: AppliedDoc,
    /// Earlier applied documents, newest first.
    pub history: Vec<AppliedDoc>,
    /// By pod name.
    pub replicas: BTreeMap<String, Replica>,
    /// Each policy's part in the applied document (shared: the state is
    /// cloned at every scrape).
    contributions: Arc<Contributions>,
    /// The documents applied since the last one every replica served,
    /// oldest first, the applied one last (at most [`HISTORY`]).
    epoch: Vec<AppliedDoc>,
    /// The policies whose part differs between two documents of the epoch.
    touched: Arc<HashSet<u64>>,
    published: Verdicts,
    /// Verdicts read that differ from the published ones, and how many
    /// scrapes in a row read them.
    candidate: Option<(Verdicts, u8)>,
}

impl GatewayServed {
    /// [`GatewayServed::applied_with`] without the policies' parts: every
    /// policy reads the applied document's verdict.
    pub fn applied(previous: Option<&GatewayServed>, applied: AppliedDoc) -> GatewayServed {
        Self::applied_with(previous, applied, Arc::default())
    }

    /// The state after the controller applied (or, at start, found live)
    /// `applied`, whose policies' parts are `contributions`. The same
    /// document again changes no verdict.
    pub fn applied_with(
        previous: Option<&GatewayServed>,
        applied: AppliedDoc,
        contributions: Arc<Contributions>,
    ) -> GatewayServed {
        let Some(previous) = previous else {
            return GatewayServed {
                epoch: vec![applied.clone()],
                applied,
                history: Vec::new(),
                replicas: BTreeMap::new(),
                contributions,
                touched: Arc::default(),
                published: Verdicts::UNREAD,
                candidate: None,
            };
        };
        if previous.applied.id == applied.id {
            return GatewayServed {
                contributions,
                ..previous.clone()
            };
        }
        let touched = touched(previous, &contributions);
        let mut epoch = previous.epoch.clone();
        epoch.retain(|d| d.id != applied.id);
        epoch.push(applied.clone());
        // Dropping the oldest only narrows what counts as serving a kept
        // policy's values.
        let excess = epoch.len().saturating_sub(HISTORY);
        epoch.drain(..excess);
        let mut history = previous.history.clone();
        history.retain(|d| d.id != applied.id);
        history.insert(0, previous.applied.clone());
        history.truncate(HISTORY);
        let replicas = previous
            .replicas
            .iter()
            .map(|(pod, r)| {
                let baseline = r.reading.map_or(r.baseline, |s| s.refused);
                (
                    pod.clone(),
                    Replica {
                        baseline,
                        ..r.clone()
                    },
                )
            })
            .collect();
        GatewayServed {
            applied,
            history,
            replicas,
            contributions,
            epoch,
            touched: Arc::new(touched),
            published: previous.published.clone(),
            candidate: None,
        }
        .with_verdict_now()
    }

    /// A new document is known not to be served yet: published at once
    /// for the policies it changes (once anything was read at all). The
    /// others' verdict is a reading like any other.
    fn with_verdict_now(mut self) -> Self {
        if self.published.changed != Verdict::Unread {
            self.published.changed = self.read().changed;
        }
        self
    }

    /// The state after a scrape of every ready replica (a replica not in
    /// `scrapes` is no longer ready, and forgotten). The second value is how
    /// long the applied document took to be served, the first time the
    /// published verdict says it is.
    pub fn scraped(
        &self,
        scrapes: BTreeMap<String, Scrape>,
        now: Instant,
    ) -> (GatewayServed, Option<Duration>) {
        let replicas = scrapes
            .into_iter()
            .map(|(pod, scrape)| {
                let before = self.replicas.get(&pod).cloned().unwrap_or(Replica {
                    reading: None,
                    failures: 0,
                    why: None,
                    baseline: [0; CLASSES.len()],
                });
                let replica = match scrape {
                    Scrape::Read(stats) => Replica {
                        reading: Some(stats),
                        failures: 0,
                        why: None,
                        ..before
                    },
                    Scrape::Failed(why) => Replica {
                        failures: before.failures.saturating_add(1),
                        why: Some(why),
                        ..before
                    },
                };
                (pod, replica)
            })
            .collect();
        let mut next = GatewayServed {
            replicas,
            ..self.clone()
        };
        let read = next.read();
        if read == next.published || next.published.changed == Verdict::Unread {
            next.published = read;
            next.candidate = None;
        } else {
            let count = match &next.candidate {
                Some((verdict, count)) if *verdict == read => count.saturating_add(1),
                _ => 1,
            };
            if count >= CONFIRM {
                next.published = read;
                next.candidate = None;
            } else {
                next.candidate = Some((read, count));
            }
        }
        let newly_served = matches!(next.published.changed, Verdict::Served { .. })
            && !matches!(self.published.changed, Verdict::Served { .. });
        if matches!(next.published.changed, Verdict::Served { .. }) {
            // Every replica serves the applied document: a new epoch.
            next.epoch = vec![next.applied.clone()];
            next.touched = Arc::default();
        }
        let took = newly_served.then(|| now.saturating_duration_since(self.applied.at));
        (next, took)
    }

    /// The verdict of the applied document: what status says of the
    /// policies [`GatewayServed::touched`] (and of every policy without a
    /// known part).
    pub fn published(&self) -> &Verdict {
        &self.published.changed
    }

    /// The verdict of any document of the epoch: what status says of a
    /// policy whose part is the same in each.
    pub fn kept(&self) -> &Verdict {
        &self.published.kept
    }

    /// When the epoch's first document was applied: a kept policy's
    /// values are the same since then.
    pub fn kept_since(&self) -> &str {
        self.epoch.first().map_or(&self.applied.stamp, |d| &d.stamp)
    }

    /// Each policy's part, and those touched, for status.
    pub fn parts(&self) -> (Arc<Contributions>, Arc<HashSet<u64>>) {
        (self.contributions.clone(), self.touched.clone())
    }

    /// Served by all (or no replica to read: a Gateway scaled to zero, or
    /// pods the selector does not find), and nothing read that might change
    /// it: no other verdict waiting for confirmation, no replica failing to
    /// answer. The scrape loop reads often until then.
    pub fn settled(&self) -> bool {
        matches!(
            self.published.changed,
            Verdict::Served { .. } | Verdict::NoReplicas
        ) && self.candidate.is_none()
            && self.replicas.values().all(|r| r.failures == 0)
    }

    /// Replicas that serve the applied document, that serve another, and
    /// that refused it, as last read (not held back by hysteresis): the
    /// metrics' figures.
    pub fn counts(&self) -> (usize, usize, usize) {
        let (mut serving, mut lagging, mut refusing) = (0, 0, 0);
        for replica in self.replicas.values() {
            match replica.known() {
                Some(s) if s.document == Some(self.applied.id) => serving += 1,
                Some(s) if rose(s, &replica.baseline) => refusing += 1,
                _ => lagging += 1,
            }
        }
        (serving, lagging, refusing)
    }

    /// The verdicts the replicas' current readings give.
    fn read(&self) -> Verdicts {
        let in_epoch = |id: Option<u64>| self.epoch.iter().any(|d| Some(d.id) == id);
        Verdicts {
            changed: self.read_by(|id| id == Some(self.applied.id)),
            kept: self.read_by(in_epoch),
        }
    }

    /// The verdict when a replica serving a document `serves` accepts
    /// serves the values in question.
    fn read_by(&self, serves: impl Fn(Option<u64>) -> bool) -> Verdict {
        let replicas = self.replicas.len();
        if replicas == 0 {
            return Verdict::NoReplicas;
        }
        let (mut serving, mut unknown, mut refused) = (0, 0, 0);
        let mut classes = Vec::new();
        let mut served = Vec::new();
        for replica in self.replicas.values() {
            let Some(stats) = replica.known() else {
                unknown += 1;
                continue;
            };
            if serves(stats.document) {
                serving += 1;
                continue;
            }
            if rose(stats, &replica.baseline) {
                refused += 1;
                for ((class, now), then) in CLASSES.iter().zip(stats.refused).zip(replica.baseline)
                {
                    if now > then && !classes.contains(class) {
                        classes.push(*class);
                    }
                }
            }
            served.push(stats.document);
        }
        if refused > 0 {
            classes.sort_unstable();
            return Verdict::Rejected {
                refused,
                replicas,
                classes,
            };
        }
        if serving == replicas {
            return Verdict::Served { replicas };
        }
        Verdict::Pending {
            serving,
            replicas,
            unknown,
            oldest: self.oldest(&served),
        }
    }

    /// When the oldest of these documents was applied, if every one is
    /// remembered.
    fn oldest(&self, served: &[Option<u64>]) -> Option<String> {
        let ages: Option<Vec<usize>> = served
            .iter()
            .map(|id| self.history.iter().position(|d| Some(d.id) == *id))
            .collect();
        let oldest = ages?.into_iter().max()?;
        self.history.get(oldest).map(|d| d.stamp.clone())
    }
}

/// The policies whose part differs between the previous state's applied
/// document and the one `now` gives (new ones and gone ones included),
/// added to those already touched within the epoch: none once every
/// replica served the previous one.
fn touched(previous: &GatewayServed, now: &Contributions) -> HashSet<u64> {
    let before = &previous.contributions;
    let mut touched: HashSet<u64> = previous.touched.iter().copied().collect();
    touched.extend(
        now.iter()
            .filter(|(policy, part)| before.get(*policy) != Some(*part))
            .map(|(policy, _)| *policy),
    );
    touched.extend(before.keys().filter(|p| !now.contains_key(*p)).copied());
    touched
}

/// Whether a replica refused more documents than at its baseline.
fn rose(stats: &ProxyStats, baseline: &Refusals) -> bool {
    stats
        .refused
        .iter()
        .zip(baseline)
        .any(|(now, then)| now > then)
}

#[cfg(test)]
mod policy_tests;
#[cfg(test)]
mod tests;
