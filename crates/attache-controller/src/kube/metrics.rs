//! Prometheus metrics in the text exposition format (version 0.0.4), kept
//! by hand: five families do not need a metrics crate and its build time.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;

use attache_core::topology::ObjectKey;

use crate::serving::NotServed;

/// Upper bounds (seconds) of the apply latency histogram.
const BUCKETS: [f64; 8] = [0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

#[derive(Default)]
pub struct Metrics {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    reconciles: u64,
    errors: u64,
    last_apply: BTreeMap<String, f64>,
    apply_counts: [u64; BUCKETS.len()],
    apply_count: u64,
    apply_sum: f64,
    watched: BTreeMap<&'static str, usize>,
    leader: bool,
    last_reconcile_seconds: f64,
    /// Gateways served, and those not served by reason.
    served: usize,
    not_served: BTreeMap<&'static str, usize>,
    /// Every write request sent, by what it wrote: the number that shows a
    /// write storm (an idle controller's only writes are the Lease's).
    writes: BTreeMap<Write, u64>,
}

/// A write the controller sends to the API server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Write {
    /// A policy's status subresource (each try, re-reads after a 409 too).
    Status,
    /// A server-side apply of a Gateway's WasmPlugin.
    PluginApply,
    /// The delete of a WasmPlugin whose Gateway left our class.
    PluginDelete,
}

impl Write {
    fn labels(self) -> &'static str {
        match self {
            Write::Status => "object=\"status\",verb=\"patch\"",
            Write::PluginApply => "object=\"wasmplugin\",verb=\"apply\"",
            Write::PluginDelete => "object=\"wasmplugin\",verb=\"delete\"",
        }
    }
}

impl Metrics {
    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut inner)
    }

    pub fn reconciled(&self, seconds: f64) {
        self.with(|m| {
            m.reconciles += 1;
            m.last_reconcile_seconds = seconds;
        });
    }

    pub fn error(&self) {
        self.with(|m| m.errors += 1);
    }

    /// A successful apply of a Gateway's configuration at `unix` seconds,
    /// which took `seconds`.
    pub fn applied(&self, gateway: &str, unix: f64, seconds: f64) {
        self.with(|m| {
            m.last_apply.insert(gateway.to_string(), unix);
            for (i, bound) in BUCKETS.iter().enumerate() {
                if seconds <= *bound {
                    m.apply_counts[i] += 1;
                }
            }
            m.apply_count += 1;
            m.apply_sum += seconds;
        });
    }

    /// This round's Gateways: how many are served, and why the others are
    /// not (every reason reported, zero included, so a reason that cleared
    /// reads 0 rather than its last value).
    pub fn gateways(&self, served: usize, not_served: &BTreeMap<ObjectKey, NotServed>) {
        self.with(|m| {
            m.served = served;
            m.not_served = NotServed::REASONS.iter().map(|r| (*r, 0)).collect();
            for why in not_served.values() {
                *m.not_served.entry(why.reason()).or_default() += 1;
            }
        });
    }

    /// One write request sent, whatever its answer.
    pub fn wrote(&self, write: Write) {
        self.with(|m| *m.writes.entry(write).or_default() += 1);
    }

    /// Writes sent so far of one sort.
    pub fn writes(&self, write: Write) -> u64 {
        self.with(|m| m.writes.get(&write).copied().unwrap_or(0))
    }

    pub fn watched(&self, kind: &'static str, count: usize) {
        self.with(|m| {
            m.watched.insert(kind, count);
        });
    }

    pub fn leader(&self, leader: bool) {
        self.with(|m| m.leader = leader);
    }

    pub fn render(&self) -> String {
        self.with(|m| {
            let mut out = String::new();
            let _ = writeln!(out, "# HELP attache_reconciles_total Reconcile rounds run.\n# TYPE attache_reconciles_total counter\nattache_reconciles_total {}", m.reconciles);
            let _ = writeln!(out, "# HELP attache_reconcile_errors_total Writes that failed and Gateways that could not be resolved.\n# TYPE attache_reconcile_errors_total counter\nattache_reconcile_errors_total {}", m.errors);
            let _ = writeln!(out, "# HELP attache_last_reconcile_duration_seconds How long the last reconcile round took.\n# TYPE attache_last_reconcile_duration_seconds gauge\nattache_last_reconcile_duration_seconds {}", m.last_reconcile_seconds);
            let _ = writeln!(out, "# HELP attache_last_successful_apply_timestamp_seconds When each Gateway's configuration was last applied or found current.\n# TYPE attache_last_successful_apply_timestamp_seconds gauge");
            for (gateway, at) in &m.last_apply {
                let _ = writeln!(out, "attache_last_successful_apply_timestamp_seconds{{gateway=\"{gateway}\"}} {at}");
            }
            let _ = writeln!(out, "# HELP attache_apply_duration_seconds Server-side apply latency of a WasmPlugin.\n# TYPE attache_apply_duration_seconds histogram");
            for (i, bound) in BUCKETS.iter().enumerate() {
                let _ = writeln!(out, "attache_apply_duration_seconds_bucket{{le=\"{bound}\"}} {}", m.apply_counts[i]);
            }
            let _ = writeln!(out, "attache_apply_duration_seconds_bucket{{le=\"+Inf\"}} {}\nattache_apply_duration_seconds_sum {}\nattache_apply_duration_seconds_count {}", m.apply_count, m.apply_sum, m.apply_count);
            let _ = writeln!(out, "# HELP attache_watched_objects Objects in the watch cache, per kind.\n# TYPE attache_watched_objects gauge");
            for (kind, count) in &m.watched {
                let _ = writeln!(out, "attache_watched_objects{{kind=\"{kind}\"}} {count}");
            }
            let _ = writeln!(out, "# HELP attache_gateways_served Gateways this controller serves.\n# TYPE attache_gateways_served gauge\nattache_gateways_served {}", m.served);
            let _ = writeln!(out, "# HELP attache_gateways_not_served Gateways in scope it does not serve, by reason.\n# TYPE attache_gateways_not_served gauge");
            for (reason, count) in &m.not_served {
                let _ = writeln!(out, "attache_gateways_not_served{{reason=\"{reason}\"}} {count}");
            }
            let _ = writeln!(out, "# HELP attache_writes_total Write requests sent to the API server, by object and verb (the Lease's are not counted).\n# TYPE attache_writes_total counter");
            for write in [Write::Status, Write::PluginApply, Write::PluginDelete] {
                let _ = writeln!(out, "attache_writes_total{{{}}} {}", write.labels(), m.writes.get(&write).copied().unwrap_or(0));
            }
            let _ = writeln!(out, "# HELP attache_leader Whether this replica holds the Lease (1) and writes.\n# TYPE attache_leader gauge\nattache_leader {}", u8::from(m.leader));
            out
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exposition_counts_what_happened() {
        let m = Metrics::default();
        m.reconciled(0.2);
        m.applied("infra/edge", 1_700_000_000.0, 0.07);
        m.watched("HTTPRoute", 3);
        m.wrote(Write::Status);
        m.wrote(Write::Status);
        m.wrote(Write::PluginApply);
        let why = NotServed::ClassMissing {
            class: "gone".into(),
        };
        let key = |name: &str| ObjectKey {
            namespace: "shop".into(),
            name: name.into(),
        };
        m.gateways(
            2,
            &[(key("a"), why.clone()), (key("b"), why)]
                .into_iter()
                .collect(),
        );
        let text = m.render();
        for line in [
            "attache_reconciles_total 1",
            "attache_last_successful_apply_timestamp_seconds{gateway=\"infra/edge\"} 1700000000",
            "attache_apply_duration_seconds_bucket{le=\"0.05\"} 0",
            "attache_apply_duration_seconds_bucket{le=\"0.1\"} 1",
            "attache_apply_duration_seconds_count 1",
            "attache_watched_objects{kind=\"HTTPRoute\"} 3",
            "attache_leader 0",
            "attache_gateways_served 2",
            "attache_gateways_not_served{reason=\"GatewayClassMissing\"} 2",
            "attache_gateways_not_served{reason=\"OtherController\"} 0",
            "attache_writes_total{object=\"status\",verb=\"patch\"} 2",
            "attache_writes_total{object=\"wasmplugin\",verb=\"apply\"} 1",
            "attache_writes_total{object=\"wasmplugin\",verb=\"delete\"} 0",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "{line} missing from\n{text}"
            );
        }
    }
}
