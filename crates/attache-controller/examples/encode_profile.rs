//! Where the encode of one Gateway's plugin goes (issue 30): each step of
//! `wasm_plugin` timed alone over `scripts/gen_distinct.py`'s objects, and
//! the deflate levels compared on the same table (time and size).
//!
//! cargo run --release -p attache-controller --example encode_profile -- IN.json [RUNS]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a measuring tool

use std::time::Instant;

use attache_contract::{envelope, table, DataPlaneDocument};
use attache_core::source::{Origin, SourceDoc};
use attache_core::topology::ObjectKey;
use attache_core::DataPlane;
use attache_render::wasmplugin::{
    size_problem, wasm_plugin, wasm_plugin_reusing, SealedPieces, WasmPluginOptions,
};
use base64::Engine;

/// Median milliseconds of `runs` calls of `f`.
fn time<T>(runs: usize, mut f: impl FnMut() -> T) -> f64 {
    let mut ms: Vec<f64> = (0..runs)
        .map(|_| {
            let started = Instant::now();
            std::hint::black_box(f());
            started.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    ms.sort_by(f64::total_cmp);
    ms[ms.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let input = args.next().expect("usage: encode_profile IN.json [RUNS]");
    let runs: usize = args.next().map_or(5, |a| a.parse().unwrap());
    let text = std::fs::read_to_string(&input).unwrap();
    let docs: Vec<SourceDoc> = text
        .split("\n---\n")
        .enumerate()
        .map(|(i, doc)| SourceDoc {
            origin: Origin {
                file: input.clone(),
                document: i + 1,
                item: None,
            },
            value: serde_json::from_str(doc).unwrap(),
        })
        .collect();
    let inputs = attache_core::parse_each(&docs);
    let gateway: ObjectKey = docs
        .iter()
        .find(|d| d.value["kind"] == "Gateway")
        .map(|d| ObjectKey {
            namespace: d.value["metadata"]["namespace"].as_str().unwrap().into(),
            name: d.value["metadata"]["name"].as_str().unwrap().into(),
        })
        .unwrap();
    let resolved = attache_core::resolve_for(&inputs, &gateway, DataPlane::Istio).unwrap();
    let document = &resolved.resolution.document;
    println!(
        "{gateway}: {} route entries; median of {runs} runs, ms",
        document.routes.len()
    );
    let options = WasmPluginOptions::default();
    let whole = time(runs, || {
        wasm_plugin(&resolved.resolution, &options).unwrap()
    });
    let plugin = wasm_plugin(&resolved.resolution, &options).unwrap();
    let encoded = DataPlaneDocument::encode(document);
    let json = serde_json::to_vec(&encoded).unwrap();
    let (bytes, cuts) = table::encode_with_cuts(&encoded);
    let sealed = envelope::seal_chunks(&bytes, &cuts);
    // The controller's case: the Gateway's last table's pieces kept, one
    // route's timeout changed (alternately two values: each write differs
    // from the last in one piece). The controller hands over its
    // resolution; here each run clones it, and the clone is timed too.
    let mut edited = resolved.resolution.clone();
    let middle = edited.document.routes.len() / 2;
    let mut pieces = SealedPieces::default();
    wasm_plugin_reusing(edited.clone(), &options, &mut pieces).unwrap();
    let mut turn = 0u64;
    let reusing = time(runs, || {
        turn += 1;
        edited.document.routes[middle].settings.timeouts = Some(attache_contract::Timeouts {
            request_ms: Some(20_000 + turn % 2),
            ..Default::default()
        });
        wasm_plugin_reusing(edited.clone(), &options, &mut pieces).unwrap()
    });
    println!("wasm_plugin (all of it)          {whole:8.1}");
    println!("wasm_plugin_reusing, one edit    {reusing:8.1}");
    println!(
        "  schema-2 encode                {:8.1}",
        time(runs, || DataPlaneDocument::encode(document))
    );
    println!(
        "  schema-2 JSON (size check)     {:8.1}  ({} bytes)",
        time(runs, || serde_json::to_vec(&encoded).unwrap()),
        json.len()
    );
    println!(
        "  table encode                   {:8.1}  ({} bytes, {} pieces)",
        time(runs, || table::encode_with_cuts(&encoded)),
        bytes.len(),
        cuts.len() + 1
    );
    println!(
        "  seal_chunks (level 9)          {:8.1}",
        time(runs, || envelope::seal_chunks(&bytes, &cuts))
    );
    println!(
        "  envelope to Value              {:8.1}",
        time(runs, || serde_json::to_value(&sealed).unwrap())
    );
    println!(
        "  size_problem (to_vec)          {:8.1}  ({} bytes of JSON)",
        time(runs, || size_problem(&plugin)),
        serde_json::to_vec(&plugin).unwrap().len()
    );
    let pieces: Vec<&[u8]> = cuts
        .iter()
        .chain([&bytes.len()])
        .scan(0, |start, &cut| {
            let piece = &bytes[*start..cut];
            *start = cut;
            Some(piece)
        })
        .filter(|p| !p.is_empty())
        .collect();
    for level in [1u8, 3, 6, 9] {
        let deflate = || -> Vec<Vec<u8>> {
            pieces
                .iter()
                .map(|p| miniz_oxide::deflate::compress_to_vec_zlib(p, level))
                .collect()
        };
        let ms = time(runs, deflate);
        let out = deflate();
        let deflated: usize = out.iter().map(Vec::len).sum();
        let b64 = time(runs, || {
            out.iter()
                .map(|d| base64::engine::general_purpose::STANDARD.encode(d))
                .collect::<Vec<_>>()
        });
        println!("  deflate level {level}                {ms:8.1}  ({deflated} bytes; base64 {b64:.1} ms, {} bytes)", deflated.div_ceil(3) * 4);
    }
}
