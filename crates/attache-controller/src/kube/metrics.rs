//! The controller's metrics, kept by `prometheus-client` (the Prometheus
//! project's Rust client) and exposed in the OpenMetrics text format on
//! `/metrics`. Per-Gateway series go when their Gateway goes
//! ([`Metrics::forget_gateway`]), so a cluster's churn does not grow the
//! exposition forever.

use std::collections::BTreeMap;

use attache_core::topology::ObjectKey;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

use crate::serving::NotServed;

/// Upper bounds (seconds) of the latency histograms: a small Gateway's
/// round is milliseconds, a 10,000-route one about a second.
const BUCKETS: [f64; 10] = [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// A write the controller sends to the API server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Write {
    /// A policy's status subresource (each try, re-reads after a 409 too).
    Status,
    /// A server-side apply of a Gateway's plugin object.
    PluginApply,
    /// The delete of a plugin object whose Gateway left our class.
    PluginDelete,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct WriteLabels {
    object: &'static str,
    verb: &'static str,
}

impl Write {
    fn labels(self) -> WriteLabels {
        let (object, verb) = match self {
            Write::Status => ("status", "patch"),
            Write::PluginApply => ("wasmplugin", "apply"),
            Write::PluginDelete => ("wasmplugin", "delete"),
        };
        WriteLabels { object, verb }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct KindLabel {
    kind: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ReasonLabel {
    reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct GatewayLabel {
    gateway: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ReplicaLabels {
    gateway: String,
    state: &'static str,
}

/// Upper bounds (seconds) of the apply-to-served histogram: istiod's push
/// and the filter's load, from a tenth of a second to a stuck replica.
const SERVED_BUCKETS: [f64; 10] = [0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0];

/// The states of `attache_gateway_replicas`.
const REPLICA_STATES: [&str; 3] = ["serving", "lagging", "refusing"];

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RestartLabels {
    kind: String,
    reason: String,
}

/// Every metric, registered once in [`Metrics::default`].
pub struct Metrics {
    registry: Registry,
    reconciles: Counter,
    reconcile_seconds: Histogram,
    apply_seconds: Histogram,
    errors: Family<ReasonLabel, Counter>,
    writes: Family<WriteLabels, Counter>,
    watched: Family<KindLabel, Gauge>,
    served: Gauge,
    not_served: Family<ReasonLabel, Gauge>,
    gateway_reconciles: Family<GatewayLabel, Counter>,
    last_apply: Family<GatewayLabel, Gauge<f64, AtomicU64>>,
    watch_restarts: Family<RestartLabels, Counter>,
    leader: Gauge,
    replicas: Family<ReplicaLabels, Gauge>,
    served_after: Histogram,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("attache");
        let m = Metrics {
            reconciles: Counter::default(),
            reconcile_seconds: Histogram::new(BUCKETS),
            apply_seconds: Histogram::new(BUCKETS),
            errors: Family::default(),
            writes: Family::default(),
            watched: Family::default(),
            served: Gauge::default(),
            not_served: Family::default(),
            gateway_reconciles: Family::default(),
            last_apply: Family::default(),
            watch_restarts: Family::default(),
            leader: Gauge::default(),
            replicas: Family::default(),
            served_after: Histogram::new(SERVED_BUCKETS),
            registry: Registry::default(),
        };
        registry.register("reconciles", "Reconcile rounds run", m.reconciles.clone());
        registry.register(
            "reconcile_duration_seconds",
            "How long each reconcile round took",
            m.reconcile_seconds.clone(),
        );
        registry.register(
            "apply_duration_seconds",
            "Server-side apply latency of a Gateway's plugin object",
            m.apply_seconds.clone(),
        );
        registry.register(
            "errors",
            "Writes that failed and Gateways that could not be resolved, by reason",
            m.errors.clone(),
        );
        registry.register(
            "writes",
            "Write requests sent to the API server, by object and verb (the Lease's are not counted)",
            m.writes.clone(),
        );
        registry.register(
            "watched_objects",
            "Objects in the watch cache, per kind",
            m.watched.clone(),
        );
        registry.register(
            "gateways_served",
            "Gateways this controller serves",
            m.served.clone(),
        );
        registry.register(
            "gateways_not_served",
            "Gateways in scope it does not serve, by reason",
            m.not_served.clone(),
        );
        registry.register(
            "gateway_reconciles",
            "Times each Gateway was resolved again (an edit elsewhere leaves it alone)",
            m.gateway_reconciles.clone(),
        );
        registry.register(
            "last_successful_apply_timestamp_seconds",
            "When each Gateway's configuration was last applied or found current",
            m.last_apply.clone(),
        );
        registry.register(
            "watch_restarts",
            "Watches that ended in an error and were started again, per kind and reason",
            m.watch_restarts.clone(),
        );
        registry.register(
            "leader",
            "Whether this replica holds the Lease (1) and writes",
            m.leader.clone(),
        );
        registry.register(
            "gateway_replicas",
            "Ready proxy replicas of each Gateway by what they serve: the applied document (serving), another (lagging, or unreadable), or another after refusing it (refusing)",
            m.replicas.clone(),
        );
        registry.register(
            "apply_to_served_seconds",
            "From a Gateway's apply to every ready replica serving it (as published, after hysteresis)",
            m.served_after.clone(),
        );
        Metrics { registry, ..m }
    }
}

impl Metrics {
    pub fn reconciled(&self, seconds: f64) {
        self.reconciles.inc();
        self.reconcile_seconds.observe(seconds);
    }

    /// A failure, by a reason of a few fixed words (never free text: each
    /// value is a series).
    pub fn error(&self, reason: &str) {
        self.errors
            .get_or_create(&ReasonLabel {
                reason: reason.to_string(),
            })
            .inc();
    }

    /// A successful apply of a Gateway's configuration at `unix` seconds,
    /// which took `seconds` (0 when it was found current).
    pub fn applied(&self, gateway: &ObjectKey, unix: f64, seconds: f64) {
        self.last_apply.get_or_create(&label(gateway)).set(unix);
        if seconds > 0.0 {
            self.apply_seconds.observe(seconds);
        }
    }

    /// A Gateway resolved again this round.
    pub fn gateway_reconciled(&self, gateway: &ObjectKey) {
        self.gateway_reconciles.get_or_create(&label(gateway)).inc();
    }

    /// How often `gateway` was resolved again.
    pub fn gateway_reconciles(&self, gateway: &ObjectKey) -> u64 {
        self.gateway_reconciles.get_or_create(&label(gateway)).get()
    }

    /// A Gateway that is gone (or no longer ours) takes its series along.
    pub fn forget_gateway(&self, gateway: &ObjectKey) {
        self.gateway_reconciles.remove(&label(gateway));
        self.last_apply.remove(&label(gateway));
        for state in REPLICA_STATES {
            self.replicas.remove(&ReplicaLabels {
                gateway: gateway.to_string(),
                state,
            });
        }
    }

    /// A Gateway's replicas: (serving, lagging, refusing).
    pub fn replicas(
        &self,
        gateway: &ObjectKey,
        (serving, lagging, refusing): (usize, usize, usize),
    ) {
        for (state, count) in REPLICA_STATES.into_iter().zip([serving, lagging, refusing]) {
            let labels = ReplicaLabels {
                gateway: gateway.to_string(),
                state,
            };
            let count = i64::try_from(count).unwrap_or(i64::MAX);
            self.replicas.get_or_create(&labels).set(count);
        }
    }

    /// A Gateway's applied document is served by every replica, `seconds`
    /// after the apply.
    pub fn served_after(&self, seconds: f64) {
        self.served_after.observe(seconds);
    }

    /// One write request sent, whatever its answer.
    pub fn wrote(&self, write: Write) {
        self.writes.get_or_create(&write.labels()).inc();
    }

    /// Writes sent so far of one sort.
    pub fn writes(&self, write: Write) -> u64 {
        self.writes.get_or_create(&write.labels()).get()
    }

    pub fn watched(&self, kind: &str, count: usize) {
        self.watched
            .get_or_create(&KindLabel {
                kind: kind.to_string(),
            })
            .set(i64::try_from(count).unwrap_or(i64::MAX));
    }

    /// A watch that failed and is started again.
    pub fn watch_restarted(&self, kind: &str, reason: &str) {
        self.watch_restarts
            .get_or_create(&RestartLabels {
                kind: kind.to_string(),
                reason: reason.to_string(),
            })
            .inc();
    }

    /// This round's Gateways: how many are served, and why the others are
    /// not (every reason reported, zero included, so a reason that cleared
    /// reads 0 rather than its last value).
    pub fn gateways(&self, served: usize, not_served: &BTreeMap<ObjectKey, NotServed>) {
        self.served.set(i64::try_from(served).unwrap_or(i64::MAX));
        let mut counts: BTreeMap<&str, i64> = NotServed::REASONS.iter().map(|r| (*r, 0)).collect();
        for why in not_served.values() {
            *counts.entry(why.reason()).or_default() += 1;
        }
        for (reason, count) in counts {
            self.not_served
                .get_or_create(&ReasonLabel {
                    reason: reason.to_string(),
                })
                .set(count);
        }
    }

    pub fn leader(&self, leader: bool) {
        self.leader.set(i64::from(leader));
    }

    /// The OpenMetrics text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &self.registry) {
            tracing::warn!(error = %e, "cannot encode the metrics");
        }
        out
    }
}

fn label(gateway: &ObjectKey) -> GatewayLabel {
    GatewayLabel {
        gateway: gateway.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> ObjectKey {
        ObjectKey {
            namespace: "infra".into(),
            name: name.into(),
        }
    }

    fn has(text: &str, line: &str) {
        assert!(
            text.lines().any(|l| l == line),
            "{line} missing from\n{text}"
        );
    }

    #[test]
    fn the_exposition_counts_what_happened() {
        let m = Metrics::default();
        m.reconciled(0.2);
        m.applied(&key("edge"), 1_700_000_000.0, 0.07);
        m.watched("HTTPRoute", 3);
        m.wrote(Write::Status);
        m.wrote(Write::Status);
        m.wrote(Write::PluginApply);
        m.error("Forbidden");
        m.watch_restarted("HTTPRoute", "Other");
        m.replicas(&key("edge"), (2, 1, 0));
        m.served_after(0.3);
        let why = NotServed::ClassMissing {
            class: "gone".into(),
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
            "attache_reconcile_duration_seconds_count 1",
            "attache_reconcile_duration_seconds_bucket{le=\"0.1\"} 0",
            "attache_reconcile_duration_seconds_bucket{le=\"0.25\"} 1",
            "attache_last_successful_apply_timestamp_seconds{gateway=\"infra/edge\"} 1700000000.0",
            "attache_apply_duration_seconds_count 1",
            "attache_watched_objects{kind=\"HTTPRoute\"} 3",
            "attache_leader 0",
            "attache_gateways_served 2",
            "attache_gateways_not_served{reason=\"GatewayClassMissing\"} 2",
            "attache_gateways_not_served{reason=\"OtherController\"} 0",
            "attache_writes_total{object=\"status\",verb=\"patch\"} 2",
            "attache_writes_total{object=\"wasmplugin\",verb=\"apply\"} 1",
            "attache_errors_total{reason=\"Forbidden\"} 1",
            "attache_watch_restarts_total{kind=\"HTTPRoute\",reason=\"Other\"} 1",
            "attache_gateway_replicas{gateway=\"infra/edge\",state=\"serving\"} 2",
            "attache_gateway_replicas{gateway=\"infra/edge\",state=\"lagging\"} 1",
            "attache_gateway_replicas{gateway=\"infra/edge\",state=\"refusing\"} 0",
            "attache_apply_to_served_seconds_bucket{le=\"0.25\"} 0",
            "attache_apply_to_served_seconds_bucket{le=\"0.5\"} 1",
        ] {
            has(&text, line);
        }
        assert_eq!(m.writes(Write::Status), 2);
    }

    #[test]
    fn a_forgotten_gateway_takes_its_series_along() {
        let m = Metrics::default();
        m.gateway_reconciled(&key("gone"));
        m.gateway_reconciled(&key("stays"));
        m.applied(&key("gone"), 1.0, 0.0);
        m.replicas(&key("gone"), (1, 0, 0));
        assert!(m.render().contains("gateway=\"infra/gone\""));
        m.forget_gateway(&key("gone"));
        let text = m.render();
        assert!(!text.contains("infra/gone"), "{text}");
        has(
            &text,
            "attache_gateway_reconciles_total{gateway=\"infra/stays\"} 1",
        );
    }
}
