#!/usr/bin/env bash
# The demo: the example policies (examples/shop) enforced by Envoy with the
# attache filter, on 127.0.0.1:8080, until Ctrl-C.
#
#   scripts/demo.sh            set up, start, print curl lines to try, keep running
#   scripts/demo.sh --check    the same, then run those curl lines, assert what
#                              they show, and exit (scripts/test.sh runs this)
#   scripts/demo.sh --dynamic-module [--check]   the same with the filter as
#                              an Envoy dynamic module (.so) instead of the .wasm
#   scripts/demo.sh --https [--check]   the HTTPS listener example instead
#                              (scripts/demo_https.sh)
#   scripts/demo.sh --grpc [--check]   examples/grpc instead: a GRPCRoute over
#                              h2c and an HTTPS listener (scripts/demo_grpc.sh)
#
# Ports: DEMO_PORT (8080, the Gateway's `http` listener), DEMO_OPS_PORT (8081,
# its `admin` listener), DEMO_ADMIN_PORT (9901, Envoy's admin interface),
# DEMO_BACKEND_PORT (9000, the test backend).
# Other manifests: DEMO_EXAMPLE (dir), DEMO_GATEWAY (NS/NAME),
# DEMO_LISTENERS ("LISTENER=PORT ..."), DEMO_BACKENDS ("NS/NAME ..." sent to
# the test backend; default `*`, every backend).
# `attache watch --xds-dir` keeps running too: edit examples/shop/*.yaml
# (policies, routes, matches, backends) and the next request follows them,
# with no Envoy restart: Envoy reads listeners, routes, clusters and the
# filter's configuration from files watch rewrites (docs/envoy.md,
# "File-based xDS").
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CHECK=false
# The filter as the .wasm (default) or, with --dynamic-module, as the Envoy
# 1.40 dynamic module libattache_module.so (docs/envoy.md): the same flags
# for watch, which writes the ECDS file and the listeners.
FILTER=wasm
if [[ "${1:-}" == --dynamic-module ]]; then
  FILTER=dynamic-module
  shift
fi
case "${1:-}" in
  --check) CHECK=true ;;
  # The HTTPS listener example (examples/https): scripts/demo_https.sh.
  --https) shift; exec bash "$ROOT/scripts/demo_https.sh" "$@" ;;
  # examples/grpc, a GRPCRoute over h2c and TLS: scripts/demo_grpc.sh.
  --grpc) shift; exec bash "$ROOT/scripts/demo_grpc.sh" "$@" ;;
  "") ;;
  *) die "usage: scripts/demo.sh [--dynamic-module] [--check] | --https [--check] | --grpc [--check]" ;;
esac

PORT="${DEMO_PORT:-8080}"
OPS_PORT="${DEMO_OPS_PORT:-8081}"
ADMIN_PORT="${DEMO_ADMIN_PORT:-9901}"
BACKEND_PORT="${DEMO_BACKEND_PORT:-9000}"
EXAMPLE="${DEMO_EXAMPLE:-$ROOT/examples/shop}"
GATEWAY="${DEMO_GATEWAY:-infra/edge}"
# Every Service the example's routes send to (NS/NAME, space-separated) that
# has no address in the manifests; the test backend answers them all.
read -r -a BACKENDS <<<"${DEMO_BACKENDS:-*}"
read -r -a LISTENERS <<<"${DEMO_LISTENERS:-http=$PORT admin=$OPS_PORT}"
RUN="$ROOT/.run/demo"

command -v curl >/dev/null || die "curl is not installed (e.g. apt-get install curl)"
bash "$ROOT/scripts/setup.sh"

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for port in "${LISTENERS[@]#*=}" "$ADMIN_PORT" "$BACKEND_PORT"; do
  if port_busy "$port"; then
    die "127.0.0.1:$port is already in use; stop what uses it or choose other ports with DEMO_PORT, DEMO_ADMIN_PORT, DEMO_BACKEND_PORT"
  fi
done

