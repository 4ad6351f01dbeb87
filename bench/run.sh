#!/usr/bin/env bash
# The load benchmark (issue 5): builds the filters and the CLI, then runs bench/bench.py.
#
#   bench/run.sh            full run; writes docs/benchmarks.json, then docs/benchmarks.md and
#                           its pictures (docs/benchmarks/*.svg) from the results (bench/make_report.py)
#   bench/run.sh --quick    smoke run (1 round, 1 s, fewer variants); writes under .run/bench-quick/
#   bench/run.sh --profile  cost of each host call (probe filters); writes bench/results/profile.*
#   bench/run.sh --update   only the update runs (issue 31: steady load at a fixed rate,
#                           policy edits vs native RDS edits); writes docs/benchmarks-update.*
#                           (the full run does them too, after the load benchmark)
#   UPDATE_ARGS="--rounds 1 --seconds 5 --routes 1000" bench/run.sh --update   quicker
#   bench/run.sh --variants empty-wasm attache-name --rounds 3    any bench.py option
#
# Envoy: $ENVOY_BIN if set; otherwise scripts/setup.sh (if present) installs it into .venv.
# Honours CARGO_TARGET_DIR. Needs hey, taskset, PyYAML and 2 CPUs (Envoy on CPU 0, load on CPU 1).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
case "${CARGO_TARGET_DIR:-}" in
    "") target_dir=$root/target ;;
    /*) target_dir=$CARGO_TARGET_DIR ;;
    *) target_dir=$root/$CARGO_TARGET_DIR ;;
esac

for tool in hey taskset python3 cargo; do
    command -v "$tool" >/dev/null || { echo "bench: $tool is not installed" >&2; exit 1; }
done
# The rendered-route-table variants read `attache render envoy`'s YAML bootstrap.
python3 -c "import yaml" 2>/dev/null || { echo "bench: PyYAML is not installed (apt-get install -y python3-yaml)" >&2; exit 1; }

if [[ -x scripts/setup.sh ]]; then
    # Installs Envoy into .venv (or checks $ENVOY_BIN) and builds the CLI and the filter.
    scripts/setup.sh >&2
else
    cargo build --release --target wasm32-wasip1 -p attache-filter >&2
    cargo build --release -p attache --bin attache -p attache-module >&2
fi
envoy=${ENVOY_BIN:-$root/.venv/bin/envoy}
if [[ ! -x $envoy ]]; then
    echo "bench: no Envoy at $envoy; run scripts/setup.sh or set ENVOY_BIN" >&2
    exit 1
fi
cargo build --release --target wasm32-wasip1 -p bench-empty-filter --lib --example probe --example raw_empty --example raw_ctx >&2
# The dynamic module's floor (variant empty-module): native, beside the module.
cargo build --release -p bench-empty-filter --example empty_module >&2
# The filter at other opt-levels, for the opt-level A/B (Cargo profiles wasm-s/o2/o3;
# variants attache-name-s/o2/o3), built as scripts/setup.sh builds the shipped one:
# `cargo rustc --crate-type cdylib`, without which Cargo skips LTO (the crate is also an rlib).
builds=()
update_only=false
for arg in "$@"; do [[ $arg == --update ]] && update_only=true; done
for build in s o2 o3; do
    $update_only && break
    cargo rustc --profile "wasm-$build" --target wasm32-wasip1 -p attache-filter --crate-type cdylib >&2
    builds+=(--attache-wasm-build "$build=$target_dir/wasm32-wasip1/wasm-$build/attache_filter.wasm")
done

wasm_dir=$target_dir/wasm32-wasip1/release
mode=full
for arg in "$@"; do
    case $arg in
        --quick) mode=quick ;;
        --profile) mode=profile ;;
        --update) mode=update ;;
    esac
done
if [[ $mode == quick ]]; then
    work=$root/.run/bench-quick
    out=(--out-md "$work/benchmarks.md" --out-json "$work/benchmarks.json")
elif [[ $mode == profile ]]; then
    work=$root/.run/bench-profile
    mkdir -p bench/results
    out=(--out-md bench/results/profile.md --out-json bench/results/profile.json)
else
    work=$root/.run/bench
    out=(--out-md docs/benchmarks.md --out-json docs/benchmarks.json)
fi
mkdir -p "$work"

# The update runs (bench/update_bench.py): their own Envoys, after the load benchmark.
update() {
    # shellcheck disable=SC2086
    python3 bench/update_bench.py --envoy "$envoy" --attache "$target_dir/release/attache" \
        --wasm "$wasm_dir/attache_filter.wasm" --floor-wasm "$wasm_dir/examples/probe.wasm" \
        --work "$root/.run/bench-update" \
        --command "bench/run.sh${*:+ $*}" \
        --out-md docs/benchmarks-update.md --out-json docs/benchmarks-update.json ${UPDATE_ARGS:-}
}
# docs/benchmarks.md and its pictures (docs/benchmarks/*.svg) from the results files
# alone (bench/make_report.py; matplotlib from scripts/setup.sh's venv).
report() {
    "$root/.venv/bin/python" bench/make_report.py
}
if [[ $mode == update ]]; then
    update "$@"
    report
    exit
fi

args=()
for arg in "$@"; do [[ $arg == --update ]] || args+=("$arg"); done
python3 bench/bench.py \
    --envoy "$envoy" \
    --empty-wasm "$wasm_dir/bench_empty_filter.wasm" \
    --probe-wasm "$wasm_dir/examples/probe.wasm" \
    --empty-raw-wasm "$wasm_dir/examples/raw_empty.wasm" \
    --empty-raw-ctx-wasm "$wasm_dir/examples/raw_ctx.wasm" \
    "${builds[@]}" \
    --attache-wasm "$wasm_dir/attache_filter.wasm" \
    --attache-module "$target_dir/release/libattache_module.so" \
    --empty-module "$target_dir/release/examples/libempty_module.so" \
    --attache "$target_dir/release/attache" \
    --work "$work" \
    --command "bench/run.sh${*:+ $*}" \
    "${out[@]}" ${args[@]+"${args[@]}"}
if [[ $mode == full ]]; then
    update "$@"
    report
fi
