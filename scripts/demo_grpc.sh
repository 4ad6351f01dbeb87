#!/usr/bin/env bash
# The demo's second part: examples/grpc, a GRPCRoute with policies, served by
# Envoy with the attache filter in clear text (h2c) and over TLS, to a real
# gRPC server (grpcio; tests/e2e/grpc_peer.py), until Ctrl-C.
#
#   scripts/demo.sh --grpc           set up, start, print grpc calls to try
#   scripts/demo.sh --grpc --check   the same, then make those calls, assert
#                                    what they show, and exit
#
# The certificate of the `grpcs` listener is made here with openssl and put in
# a kubernetes.io/tls Secret manifest (infra/grpc-tls, $RUN/input, 0600) that
# `attache watch --xds-dir` reads beside the example; Envoy gets it over SDS.
# Ports: DEMO_GRPC_PORT (50051, listener grpc), DEMO_GRPCS_PORT (50443,
# listener grpcs), DEMO_GRPC_ADMIN_PORT (9911), DEMO_GRPC_BACKEND_PORT (50061).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CHECK=false
[[ "${1:-}" == "--check" ]] && CHECK=true
GRPC_PORT="${DEMO_GRPC_PORT:-50051}"
GRPCS_PORT="${DEMO_GRPCS_PORT:-50443}"
ADMIN_PORT="${DEMO_GRPC_ADMIN_PORT:-9911}"
BACKEND_PORT="${DEMO_GRPC_BACKEND_PORT:-50061}"
EXAMPLE="$ROOT/examples/grpc"
RUN="$ROOT/.run/demo-grpc"
PEER="$ROOT/tests/e2e/grpc_peer.py"
NAME=grpc.example.com

command -v openssl >/dev/null || die "openssl is not installed (e.g. apt-get install openssl)"
bash "$ROOT/scripts/setup.sh"

rm -rf "$RUN"
mkdir -p "$RUN/xds"
(umask 077 && mkdir -p "$RUN/tls" "$RUN/input")
openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=$NAME" \
  -addext "subjectAltName=DNS:$NAME" -keyout "$RUN/tls/key.pem" -out "$RUN/tls/crt.pem" 2>/dev/null \
  || die "openssl could not make the demo certificate"
(
  umask 077
  printf 'apiVersion: v1\nkind: Secret\nmetadata: {name: grpc-tls, namespace: infra}\ntype: kubernetes.io/tls\nstringData:\n'
  printf '  tls.crt: |\n'; sed 's/^/    /' "$RUN/tls/crt.pem"
  printf '  tls.key: |\n'; sed 's/^/    /' "$RUN/tls/key.pem"
) >"$RUN/input/grpc-tls.yaml"

PIDS=()
stop_all() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap stop_all EXIT
trap 'exit 130' INT TERM

# --- the gRPC server: shop.v1.Cart's methods Echo, Flaky, Count --------------
"$VENV/bin/python" "$PEER" serve "$RUN/backend.port" shop.v1.Cart "$BACKEND_PORT" 2>"$RUN/backend.log" &
PIDS+=($!)
for ((i = 0; i < 100; i++)); do [[ -s "$RUN/backend.port" ]] && break; sleep 0.1; done
[[ -s "$RUN/backend.port" ]] || { cat "$RUN/backend.log" >&2; die "the gRPC server did not start"; }

# --- the generator: attache watch --xds-dir over the example and the Secret --
"$ATTACHE_BIN" watch -f "$EXAMPLE" -f "$RUN/input" --gateway infra/grpc-edge \
  --out "$RUN/attache.json" --ecds "$RUN/xds/ecds/attache-ecds.json" --wasm "$WASM" \
  --xds-dir "$RUN/xds" --backend "shop/cart=127.0.0.1:$BACKEND_PORT" \
  --listener-port "grpc=$GRPC_PORT" --listener-port "grpcs=$GRPCS_PORT" \
  --envoy-admin "127.0.0.1:$ADMIN_PORT" >"$RUN/watch.out" 2>"$RUN/watch.log" &
PIDS+=($!)
for ((i = 0; i < 300; i++)); do
  grep -qs '^wrote generation' "$RUN/watch.out" && break
  kill -0 "${PIDS[-1]}" 2>/dev/null || { tail -20 "$RUN/watch.log" >&2; die "attache watch ended"; }
  sleep 0.1