rm -rf "$RUN"
# The files Envoy reads live under $RUN/xds, each in a directory of its own
# (ecds/, lds/, cds/, rds/LISTENER/): Envoy re-reads a watched file whenever
# anything is moved into its directory, so logs stay out of there.
mkdir -p "$RUN/xds"
PIDS=()
stop_all() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap stop_all EXIT
trap 'exit 130' INT TERM

# --- the test backend --------------------------------------------------------
"$TESTBACKEND_BIN" --listen "127.0.0.1:$BACKEND_PORT" >"$RUN/backend.out" 2>"$RUN/backend.log" &
PIDS+=($!)

# --- the generator, watching the example ------------------------------------
layout_args=()
for backend in "${BACKENDS[@]}"; do layout_args+=(--backend "$backend=127.0.0.1:$BACKEND_PORT"); done
for listener in "${LISTENERS[@]}"; do layout_args+=(--listener-port "$listener"); done
# render envoy --xds-dir takes the module's pair (its bootstrap names no
# filter) but not --wasm.
case "$FILTER" in
  wasm) filter_args=(--wasm "$WASM"); render_args=() ;;
  dynamic-module) filter_args=(--filter dynamic-module --module "$MODULE"); render_args=("${filter_args[@]}") ;;
esac
"$ATTACHE_BIN" watch -f "$EXAMPLE" --gateway "$GATEWAY" \
  --out "$RUN/attache.json" --ecds "$RUN/xds/ecds/attache-ecds.json" "${filter_args[@]}" \
  --xds-dir "$RUN/xds" "${layout_args[@]}" --envoy-admin "127.0.0.1:$ADMIN_PORT" \
  >"$RUN/watch.out" 2>"$RUN/watch.log" &
PIDS+=($!)

wait_for() { # what, pid that must stay alive, its log, seconds, command...
  local what=$1 pid=$2 log=$3 seconds=$4; shift 4
  for ((i = 0; i < seconds * 10; i++)); do
    if "$@"; then return 0; fi
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -20 "$log" >&2
      die "waiting for $what: the process ended (log above, all logs in $RUN)"
    fi
    sleep 0.1
  done
  tail -20 "$log" >&2
  die "$what did not happen within ${seconds}s (log above, all logs in $RUN)"
}
wait_for "attache watch writing its first generation" "${PIDS[-1]}" "$RUN/watch.log" 30 \
  grep -qs '^wrote generation' "$RUN/watch.out"

"$ATTACHE_BIN" render envoy -f "$EXAMPLE" --gateway "$GATEWAY" --xds-dir "$RUN/xds" \
  --admin-port "$ADMIN_PORT" -o "$RUN/envoy.yaml" "${render_args[@]}" 2>"$RUN/render.log" \
  || { cat "$RUN/render.log" >&2; die "attache render envoy failed"; }

# --- Envoy -------------------------------------------------------------------
"$ENVOY_BIN" -c "$RUN/envoy.yaml" --disable-hot-restart --log-level warn >"$RUN/envoy.log" 2>&1 &
PIDS+=($!)
wait_for "Envoy becoming ready" "${PIDS[-1]}" "$RUN/envoy.log" 60 \
  curl -fs -o /dev/null "http://127.0.0.1:$ADMIN_PORT/ready"

# --- what to try -------------------------------------------------------------
probes() { python3 "$ROOT/scripts/demo_probes.py" "$1" "$RUN/attache.json" "$PORT" "$BACKEND_PORT"; }

if $CHECK; then
  command -v python3 >/dev/null || die "--check needs python3"
  probes check
  exit $?
fi

if command -v python3 >/dev/null; then
  probes print
else
  printf 'Try: curl -s http://127.0.0.1:%s/   (python3 would print lines for every policy)\n' "$PORT"
fi
printf '\nEnvoy on http://127.0.0.1:%s (admin :%s), test backend on :%s; logs and rendered files in %s\n' \
  "$PORT" "$ADMIN_PORT" "$BACKEND_PORT" "$RUN"
printf 'Edit %s/*.yaml: attache watch re-resolves and Envoy reloads routes, clusters and policies in place. Ctrl-C to stop.\n' "$EXAMPLE"
wait
