#!/usr/bin/env bash
# Runs the fuzz targets in fuzz/ (cargo-fuzz, libFuzzer) for SECONDS each
# (default 60) and fails if any input makes the code panic, hang or exceed
# the memory limit. scripts/test.sh runs a short smoke run; docs/testing.md
# has the figures of a long run.
#
#   scripts/fuzz.sh [SECONDS] [TARGET ...]
#
# cargo-fuzz needs nightly-only compiler flags (-Zsanitizer); on a stable
# toolchain RUSTC_BOOTSTRAP=1 lets the compiler accept them for this build
# only. The targets: filter_document (bytes -> the filter's document parser
# and compiler), filter_envelope (bytes -> the compressed pluginConfig's zlib
# stream, or its inflated document), filter_table (bytes -> the table
# encoding the filter reads in place), filter_request (bytes -> headers and route name through the
# filter's request and response path), resolver_yaml (text -> YAML ->
# parse, status, resolve and explain of every Gateway and route).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

seconds="${1:-60}"
shift || true
targets=("$@")
if (( ${#targets[@]} == 0 )); then
  targets=(filter_document filter_envelope filter_table filter_request resolver_yaml)
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
  say "installing cargo-fuzz (cargo install --locked cargo-fuzz)"
  cargo install --locked cargo-fuzz || die "cargo could not install cargo-fuzz"
fi

export RUSTC_BOOTSTRAP=1
cd "$ROOT/fuzz"

# Seed corpora from the project's own inputs, so the fuzzer starts from
# valid documents and manifests and mutates from there.
mkdir -p corpus/resolver_yaml corpus/filter_document corpus/filter_request
cp "$ROOT"/examples/shop/*.yaml "$ROOT"/tests/fixtures/cli/*.yaml corpus/resolver_yaml/ 2>/dev/null || true
# The peers' kinds seed it too (examples/peers).
for f in "$ROOT"/examples/peers/*/*.yaml; do
    cp "$f" "corpus/resolver_yaml/peers-$(basename "$(dirname "$f")").yaml"
done
"$ATTACHE_BIN" resolve -f "$ROOT/examples/shop" > corpus/filter_document/shop.json 2>/dev/null || true

say "building the fuzz targets"
cargo fuzz build -O

for target in "${targets[@]}"; do
  say "fuzzing $target for ${seconds}s"
  log="$ROOT/target/fuzz-$target.log"
  mkdir -p "$ROOT/target"
  if ! cargo fuzz run -O "$target" -- -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 >"$log" 2>&1; then
    tail -40 "$log"
    die "fuzz target $target failed; the input is in fuzz/artifacts/$target/"
  fi
  grep -E '^Done [0-9]+ runs' "$log" | sed "s/^/  $target: /"
done
