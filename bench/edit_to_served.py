#!/usr/bin/env python3
"""Edit to served (issue 30): from a one-policy edit landing in the API server to the first
request real Envoy serves with it, through the real controller and the real filter.

    python3 bench/edit_to_served.py --envoy .venv/bin/envoy --attache target/release/attache \
        --apiserver target/release/attache-apiserver --backend target/release/attache-testbackend \
        --wasm target/wasm32-wasip1/release/attache_filter.wasm --work .run/edit-to-served \
        [--routes 10000] [--edits 10] [--out-json bench/results/edit-to-served.json]

The chain, every part real except Istio:
  stand-in API server (scripts/gen_distinct.py N: N HTTPRoutes x 3 rules, one RoutePolicy each)
  -> `attache controller` (watch, debounce, resolve, server-side apply of the WasmPlugin)
  -> the WasmPlugin's pluginConfig written as Envoy's ECDS file (this script stands in for
     istiod: it watches the WasmPlugin and writes the file atomically on every change)
  -> Envoy reloads the filter's configuration -> a request to the edited route, echoed by the
     test backend, carries the edited header.
Each edit changes one policy's `x-tenant` header value; a prober asks the edited route every
5 ms until the new value arrives. Reported per edit: edit -> WasmPlugin applied (the
controller, debounce included), WasmPlugin -> served (ECDS write, Envoy, the filter's load),
and edit -> served; then p50 / p90 / max. istiod's own push time is not in these figures.
With --out-json, every edit is also written there; bench/make_report.py draws its distribution.
It measures the apply and serve path only: the stand-in has no proxy pods, so the controller
runs with --confirm-served=false (status would stay Pending otherwise); edit -> Programmed
with three real Envoys as the replicas is bench/edit_to_programmed.py.
"""

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from attache_bench.istiod import Mirror, edit_policy, run_cli  # noqa: E402
from attache_bench.envoy_proc import Envoy  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BACKEND_PORT, LISTENER_PORT, ADMIN_PORT = 10599, 10500, 10501


def ask(route: int) -> str | None:
    req = urllib.request.Request(f"http://127.0.0.1:{LISTENER_PORT}/r{route}/a",
                                 headers={"Host": f"h{route % 1000}.example.com"})
    try:
        with urllib.request.urlopen(req, timeout=2) as resp:
            return json.loads(resp.read())["headers"].get("x-tenant")
    except OSError:
        return None


def wait_for(route: int, value: str, timeout: float) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ask(route) == value:
            return time.monotonic()
        time.sleep(0.005)
    raise RuntimeError(f"route r{route} never served x-tenant: {value} within {timeout} s")


def record(routes: int, rows: list[tuple[int, float, float, float]], date: str) -> dict:
    """What --out-json holds: each edit's route and its three times in ms, as measured."""
    return {"meta": {"date": date, "routes": routes},
            "edits": [{"route": route, "edit_to_applied_ms": 1000 * applied, "applied_to_served_ms": 1000 * then,
                       "edit_to_served_ms": 1000 * total} for route, applied, then, total in rows]}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for tool in ("envoy", "attache", "apiserver", "backend", "wasm", "work"):
        p.add_argument(f"--{tool}", type=Path, required=True)
    p.add_argument("--routes", type=int, default=10_000)
    p.add_argument("--edits", type=int, default=10)
    p.add_argument("--gap", type=float, default=2.0, help="seconds between edits")
    p.add_argument("--out-json", type=Path, help="write every edit's times here (bench/make_report.py)")
    args = p.parse_args()
    work = args.work.resolve()
    shutil.rmtree(work, ignore_errors=True)
    (work / "xds" / "ecds").mkdir(parents=True)
    manifests, ecds = work / "manifests.yaml", work / "xds" / "ecds" / "attache-ecds.json"
    with manifests.open("w") as out:
        subprocess.run([sys.executable, ROOT / "scripts/gen_distinct.py", str(args.routes)], stdout=out, check=True)
    common = ["--backend", f"*=127.0.0.1:{BACKEND_PORT}", "--listener-port", f"http={LISTENER_PORT}"]
    run_cli([args.attache, "render", "xds", "-f", manifests, "--xds-dir", work / "xds", "--ecds", ecds, *common], timeout=600)
    run_cli([args.attache, "render", "envoy", "-f", manifests, "--xds-dir", work / "xds",
         "--admin-port", ADMIN_PORT, "-o", work / "envoy.yaml"], timeout=600)
    procs = []
    try:
        procs.append(subprocess.Popen([args.backend, "--listen", f"127.0.0.1:{BACKEND_PORT}"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        kubeconfig = work / "kubeconfig"
        server_proc = subprocess.Popen([args.apiserver, "--gateway-api", "--kubeconfig", kubeconfig,
                                        ROOT / "deploy/crds", manifests], stdout=subprocess.PIPE, text=True)
        procs.append(server_proc)
        server = server_proc.stdout.readline().strip()
        started = time.monotonic()
        procs.append(subprocess.Popen(
            [args.attache, "controller", "--kubeconfig", kubeconfig, "--no-leader-election",
             "--probe-address", "127.0.0.1:0", "--plugin-kind", "wasmplugin", "--plugin-config", "compressed",
             "--confirm-served=false"],
            stdout=subprocess.DEVNULL, stderr=open(work / "controller.log", "w")))
        mirror = Mirror(server, args.wasm.resolve(), [ecds], watch_seconds=3600)
        mirror.start()
        while mirror.first_after(started) is None:
            time.sleep(0.05)
        envoy = Envoy(args.envoy, work / "envoy.yaml", ADMIN_PORT, "0", work / "envoy.log", 500)
        procs.append(envoy.proc)
        envoy.wait_ready()
        probe = args.routes // 2
        wait_for(probe, f"t{probe}", 60)
        print(f"{args.routes} routes: first WasmPlugin {mirror.first_after(started) - started:.1f} s after the "
              f"controller started; Envoy serving the controller's configuration", flush=True)
        rows = []
        for k in range(1, args.edits + 1):
            route = (probe + 7919 * k) % args.routes
            value = f"t{route}-edit{k}"
            t0 = time.monotonic()
            edit_policy(server, route, value)
            served = wait_for(route, value, 30)
            applied = mirror.first_after(t0)
            rows.append((route, applied - t0, served - applied, served - t0))
            print(f"edit {k}: r{route} applied {1000 * rows[-1][1]:.0f} ms, then served "
                  f"{1000 * rows[-1][2]:.0f} ms; edit -> served {1000 * rows[-1][3]:.0f} ms", flush=True)
            time.sleep(args.gap)
        for i, name in enumerate(("edit -> applied", "applied -> served", "edit -> served")):
            ms = [1000 * r[i + 1] for r in rows]
            print(f"{name}: p50 {statistics.median(ms):.0f} ms, p90 {percentile(ms, 0.9):.0f} ms, "
                  f"max {max(ms):.0f} ms ({len(ms)} edits)")
        if args.out_json:
            when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
            args.out_json.write_text(json.dumps(record(args.routes, rows, when), indent=1) + "\n")
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
