//! Native timing of the filter's configuration load, split into the parse
//! and the compile, for the design A/Bs in bench/findings.md:
//!
//!     cargo run --release -p attache-filter --example load_time -- DOC.json [ROUNDS]
//!
//! DOC.json is a plugin configuration (schema 1 or the data-plane encoding),
//! e.g. the `configuration` string of a file `attache render ecds` wrote.
//! Prints the median of ROUNDS (default 15) of each step, in ms. Native code
//! is not V8: the bench's configuration-load series measure the filter in
//! Envoy; this splits where the time goes.

use std::time::Instant;

use attache_filter::config::CompiledConfig;
use attache_filter::document::{parse_any, Parsed};

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
    for _ in 0..rounds.max(1) {
        let started = Instant::now();
        let parsed = parse_any(&bytes)?;
        parse.push(started.elapsed().as_secs_f64() * 1e3);
        let started = Instant::now();
        let config = match &parsed {
            Parsed::DataPlane(doc) => CompiledConfig::compile_data_plane(doc)?,
            Parsed::Resolved(doc) => CompiledConfig::compile(doc)?,
        };
        compile.push(started.elapsed().as_secs_f64() * 1e3);
        drop((config, parsed));
    }
    println!(
        "{path}: parse {:.1} ms, compile {:.1} ms (medians of {} rounds)",
        median(parse),
        median(compile),
        rounds.max(1)
    );
    Ok(())
}
