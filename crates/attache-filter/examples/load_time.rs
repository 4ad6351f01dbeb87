//! Native timing of the filter's configuration load, split into the parse
//! and the compile, for the design A/Bs in bench/findings.md:
//!
//!     cargo run --release -p attache-filter --example load_time -- CONFIG [ROUNDS] [--write-table OUT]
//!
//! CONFIG is a plugin configuration as the filter receives it: the
//! data-plane JSON, the table, or either in the compressed envelope (e.g.
//! the `pluginConfig` of `attache render wasmplugin --plugin-config
//! compressed`). Prints the median of ROUNDS (default 15) of each step, in
//! ms: reading it into the table, the load in a fresh VM, and an update
//! in a VM that holds the previous configuration (one profile edited; one
//! route renamed). `--write-table` writes the sealed table. Native code
//! is not V8: the bench's configuration-load series measure the filter in
//! Envoy; this splits where the time goes.

use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use attache_contract::{envelope, table};
use attache_filter::config::CompiledConfig;
use attache_filter::document;

mod heap;
use heap::{mib, LIVE, PEAK};

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Times `f` over `rounds` rounds: the median in ms, and the heap peak
/// beyond what was live before (MiB) of the last round.
fn timed<T>(rounds: usize, mut f: impl FnMut() -> T) -> (f64, f64, T) {
    let mut times = Vec::new();
    let mut peak = 0;
    let mut round = || {
        let before = LIVE.load(Relaxed);
        PEAK.store(before, Relaxed);
        let started = Instant::now();
        let out = f();
        times.push(started.elapsed().as_secs_f64() * 1e3);
        peak = PEAK.load(Relaxed) - before;
        out
    };
    for _ in 1..rounds.max(1) {
        drop(round());
    }
    let out = round();
    (median(times), mib(peak), out)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .ok_or("usage: load_time CONFIG [ROUNDS] [--write-table OUT.json]")?;
    let rounds: usize = args.next().map_or(Ok(15), |r| r.parse())?;
    let write = args
        .next()
        .filter(|a| a == "--write-table")
        .and(args.next());
    let bytes = std::fs::read(&path)?;
    println!(
        "{path}: {} bytes (medians of {rounds} rounds; heap peaks beyond the input)",
        bytes.len()
    );

    // The configuration as the filter takes it: envelope opened, JSON (if
    // it is JSON) encoded into the table.
    let (ms, peak, table) = timed(rounds, || document::table(&bytes));
    let table = table?;
    println!(
        "  to table: {ms:.2} ms, peak {peak:.2} MiB; table {} bytes",
        table.len()
    );
    let (ms, peak, config) = timed(rounds, || CompiledConfig::load(table.clone(), None));
    let config = config?;
    println!("  load (fresh VM): {ms:.2} ms, peak {peak:.2} MiB");
    let (ms, peak, all) = timed(rounds, || CompiledConfig::from_bytes(&bytes));
    drop(all?);
    println!("  whole load from the configuration bytes: {ms:.2} ms, peak {peak:.2} MiB");
    drop(config);
    let copy = table.clone();
    let before = LIVE.load(Relaxed) - copy.len();
    let config = CompiledConfig::load(copy, None)?;
    let kept = LIVE.load(Relaxed).saturating_sub(before);
    println!(
        "  kept by one configuration (nothing compiled yet): {:.2} MiB",
        mib(kept)
    );

    // The fallback table, built by the first request that needs it.
    let (ms, peak, n) = timed(rounds, || {
        let fresh = CompiledConfig::load(table.clone(), None).map(|c| (c.fallback().len(), c));
        fresh.map(|(n, _)| n)
    });
    println!(
        "  fallback table on first use ({} candidates; includes a fresh load): {ms:.2} ms, peak {peak:.2} MiB",
        n?
    );

    // One edit: the first profile's request timeout changed, re-encoded as
    // the generator would, loaded by a VM that holds the previous one.
    let mut doc = table::decode(&table).map_err(|e| format!("{e}"))?;
    if let Some(p) = doc.profiles.first_mut() {
        let t = p.timeouts.get_or_insert_with(Default::default);
        t.request_ms = Some(t.request_ms.unwrap_or(0) + 1);
    }
    let edited = table::encode(&doc);
    let (ms, peak, next) = timed(rounds, || {
        CompiledConfig::load(edited.clone(), Some(&config))
    });
    drop(next?);
    println!("  update, one profile edited, previous in the VM: {ms:.2} ms, peak {peak:.2} MiB");
    if let Some(first) = doc.groups.first_mut().and_then(|g| g.routes.first_mut()) {
        first.name.push('x');
    }
    let renamed = table::encode(&doc);
    let (ms, peak, next) = timed(rounds, || {
        CompiledConfig::load(renamed.clone(), Some(&config))
    });
    drop(next?);
    println!("  update, one route renamed (entries re-indexed): {ms:.2} ms, peak {peak:.2} MiB");

    // The table as `attache render` delivers it: sealed in pieces cut where
    // its content is (envelope::seal_chunks), and an update of it in a VM
    // that holds the previous one (only the changed piece is inflated).
    let sealed = |t: &[u8]| -> Result<Vec<u8>, serde_json::Error> {
        let doc = table::decode(t).unwrap_or_else(|_| doc.clone());
        let (bytes, cuts) = table::encode_with_cuts(&doc);
        serde_json::to_vec(&envelope::seal_chunks(&bytes, &cuts))
    };
    let (first, next) = (sealed(&table)?, sealed(&edited)?);
    let (ms, peak, c) = timed(rounds, || CompiledConfig::from_owned_bytes(first.clone()));
    let config = c?;
    println!(
        "  the sealed table ({} bytes): {ms:.2} ms, peak {peak:.2} MiB",
        first.len()
    );
    let (ms, peak, c) = timed(rounds, || {
        CompiledConfig::from_owned_bytes_after(next.clone(), Some(&config))
    });
    drop(c?);
    println!(
        "  update through the sealed table, one profile edited, previous in the VM: {ms:.2} ms, peak {peak:.2} MiB"
    );
    if let Some(out) = write {
        std::fs::write(&out, &first)?;
        println!("  wrote {out}");
    }
    Ok(())
}
