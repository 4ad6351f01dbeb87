//! How long the pure reconcile takes for one snapshot (release build):
//! read every object (as the watchers hand them over), resolve, build the
//! WasmPlugin (compressed when large), check its size.
//!
//! cargo run --release -p attache-controller --example reconcile_time -- IN.json [FORM [OUT]]
//!
//! FORM: auto (the default), inline or compressed (`--plugin-config`);
//! OUT: where to write the last WasmPlugin's pluginConfig as compact JSON
//! (for the filter's load_time example).
//! IN.json: objects as JSON separated by `---` lines (what the bench
//! generator `gen_distinct.py N` writes). Prints the read and reconcile
//! times and the size of each WasmPlugin it would apply.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a measuring tool

use std::collections::BTreeSet;
use std::time::Instant;

use attache_controller::kinds::named;
use attache_controller::reconcile::{reconcile, Config, Outcome};
use attache_controller::snapshot::{ReadCache, Snapshot};
use attache_render::wasmplugin::ConfigForm;

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: reconcile_time IN.json");
    let text = std::fs::read_to_string(&path).unwrap();
    // With the uid and resourceVersion the API server gives every object,
    // which the read cache keys on.
    let objects: Vec<serde_json::Value> = text
        .split("\n---\n")
        .enumerate()
        .map(|(i, doc)| {
            let mut o: serde_json::Value = serde_json::from_str(doc).unwrap();
            o["metadata"]["uid"] = format!("uid-{i}").into();
            o["metadata"]["resourceVersion"] = "1".into();
            o
        })
        .collect();
    let rows = || {
        objects
            .iter()
            .filter_map(|o| Some((named(o["kind"].as_str()?)?, o)))
    };
    let mut cache = ReadCache::default();
    let started = Instant::now();
    let snapshot = Snapshot::read(rows(), BTreeSet::new(), &mut cache);
    let read = started.elapsed();
    let form = match std::env::args().nth(2).as_deref() {
        None | Some("auto") => ConfigForm::Auto,
        Some("inline") => ConfigForm::Inline,
        Some("compressed") => ConfigForm::Compressed,
        Some(other) => panic!("FORM {other}: expected auto, inline or compressed"),
    };
    let mut config = Config::default();
    config.plugin.config_form = form;
    let started = Instant::now();
    let plan = reconcile(&config, &snapshot);
    let reconciled = started.elapsed();
    // The phases a round spends beyond the plan: assembling what each
    // object gave when read (the plan includes it), every policy's status,
    // and which targets reach each Gateway (both resolve each Gateway again).
    let started = Instant::now();
    let parsed = attache_core::assemble(snapshot.docs.iter().map(|d| &d.pieces));
    let parse = started.elapsed();
    drop(parsed);
    let started = Instant::now();
    let report = attache_core::policy_status(&plan.inputs);
    let status = started.elapsed();
    drop(report);
    let started = Instant::now();
    let reach = attache_controller::status::reach(&plan.inputs, plan.gateways.keys().cloned());
    let reached = started.elapsed();
    drop(reach);
    println!(
        "phases: parse {parse:?} (within reconcile), policy_status {status:?}, reach {reached:?}"
    );
    // The next round with the same objects: read from the cache.
    let started = Instant::now();
    let again = Snapshot::read(rows(), BTreeSet::new(), &mut cache);
    let reread = started.elapsed();
    drop(again);
    println!(
        "{} objects: read {read:?} (again, cached: {reread:?}), reconcile {reconciled:?}",
        objects.len()
    );
    for (gateway, outcome) in &plan.gateways {
        match outcome {
            Outcome::Apply(plugin) => {
                let config = serde_json::to_vec(&plugin["spec"]["pluginConfig"]).unwrap();
                println!(
                    "{gateway}: WasmPlugin {} bytes of JSON, pluginConfig {} bytes",
                    serde_json::to_vec(plugin).unwrap().len(),
                    config.len()
                );
                if let Some(out) = std::env::args().nth(3) {
                    std::fs::write(out, config).unwrap();
                }
            }
            other => println!("{gateway}: {other:?}"),
        }
    }
}
