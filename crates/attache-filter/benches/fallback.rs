//! Fallback matching at 10 and at 10,000 routes, per request, over the real
//! compiled configuration: the data-plane document in the shape
//! bench/attache_bench/documents.py gives the Envoy benchmark (one host,
//! route `svc-NNNNN` matching `PathPrefix /svc-NNNNN`, every route with the
//! benchmark policy's settings), compiled by `CompiledConfig::from_bytes`,
//! and a request for the last entry, the worst case for anything that scans.
//! Only the lookup is timed: no Envoy, no host calls (bench/findings.md has
//! the figures and what they leave out). The old linear scan
//! (`find_by_scan`, kept for the tests) is timed too, for comparison, when
//! the `fuzzing` feature exposes it.
//!
//! Interleaved rounds (10, then 10,000, alternating which goes first), and
//! the median of the per-round ratios, so that load from elsewhere on the
//! machine hits both sides of a ratio alike.
//!
//! Run: cargo bench -p attache-filter --bench fallback [-- ROUNDS]

use std::hint::black_box;
use std::time::Instant;

use attache_contract::{
    DataPlaneDocument, Document, Header, HeaderChanges, HttpRouteMatch, PathMatch, PathMatchType,
    Retry, RouteEntry, Timeouts, SCHEMA_VERSION,
};
use attache_filter::fallback::FallbackTable;
use attache_filter::request::RequestFacts;
use attache_filter::{CompiledConfig, Counter, Gauge, HeaderMap, Host, LogLevel};

const HOSTNAME: &str = "bench.example.com";
const ITERATIONS: u32 = 200_000;

fn route_name(i: usize) -> String {
    format!("svc-{i:05}")
}

fn document(routes: usize) -> Vec<u8> {
    let header = |name: &str, value: &str| Header {
        name: name.into(),
        value: value.into(),
    };
    let entries = (0..routes)
        .map(|i| RouteEntry {
            name: format!("http/bench/{}/0", route_name(i)),
            listener: "http".into(),
            listener_set: None,
            listener_set_kind: None,
            route_namespace: "bench".into(),
            route_name: route_name(i),
            rule: "0".into(),
            hostnames: vec![HOSTNAME.into()],
            matches: vec![HttpRouteMatch {
                path: Some(PathMatch {
                    kind: PathMatchType::PathPrefix,
                    value: format!("/{}", route_name(i)),
                }),
                ..HttpRouteMatch::default()
            }],
            settings: attache_contract::Settings {
                timeouts: Some(Timeouts {
                    request_ms: Some(10_000),
                    backend_request_ms: Some(2_000),
                }),
                retry: Some(Retry {
                    attempts: Some(2),
                    codes: Some(vec![503]),
                    ..Retry::default()
                }),
                request_headers: Some(HeaderChanges {
                    set: vec![header("x-bench-a", "1"), header("x-bench-b", "2")],
                    remove: vec!["x-bench-gone".into()],
                    ..HeaderChanges::default()
                }),
                ..Default::default()
            },
            ..RouteEntry::default()
        })
        .collect();
    let resolved = Document {
        schema_version: SCHEMA_VERSION,
        gateway: "bench/edge".into(),
        options: Default::default(),
        routes: entries,
    };
    let encoded = DataPlaneDocument::encode(&resolved);
    serde_json::to_vec(&encoded).unwrap_or_default()
}

/// Fallback matching reads headers only for header conditions, which these
/// routes have none of; nothing else of the host is used.
struct NoHost;

