//! VM-local counts of the filter's counters, published to Envoy in batches.
//!
//! Every `increment_metric` is a host call; at one per counter per request
//! they were a measurable share of the filter's cost (bench/findings.md).
//! Requests only bump a number in the VM's memory; the root context flushes
//! the totals from its timer and whenever its configuration changes, so
//! Envoy's stats lag by at most one tick.

use std::cell::Cell;

use crate::host::{Counter, Host};

#[derive(Debug, Default)]
pub struct Tally {
    pending: [Cell<u64>; Counter::ALL.len()],
}

impl Tally {
    pub fn record(&self, counter: Counter) {
        if let Some(slot) = self.pending.get(counter.index()) {
            slot.set(slot.get().saturating_add(1));
        }
    }

    /// Counts recorded since the last flush.
    pub fn pending(&self, counter: Counter) -> u64 {
        self.pending.get(counter.index()).map_or(0, Cell::get)
    }

    /// Hands every non-zero pending count to the host (one call per counter
    /// that moved) and starts over from zero.
    pub fn flush(&self, host: &mut impl Host) {
        for counter in Counter::ALL {
            if let Some(slot) = self.pending.get(counter.index()) {
                let delta = slot.replace(0);
                if delta > 0 {
                    host.add_to_metric(counter, delta);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Tally;
    use crate::host::Counter;
    use crate::testing::FakeHost;

    #[test]
    fn counts_reach_the_host_only_when_flushed_and_only_once() {
        let tally = Tally::default();
        let mut host = FakeHost::default();
        for _ in 0..3 {
            tally.record(Counter::MatchedByName);
        }
        tally.record(Counter::Unmatched);
        assert_eq!(host.count(Counter::MatchedByName), 0);
        assert_eq!(tally.pending(Counter::MatchedByName), 3);

        tally.flush(&mut host); // the root context's tick
        assert_eq!(host.count(Counter::MatchedByName), 3);
        assert_eq!(host.count(Counter::Unmatched), 1);
        assert_eq!(tally.pending(Counter::MatchedByName), 0);

        tally.record(Counter::MatchedByName);
        tally.flush(&mut host);
        tally.flush(&mut host);
        assert_eq!(host.count(Counter::MatchedByName), 4);
        assert_eq!(host.count(Counter::EnforcedRetry), 0);
    }

    #[test]
    fn a_flush_with_nothing_pending_makes_no_host_call() {
        let tally = Tally::default();
        let mut host = FakeHost::default();
        tally.flush(&mut host);
        assert!(host.counters.is_empty());
    }
}
