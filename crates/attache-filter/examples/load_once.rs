//! One step of a fresh VM's load and nothing else, for counts that do not
//! depend on what else the machine runs: the heap kept and its peak, the
//! allocations, and (under callgrind) the instructions.
//!
//!     cargo build --release -p attache-filter --example load_once
//!     valgrind --tool=callgrind target/release/examples/load_once CONFIG STEP
//!
//! STEP is `read` (the file only: the baseline to subtract), `load` (the
//! configuration accepted as a fresh VM's `on_configure` takes it: the bytes
//! handed over, opened and validated), `lookup` (the load, then the first
//! lookup of a route name, which keys istiod's names) or `fallback` (the
//! load, then the fallback table a request without a known route name
//! builds), or `update EDITED` (the load, then EDITED loaded as a VM that
//! holds CONFIG loads an update: what a serving VM does on the worker
//! thread for each edit). The instructions of a step are its run's total
//! minus `read`'s (for `update`, minus `load`'s).

use std::sync::atomic::Ordering::Relaxed;

use attache_filter::config::CompiledConfig;

mod heap;
use heap::{mib, ALLOCATIONS, LIVE, PEAK};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: load_once CONFIG read|load|lookup|fallback|update EDITED";
    let path = args.next().ok_or(usage)?;
    let step = args.next().ok_or(usage)?;
    let bytes = std::fs::read(&path)?;
    let input = bytes.len();
    let (before, allocations) = (LIVE.load(Relaxed) - input, ALLOCATIONS.load(Relaxed));
    PEAK.store(LIVE.load(Relaxed), Relaxed);
    let report = |what: &str| {
        println!(
            "{what}: kept {:.2} MiB, peak {:.2} MiB, {} allocations",
            mib(LIVE.load(Relaxed) - before),
            mib(PEAK.load(Relaxed) - before),
            ALLOCATIONS.load(Relaxed) - allocations
        );
    };
    match step.as_str() {
        "read" => report(&format!("read {input} bytes")),
        "update" => {
            let edited = std::fs::read(args.next().ok_or(usage)?)?;
            let config = CompiledConfig::from_owned_bytes(bytes)?;
            report(&format!("load ({} routes)", config.route_count()));
            let next = CompiledConfig::from_owned_bytes_after(edited, Some(&config))?;
            report(&format!("update ({} routes)", next.route_count()));
        }
        "load" | "lookup" | "fallback" => {
            let config = CompiledConfig::from_owned_bytes(bytes)?;
            report(&format!("load ({} routes)", config.route_count()));
            if step == "lookup" {
                let found = config.route_named("no such route").is_some();
                report(&format!("first lookup (found: {found})"));
            }
            if step == "fallback" {
                let candidates = config.fallback().len();
                report(&format!("fallback table ({candidates} candidates)"));
            }
        }
        _ => return Err(usage.into()),
    }
    Ok(())
}
