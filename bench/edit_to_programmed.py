#!/usr/bin/env python3
"""Programmed means served (issue 45's targets): cold-start convergence, idle writes, and
edit -> `Programmed: True` written, with three real Envoys as the Gateway's replicas.

    python3 bench/edit_to_programmed.py --envoy .venv/bin/envoy --attache target/release/attache \
        --apiserver target/release/attache-apiserver --backend target/release/attache-testbackend \
        --wasm target/wasm32-wasip1/release/attache_filter.wasm --work .run/edit-to-programmed \
        [--routes 10000] [--edits 10] [--idle 30] [--out-json bench/results/edit-to-programmed-10000.json]

The chain, every part real except Istio and Kubernetes:
  stand-in API server (`attache-apiserver --pods --write-log`: scripts/gen_distinct.py N, and
  three Pods of Gateway shop/edge, ready, status.podIP 127.0.0.2..4)
  -> `attache controller` (confirmation on; --proxy-stats-port is the one admin port the three
     Envoys share, each on its own loopback address, as pods share a port on their own IPs;
     --proxy-stats-path /stats/prometheus)
  -> this script stands in for istiod: every WasmPlugin event becomes each replica's ECDS file
  -> the Envoys load it and publish attache_config_document_id; the controller reads them and
     writes Programmed True ("served by 3 of 3 replicas").
The Envoys start first, on a document rendered offline (a data plane already running when the
controller starts). Measured, in order:
  1. cold start: controller start -> every policy's status correct (Programmed True, served by
     3 of 3, on every ancestor), and the status writes until then and until --settle s pass
     with no write at all;
  2. idle: status writes (and all writes) over --idle seconds with nothing changing;
  3. edits: per edit, edit -> WasmPlugin applied (seen on a watch), applied -> the new document
     id served by all three replicas (each admin's /stats polled every 5 ms), served -> the
     edited policy's Programmed True for its new generation seen on a watch of the policies;
     and the status writes the edit caused, on the edited policy and on all others, counted
     until --gap s pass with no write at all (then the next edit).
Writes are counted from the stand-in's write log (every write, with its arrival time).
"""

import argparse
import json
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from attache_bench import programmed as pg  # noqa: E402
from attache_bench.istiod import POLICIES, Mirror, edit_policy, run_cli  # noqa: E402
from attache_bench.envoy_proc import Envoy  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BACKEND_PORT, LISTENER_PORT, ADMIN_PORT, REPLICAS = 10699, 10600, 10690, 3
LABEL = "gateway.networking.k8s.io/gateway-name"


def pods() -> list[dict]:
    return [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"edge-{i}", "namespace": "shop", "labels": {LABEL: "edge"}},
             "spec": {"containers": [{"name": "istio-proxy", "image": "proxyv2"}]},
             "status": {"podIP": f"127.0.0.{2 + i}", "conditions": [{"type": "Ready", "status": "True"}]}}
            for i in range(REPLICAS)]