impl Host for NoHost {
    fn property(&self, _: &[&str]) -> Option<Vec<u8>> {
        None
    }
    fn header(&self, _: HeaderMap, _: &str) -> Option<Vec<u8>> {
        None
    }
    fn set_property(&mut self, _: &[&str], _: &[u8]) {}
    fn set_header(&mut self, _: HeaderMap, _: &str, _: Option<&str>) {}
    fn add_header(&mut self, _: HeaderMap, _: &str, _: &str) {}
    fn log_enabled(&self, _: LogLevel) -> bool {
        false
    }
    fn log(&self, _: LogLevel, _: &str) {}
    fn increment(&mut self, _: Counter) {}
    fn add_to_metric(&mut self, _: Counter, _: u64) {}
    fn set_gauge(&mut self, _: Gauge, _: u64) {}
    fn clock_nanos(&self) -> Option<u64> {
        None
    }
    fn memory_bytes(&self) -> Option<u64> {
        None
    }
}

struct Case {
    config: CompiledConfig,
    facts: RequestFacts,
    expected: String,
}

type Failure = Box<dyn std::error::Error>;

/// `FallbackTable::find` or `find_by_scan`.
type Lookup<'a> = fn(&'a FallbackTable, &RequestFacts, Option<u16>, &NoHost) -> Option<u32>;

impl Case {
    fn new(routes: usize) -> Result<Case, Failure> {
        let config = CompiledConfig::from_bytes(&document(routes))?;
        let last = route_name(routes - 1);
        Ok(Case {
            config,
            facts: RequestFacts::from_parts(
                Some(HOSTNAME.to_string()),
                Some(format!("/{last}/items?page=2")),
                Some("GET".to_string()),
            ),
            expected: format!("http/bench/{last}/0"),
        })
    }

    /// Nanoseconds per lookup over `ITERATIONS` lookups.
    fn time(&self) -> f64 {
        self.time_with(ITERATIONS, FallbackTable::find)
    }

    /// The same with the linear scan, over `iterations` lookups.
    #[cfg(feature = "fuzzing")]
    fn time_scan(&self, iterations: u32) -> f64 {
        self.time_with(iterations, FallbackTable::find_by_scan)
    }

    fn time_with<'a>(&'a self, iterations: u32, lookup: Lookup<'a>) -> f64 {
        let table = self.config.fallback();
        let start = Instant::now();
        for _ in 0..iterations {
            black_box(lookup(
                table,
                black_box(&self.facts),
                black_box(Some(80)),
                &NoHost,
            ));
        }
        start.elapsed().as_nanos() as f64 / f64::from(iterations)
    }

    /// The request must hit the last entry, or the figures mean nothing.
    fn check(&self) -> Result<(), Failure> {
        let found = self.config.fallback().find(&self.facts, Some(80), &NoHost);
        match found
            .and_then(|e| self.config.route_at(e))
            .map(|r| &*r.name)
        {
            Some(name) if name == self.expected => Ok(()),
            other => Err(format!("found {other:?}, not {}", self.expected).into()),
        }
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

fn main() -> Result<(), Failure> {
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(15);
    let small = Case::new(10)?;
    let large = Case::new(10_000)?;
    small.check()?;
    large.check()?;
    // Warm-up, not recorded.
    small.time();
    large.time();
    let (mut ns_small, mut ns_large, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let (s, l) = if round % 2 == 0 {
            let s = small.time();
            (s, large.time())
        } else {
            let l = large.time();
            (small.time(), l)
        };
        ns_small.push(s);
        ns_large.push(l);
        ratios.push(l / s);
    }
    let (lo, hi) = ratios
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), r| (lo.min(*r), hi.max(*r)));
    println!(
        "fallback lookup, {rounds} rounds of {ITERATIONS} lookups: 10 routes {:.1} ns, 10,000 routes {:.1} ns (medians); 10,000 / 10 per round: median {:.3}x (rounds {lo:.3}-{hi:.3}x)",
        median(&mut ns_small),
        median(&mut ns_large),
        median(&mut ratios),
    );
    #[cfg(feature = "fuzzing")]
    println!(
        "linear scan, one round: 10 routes {:.1} ns, 10,000 routes {:.1} ns",
        small.time_scan(ITERATIONS),
        large.time_scan(ITERATIONS / 1000),
    );
    Ok(())
}
