# Shared by the project's scripts (sourced, not run): where things live.
# Every path honours CARGO_TARGET_DIR and ENVOY_BIN when they are set.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

ENVOY_VERSION="1.40.0"
# grpcio (PyPI) for the gRPC end-to-end tests (tests/e2e/grpc.rs).
GRPCIO_VERSION="1.85.1"
# The benchmark report's pictures (bench/make_report.py, bench/test_figures.py):
# pinned, because the committed SVGs must be the bytes this version draws.
MATPLOTLIB_VERSION="3.11.2"
# PyYAML (PyPI) for the benchmark harness and its unit tests.
PYYAML_VERSION="6.0.3"
VENV="$ROOT/.venv"

case "${CARGO_TARGET_DIR:-}" in
  "") TARGET_DIR="$ROOT/target" ;;
  /*) TARGET_DIR="$CARGO_TARGET_DIR" ;;
  *) TARGET_DIR="$ROOT/$CARGO_TARGET_DIR" ;;
esac

ENVOY_BIN="${ENVOY_BIN:-$VENV/bin/envoy}"
ATTACHE_BIN="$TARGET_DIR/release/attache"
TESTBACKEND_BIN="$TARGET_DIR/release/attache-testbackend"
WASM="$TARGET_DIR/wasm32-wasip1/release/attache_filter.wasm"
# The same filter as an Envoy 1.40 dynamic module (crates/attache-module).
MODULE="$TARGET_DIR/release/libattache_module.so"
export ENVOY_BIN ATTACHE_BIN TESTBACKEND_BIN WASM MODULE

say() { printf '==> %s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }
