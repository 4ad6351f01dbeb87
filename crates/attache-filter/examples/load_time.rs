//! Native timing of the filter's configuration load, split into the parse
//! and the compile, for the design A/Bs in bench/findings.md:
//!
//!     cargo run --release -p attache-filter --example load_time -- DOC.json [ROUNDS]
//!
//! DOC.json is a plugin configuration in the data-plane encoding (the only
//! one the filter reads), e.g. the `configuration` string of a file
//! `attache render ecds` wrote.
//! Prints the median of ROUNDS (default 15) of each step, in ms. Native code
//! is not V8: the bench's configuration-load series measure the filter in
//! Envoy; this splits where the time goes.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Instant;

use attache_filter::config::CompiledConfig;
use attache_filter::document;

/// Counts live heap bytes and their high-water mark: the Wasm VM's linear
/// memory grows to the peak of a load and never shrinks, so the peak is
/// what a VM keeps.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Relaxed) + layout.size();
        PEAK.fetch_max(live, Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: load_time DOC.json [ROUNDS]")?;
    let rounds: usize = args.next().map_or(Ok(15), |r| r.parse())?;
    let bytes = std::fs::read(&path)?;
    let (mut parse, mut compile) = (Vec::new(), Vec::new());
    let (base, mut peak, mut kept, mut owned_peak) = (LIVE.load(Relaxed), 0, 0, 0);
    for _ in 0..rounds.max(1) {
        PEAK.store(LIVE.load(Relaxed), Relaxed);
        let started = Instant::now();
        let parsed = document::parse(&bytes)?;
        parse.push(started.elapsed().as_secs_f64() * 1e3);
        let started = Instant::now();
        // Takes the document: each route's parsed part is freed once compiled.
        let config = CompiledConfig::compile_data_plane(parsed)?;
        compile.push(started.elapsed().as_secs_f64() * 1e3);
        kept = LIVE.load(Relaxed) - base;
        peak = PEAK.load(Relaxed) - base;
        drop(config);
        // The filter's own path: it hands over the bytes, dropped once parsed.
        let copy = bytes.clone();
        PEAK.store(LIVE.load(Relaxed), Relaxed);
        let before = LIVE.load(Relaxed) - copy.len();
        drop(CompiledConfig::from_owned_bytes(copy)?);
        owned_peak = PEAK.load(Relaxed) - before;
    }
    println!(
        "{path}: parse {:.1} ms, compile {:.1} ms (medians of {} rounds); \
         heap beyond the input: peak {:.2} MiB, kept after the parse is dropped {:.2} MiB; \
         the filter's path (bytes handed over, dropped once parsed): peak {:.2} MiB with the input",
        median(parse),
        median(compile),
        rounds.max(1),
        mib(peak),
        mib(kept),
        mib(owned_peak)
    );
    Ok(())
}
