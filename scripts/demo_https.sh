#!/usr/bin/env bash
# The demo's HTTPS part: examples/https (an HTTPS listener for
# shop.example.com beside a plain one, a route and its policy) served by
# Envoy with the attache filter in the file-based layout, its certificate
# through SDS, until Ctrl-C (docs/envoy.md, "HTTPS listeners").
#
#   scripts/demo.sh --https           set up, start, print curl lines to try
#   scripts/demo.sh --https --check   the same, then run them, assert what
#                                     they show (a rotation included), and exit
#
# The certificate is made here with openssl (examples/https/make-secret.sh)
# into a copy of the example under $RUN; its key never leaves $RUN (0600).
# Ports: DEMO_HTTPS_PORT (8443, listener https), DEMO_HTTPS_HTTP_PORT (8082,
# listener http), DEMO_HTTPS_ADMIN_PORT (9902), DEMO_HTTPS_BACKEND_PORT (9003).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CHECK=false
[[ "${1:-}" == "--check" ]] && CHECK=true
HTTPS_PORT="${DEMO_HTTPS_PORT:-8443}"
HTTP_PORT="${DEMO_HTTPS_HTTP_PORT:-8082}"
ADMIN_PORT="${DEMO_HTTPS_ADMIN_PORT:-9902}"
BACKEND_PORT="${DEMO_HTTPS_BACKEND_PORT:-9003}"
RUN="$ROOT/.run/demo-https"
HOST=shop.example.com

command -v openssl >/dev/null || die "openssl is not installed (e.g. apt-get install openssl)"
command -v curl >/dev/null || die "curl is not installed (e.g. apt-get install curl)"
bash "$ROOT/scripts/setup.sh"

rm -rf "$RUN"
(umask 077 && mkdir -p "$RUN/input" "$RUN/xds")
cp "$ROOT"/examples/https/*.yaml "$RUN/input/"
bash "$ROOT/examples/https/make-secret.sh" "$RUN/input" >/dev/null

PIDS=()
stop_all() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap stop_all EXIT
trap 'exit 130' INT TERM

"$TESTBACKEND_BIN" --listen "127.0.0.1:$BACKEND_PORT" >"$RUN/backend.out" 2>"$RUN/backend.log" &
PIDS+=($!)

"$ATTACHE_BIN" watch -f "$RUN/input" --gateway infra/edge \
  --out "$RUN/attache.json" --ecds "$RUN/xds/ecds/attache-ecds.json" --wasm "$WASM" \
  --xds-dir "$RUN/xds" --backend "*=127.0.0.1:$BACKEND_PORT" \
  --listener-port "https=$HTTPS_PORT" --listener-port "http=$HTTP_PORT" \
  --envoy-admin "127.0.0.1:$ADMIN_PORT" >"$RUN/watch.out" 2>"$RUN/watch.log" &
PIDS+=($!)
for ((i = 0; i < 300; i++)); do grep -qs '^wrote generation' "$RUN/watch.out" && break; sleep 0.1; done
grep -qs '^wrote generation' "$RUN/watch.out" || { tail -20 "$RUN/watch.log" >&2; die "attache watch wrote nothing"; }

"$ATTACHE_BIN" render envoy -f "$RUN/input" --gateway infra/edge --xds-dir "$RUN/xds" \
  --admin-port "$ADMIN_PORT" -o "$RUN/envoy.yaml" 2>"$RUN/render.log" \
  || { cat "$RUN/render.log" >&2; die "attache render envoy failed"; }
"$ENVOY_BIN" -c "$RUN/envoy.yaml" --disable-hot-restart --base-id 12 --log-level warn >"$RUN/envoy.log" 2>&1 &
PIDS+=($!)
for ((i = 0; i < 600; i++)); do
  curl -fs -o /dev/null "http://127.0.0.1:$ADMIN_PORT/ready" && break
  kill -0 "${PIDS[-1]}" 2>/dev/null || { tail -20 "$RUN/envoy.log" >&2; die "Envoy exited"; }
  sleep 0.1
done

CURL=(curl -s --cacert "$RUN/input/shop-cert.pem" --resolve "$HOST:$HTTPS_PORT:127.0.0.1")
URL="https://$HOST:$HTTPS_PORT/"
serial() {
  openssl s_client -connect "127.0.0.1:$HTTPS_PORT" -servername "$HOST" </dev/null 2>/dev/null \
    | openssl x509 -noout -serial
}

if ! $CHECK; then
  printf 'Try (HTTPS, the policy sets x-served-over: tls on the response):\n'
  printf '  %s -i %s\n' "${CURL[*]}" "$URL"
  printf 'Rotate the certificate, no restart: %s %s\n' "$ROOT/examples/https/make-secret.sh" "$RUN/input"
  printf '\nEnvoy on https://%s:%s (admin :%s); logs and files in %s. Ctrl-C to stop.\n' \
    "$HOST" "$HTTPS_PORT" "$ADMIN_PORT" "$RUN"
  wait
  exit 0
fi

passed=0
failed=0
check() { # what, then a command that must succeed
  local what=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "ok: $what"; else failed=$((failed + 1)); echo "FAILED: $what"; fi
}
served_over_tls() { "${CURL[@]}" -D - -o /dev/null "$URL" | tr -d '\r' | grep -qi '^x-served-over: tls$'; }
check "HTTPS to $HOST verifies against its certificate and carries the policy's header" served_over_tls
before=$(serial)
bash "$ROOT/examples/https/make-secret.sh" "$RUN/input" >/dev/null
rotated() {
  local cacert="$RUN/input/shop-cert.pem"
  for ((i = 0; i < 100; i++)); do
    [[ "$(serial)" != "$before" ]] && curl -fs -o /dev/null --cacert "$cacert" \
      --resolve "$HOST:$HTTPS_PORT:127.0.0.1" "$URL" && return 0
    sleep 0.1
  done
  return 1
}
check "a rotated certificate is served without a restart" rotated
check "the SDS file holding the key is readable by its owner alone" \
  test "$(stat -c %a "$RUN/xds/sds/infra_shop-cert/secret.json")" = 600
printf '%d passed, %d failed\n' "$passed" "$failed"
(( failed == 0 ))