done
grep -qs '^wrote generation' "$RUN/watch.out" || { tail -20 "$RUN/watch.log" >&2; die "attache watch wrote nothing"; }
"$ATTACHE_BIN" render envoy -f "$EXAMPLE" -f "$RUN/input" --gateway infra/grpc-edge --xds-dir "$RUN/xds" \
  --admin-port "$ADMIN_PORT" -o "$RUN/envoy.yaml" 2>"$RUN/render.log" \
  || { cat "$RUN/render.log" >&2; die "attache render envoy failed"; }

# --- Envoy -------------------------------------------------------------------
"$ENVOY_BIN" -c "$RUN/envoy.yaml" --disable-hot-restart --base-id 11 --log-level warn >"$RUN/envoy.log" 2>&1 &
PIDS+=($!)
for ((i = 0; i < 600; i++)); do
  curl -fs -o /dev/null "http://127.0.0.1:$ADMIN_PORT/ready" && break
  kill -0 "${PIDS[-1]}" 2>/dev/null || { tail -20 "$RUN/envoy.log" >&2; die "Envoy exited"; }
  sleep 0.1
done

# --- what to try ---------------------------------------------------------------
call() { "$VENV/bin/python" "$PEER" call "$@"; }
CLEAR=(127.0.0.1:"$GRPC_PORT")
CLEAR_ARGS=(--name "$NAME")
TLS=(127.0.0.1:"$GRPCS_PORT")
TLS_ARGS=(--ca "$RUN/tls/crt.pem" --name "$NAME")
LINES=(
  "call ${CLEAR[*]} /shop.v1.Cart/Echo '{}' ${CLEAR_ARGS[*]}     # h2c: x-cart-api: v1 from the rule, 5s deadline"
  "call ${TLS[*]} /shop.v1.Cart/Echo '{}' ${TLS_ARGS[*]}     # the same over TLS (grpcs)"
  "call ${CLEAR[*]} /shop.v1.Cart/Echo '{\"sleepMs\": 6000}' ${CLEAR_ARGS[*]}     # DEADLINE_EXCEEDED at the policy's 5s"
  "call ${TLS[*]} /shop.v1.Cart/Flaky '{\"key\": \"k\", \"failures\": 2}' ${TLS_ARGS[*]}     # UNAVAILABLE twice, retried: OK on attempt 3"
)
if ! $CHECK; then
  printf 'gRPC through Envoy (python = %s %s):\n' "$VENV/bin/python" "$PEER"
  printf '  %s\n' "${LINES[@]}"
  printf '\nEnvoy on :%s (grpc, h2c) and :%s (grpcs, TLS for %s), admin :%s; files in %s. Ctrl-C to stop.\n' \
    "$GRPC_PORT" "$GRPCS_PORT" "$NAME" "$ADMIN_PORT" "$RUN"
  wait
  exit 0
fi

fail=0
expect() { # what, JSON line, python condition on j
  if "$VENV/bin/python" -c "import json,sys; j=json.loads(sys.argv[1]); sys.exit(0 if ($3) else 1)" "$2"; then
    printf 'ok   %s\n' "$1"
  else
    printf 'FAIL %s: %s\n' "$1" "$2"; fail=1
  fi
}
expect "h2c call carries the rule's header" "$(call "${CLEAR[@]}" /shop.v1.Cart/Echo '{}' "${CLEAR_ARGS[@]}")" \
  'j["code"] == "OK" and j["response"]["metadata"].get("x-cart-api") == "v1"'
expect "TLS call carries the rule's header" "$(call "${TLS[@]}" /shop.v1.Cart/Echo '{}' "${TLS_ARGS[@]}")" \
  'j["code"] == "OK" and j["response"]["metadata"].get("x-cart-api") == "v1"'
expect "6s call ends DEADLINE_EXCEEDED at 5s" "$(call "${CLEAR[@]}" /shop.v1.Cart/Echo '{"sleepMs": 6000}' "${CLEAR_ARGS[@]}")" \
  'j["code"] == "DEADLINE_EXCEEDED" and 4980 <= j["elapsedMs"] < 6000'
expect "UNAVAILABLE retried to OK" "$(call "${TLS[@]}" /shop.v1.Cart/Flaky '{"key": "demo", "failures": 2}' "${TLS_ARGS[@]}")" \
  'j["code"] == "OK" and j["response"]["attempt"] == 3'
exit $fail