class Statuses(threading.Thread):
    """A watch of the RoutePolicies: each policy's latest object, when each was seen, and the
    first time every one of them was correct (pg.served_by_all)."""

    def __init__(self, server: str, routes: int):
        super().__init__(daemon=True)
        self.server, self.routes = server, routes
        self.latest: dict[str, tuple[float, dict]] = {}
        self.correct: set[str] = set()
        self.all_correct_at: float | None = None
        self.lock = threading.Lock()

    def run(self) -> None:
        with urllib.request.urlopen(f"{self.server}{POLICIES}?watch=true", timeout=7200) as stream:
            for line in stream:
                event = json.loads(line)
                obj = event.get("object") or {}
                name = (obj.get("metadata") or {}).get("name")
                if event.get("type") not in ("ADDED", "MODIFIED") or not name:
                    continue
                at = time.monotonic()
                with self.lock:
                    self.latest[name] = (at, obj)
                    if pg.served_by_all(obj, REPLICAS):
                        self.correct.add(name)
                    else:
                        self.correct.discard(name)
                    if self.all_correct_at is None and len(self.correct) == self.routes:
                        self.all_correct_at = at

    def wait(self, name: str, generation: int, timeout: float) -> float:
        """When `name`'s Programmed True for `generation` was first seen."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                at, obj = self.latest.get(name, (0.0, {}))
            if pg.served_by_all(obj, REPLICAS, generation):
                return at
            time.sleep(0.005)
        raise RuntimeError(f"{name}: no Programmed True for generation {generation} within {timeout} s: "
                           f"{pg.programmed(obj)}")


def served_ids(envoys: list[Envoy]) -> list[int | None]:
    ids = []
    for envoy in envoys:
        try:
            found = pg.document_ids(envoy.admin("/stats?filter=document_id", timeout=2))
        except OSError:
            found = []
        ids.append(found[0] if found else None)
    return ids


def wait_served(envoys: list[Envoy], before: list[int | None], timeout: float) -> float:
    """When every replica serves one document id different from the one it served before."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ids = served_ids(envoys)
        if all(i is not None and i != b for i, b in zip(ids, before)) and len(set(ids)) == 1:
            return time.monotonic()
        time.sleep(0.005)
    raise RuntimeError(f"the replicas never all served a new document within {timeout} s")


def wait_quiet(write_log: Path, quiet: float, timeout: float = 300.0) -> None:
    """Until the stand-in has logged no write for `quiet` seconds: an edit's writes (at 10,000
    policies, tens of seconds of them) must not be counted against the next edit."""
    deadline, size, since = time.monotonic() + timeout, -1, time.monotonic()
    while time.monotonic() < deadline:
        now_size = write_log.stat().st_size
        if now_size != size:
            size, since = now_size, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
        time.sleep(0.1)
    raise RuntimeError(f"writes still coming after {timeout} s")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for tool in ("envoy", "attache", "apiserver", "backend", "wasm", "work"):
        p.add_argument(f"--{tool}", type=Path, required=True)
    p.add_argument("--routes", type=int, default=10_000)
    p.add_argument("--edits", type=int, default=10)
    p.add_argument("--gap", type=float, default=3.0,
                   help="seconds without any write that end an edit (its writes are counted until then)")
    p.add_argument("--idle", type=float, default=30.0, help="seconds of idle window whose writes are counted")
    p.add_argument("--settle", type=float, default=5.0,
                   help="seconds without any write that end the cold start (its writes are counted until then)")
    p.add_argument("--converge-timeout", type=float, default=600.0)
    p.add_argument("--out-json", type=Path, help="write the figures here (bench/make_report.py)")
    args = p.parse_args()
    # The Envoys run in their own sessions: a SIGTERM (a timeout) must still reach `finally`.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = args.work.resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    manifests, pod_file, write_log = work / "manifests.yaml", work / "pods.yaml", work / "writes.jsonl"
    with manifests.open("w") as out:
        subprocess.run([sys.executable, ROOT / "scripts/gen_distinct.py", str(args.routes)], stdout=out, check=True)
    pod_file.write_text("\n---\n".join(json.dumps(d) for d in pods()))
    ecds_files = []
    for i in range(REPLICAS):
        r = work / f"r{i}"
        (r / "xds" / "ecds").mkdir(parents=True)
        ecds = r / "xds" / "ecds" / "attache-ecds.json"
        ecds_files.append(ecds)
        run_cli([args.attache, "render", "xds", "-f", manifests, "--xds-dir", r / "xds", "--ecds", ecds,
             "--backend", f"*=127.0.0.1:{BACKEND_PORT}", "--listener-port", f"http={LISTENER_PORT + i}"])
        run_cli([args.attache, "render", "envoy", "-f", manifests, "--xds-dir", r / "xds", "--admin-port", ADMIN_PORT,
             "--admin-address", f"127.0.0.{2 + i}", "-o", r / "envoy.yaml"])
        # The data plane runs before the controller starts: an offline-rendered document.
        run_cli([args.attache, "render", "ecds", "-f", manifests, "--wasm", args.wasm.resolve(), "-o", ecds])
    procs, server_proc = [], None
    try:
        procs.append(subprocess.Popen([args.backend, "--listen", f"127.0.0.1:{BACKEND_PORT}"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        envoys = [Envoy(args.envoy, work / f"r{i}" / "envoy.yaml", ADMIN_PORT, "0-1", work / f"r{i}" / "envoy.log",
                        600 + i, admin_host=f"127.0.0.{2 + i}") for i in range(REPLICAS)]
        procs += [e.proc for e in envoys]
        for e in envoys:
            e.wait_ready(300)
        kubeconfig = work / "kubeconfig"
        server_proc = subprocess.Popen([args.apiserver, "--gateway-api", "--pods", "--write-log", write_log,
                                        "--kubeconfig", kubeconfig, ROOT / "deploy/crds", manifests, pod_file],
                                       stdout=subprocess.PIPE, text=True)
        server = server_proc.stdout.readline().strip()
        statuses = Statuses(server, args.routes)
        statuses.start()
        mirror = Mirror(server, args.wasm.resolve(), ecds_files, watch_seconds=7200)
        mirror.start()
        time.sleep(1.0)  # both watches open before the controller starts
        wall0, started = time.time(), time.monotonic()
        procs.append(subprocess.Popen(
            [args.attache, "controller", "--kubeconfig", kubeconfig, "--no-leader-election",
             "--probe-address", "127.0.0.1:0", "--plugin-kind", "wasmplugin", "--plugin-config", "compressed",
             "--proxy-stats-port", str(ADMIN_PORT), "--proxy-stats-path", "/stats/prometheus"],
            stdout=subprocess.DEVNULL, stderr=open(work / "controller.log", "w")))

        def wall(mono: float) -> float:
            return wall0 + (mono - started)

        deadline = started + args.converge_timeout
        while statuses.all_correct_at is None:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{len(statuses.correct)} of {args.routes} policies correct after "
                                   f"{args.converge_timeout} s; see {work}/controller.log")
            time.sleep(0.05)
        converged = statuses.all_correct_at
        first_apply = mirror.first_after(started)
        print(f"cold start, {args.routes} policies: every status correct {converged - started:.2f} s after the "
              f"controller started (first WasmPlugin at {first_apply - started:.2f} s)", flush=True)
        wait_quiet(write_log, args.settle)
        idle_from = time.monotonic()
        time.sleep(args.idle)
        idle_to = time.monotonic()

        rows, probe = [], args.routes // 2
        for k in range(1, args.edits + 1):
            route = (probe + 7919 * k) % args.routes
            before = served_ids(envoys)
            t0 = time.monotonic()
            generation = edit_policy(server, route, f"t{route}-edit{k}")
            served = wait_served(envoys, before, 60)
            status = statuses.wait(f"p{route}", generation, 60)
            applied = mirror.first_after(t0)
            wait_quiet(write_log, args.gap)
            rows.append({"route": route, "t0": t0, "end": time.monotonic(), "served": served, "status": status,
                         "edit_to_applied_ms": 1000 * (applied - t0), "applied_to_served_ms": 1000 * (served - applied),
                         "served_to_status_ms": 1000 * (status - served), "edit_to_programmed_ms": 1000 * (status - t0)})
            r = rows[-1]
            print(f"edit {k}: p{route} applied {r['edit_to_applied_ms']:.0f} ms, served by {REPLICAS} "
                  f"{r['applied_to_served_ms']:.0f} ms, status {r['served_to_status_ms']:.0f} ms; "
                  f"edit -> Programmed {r['edit_to_programmed_ms']:.0f} ms (as seen on the watch)", flush=True)
    finally:
        if server_proc is not None:
            server_proc.send_signal(signal.SIGINT)  # it writes the exact total on Ctrl-C
            procs.append(server_proc)
        for proc in reversed(procs):
            if proc is not server_proc:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
    log = pg.read_write_log(write_log.read_text())
    writes = log["writes"]
    cold = pg.status_writes(writes, wall(started), wall(converged) + 0.001)
    cold_settled = pg.status_writes(writes, wall(started), wall(idle_from))
    idle_status = pg.status_writes(writes, wall(idle_from), wall(idle_to))
    idle_all = sum(1 for w in writes if wall(idle_from) <= w["at"] < wall(idle_to))
    # The watcher's times may lag a burst of events; the write log's are the server's. Each leg
    # ending in a status is taken from the write that the watcher then saw.
    cold_written = pg.last_status_write(writes, wall(started), wall(converged) + 0.001)
    for r in rows:
        written = pg.last_status_write(writes, wall(r["t0"]), wall(r.pop("status")) + 0.001, f"p{r['route']}")
        r["edit_to_programmed_seen_ms"] = r["edit_to_programmed_ms"]
        if written is not None:
            r["served_to_status_ms"] = 1000 * (written - wall(r.pop("served")))
            r["edit_to_programmed_ms"] = 1000 * (written - wall(r["t0"]))
        during = pg.status_writes(writes, wall(r["t0"]), wall(r["end"]))
        name = f"p{r['route']}"
        r["status_writes_edited"] = during.get(name, 0)
        r["status_writes_others"] = sum(n for k, n in during.items() if k != name)
    result = {
        "meta": {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "routes": args.routes,
                 "replicas": REPLICAS, "idle_s": args.idle, "settle_s": args.settle, "gap_s": args.gap},
        "cold_start": {"converged_s": (cold_written - wall0) if cold_written else converged - started,
                       "converged_seen_s": converged - started, "first_apply_s": first_apply - started,
                       "status_writes_to_converged": sum(cold.values()),
                       "status_writes_settled": sum(cold_settled.values()),
                       "policies_written": len(cold_settled), "max_writes_per_policy": max(cold_settled.values(), default=0)},
        "idle": {"status_writes": sum(idle_status.values()), "writes": idle_all},
        "write_log": {"lines": len(writes), "lagged": log["lagged"], "total": log["total"]},
        "edits": [{k: v for k, v in r.items() if k not in ("t0", "end", "served", "status")} for r in rows],
    }
    c, idle = result["cold_start"], result["idle"]
    print(f"cold start: the last status write that made every status correct {c['converged_s']:.2f} s after the "
          f"controller started (seen on the watch at {c['converged_seen_s']:.2f} s)")
    print(f"cold start: {c['status_writes_to_converged']} status writes to converge, {c['status_writes_settled']} "
          f"until {args.settle:g} s without writes ({c['policies_written']} policies, at most {c['max_writes_per_policy']} each)")
    print(f"idle {args.idle:.0f} s: {idle['status_writes']} status writes, {idle['writes']} writes in all")
    if log["lagged"] or (log["total"] is not None and log["total"] != len(writes)):
        print(f"WARNING: the write log lost records (lagged {log['lagged']}, lines {len(writes)}, "
              f"total {log['total']}): the write counts are lower bounds")
    for leg in ("edit_to_applied_ms", "applied_to_served_ms", "served_to_status_ms", "edit_to_programmed_ms"):
        s = pg.summary([r[leg] for r in rows])
        if s:
            print(f"{leg}: p50 {s['p50']:.0f} ms, p90 {s['p90']:.0f} ms, max {s['max']:.0f} ms ({s['n']} edits)")
    if rows:
        shares = pg.leg_shares(rows)
        print("shares of the legs' medians: " + ", ".join(f"{k} {100 * v:.0f}%" for k, v in shares.items()))
        print(f"status writes per edit: edited policy {[r['status_writes_edited'] for r in rows]}, "
              f"others {[r['status_writes_others'] for r in rows]}")
    if args.out_json:
        args.out_json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
