#!/usr/bin/env python3
"""Reload time of the file-based xDS layout for a 10,000-route Gateway.

Starts the test backend, `attache watch --xds-dir --envoy-admin` and Envoy on
`attache render envoy --xds-dir`, then changes the input and times:

- `rds`: from the moment watch finished writing the new RDS file (its mtime;
  the rename follows at once) to the first answer from the new route table;
- `edit`: from the rename of the edited manifest to that answer (watch's two
  polls, resolving and rendering 10,000 routes, the ECDS/CDS/RDS steps, Envoy).

Two kinds of change, each `--steps` times:
- `all`: every route's path changes (`/rI/gK` becomes `/rI/gK+1`); the probe
  is the last route's new path, 404 before and 200 after;
- `one`: one HTTPRoute is added to the 10,000; the probe is its path.

    ENVOY_BIN=... python3 bench/xds_reload.py [--routes 10000] [--steps 3]

Prints one line per step and the medians. Uses target/release/attache and
attache-testbackend, so `cargo build --release -p attache -p attache-testbackend`
first; the .wasm from target/wasm32-wasip1/release.
"""

import argparse
import json
import shutil
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
ATTACHE = TARGET / "release/attache"
BACKEND = TARGET / "release/attache-testbackend"
WASM = TARGET / "wasm32-wasip1/release/attache_filter.wasm"
ENVOY = os.environ.get("ENVOY_BIN", str(ROOT / ".venv/bin/envoy"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gateway_docs() -> list:
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}},
        {
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "GatewayClass",
            "metadata": {"name": "attache"},
            "spec": {"controllerName": "attache.dev/gateway-controller"},
        },
        {
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "Gateway",
            "metadata": {"name": "edge", "namespace": "bench"},
            "spec": {
                "gatewayClassName": "attache",
                "listeners": [{"name": "http", "protocol": "HTTP", "port": 80}],
            },
        },
        {
            "apiVersion": "policy.attache.dev/v1alpha1",
            "kind": "RoutePolicy",
            "metadata": {"name": "edge", "namespace": "bench"},
            "spec": {
                "targetRefs": [
                    {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "edge"}
                ],
                "defaults": {
                    "timeouts": {"request": "5s"},
                    "requestHeaderModifier": {"set": [{"name": "x-bench", "value": "yes"}]},
                },
            },
        },
    ]


def route(name: str, path: str) -> dict:
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": name, "namespace": "bench"},
        "spec": {
            "parentRefs": [{"name": "edge"}],
            "rules": [
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": path}}],
                    "backendRefs": [{"name": "upstream", "port": 80}],
                }
            ],
        },
    }


def routes_yaml(routes: int, generation: int) -> str:
    docs = [route(f"r{i}", f"/r{i}/g{generation}") for i in range(routes)]
    return "\n---\n".join(json.dumps(d) for d in docs) + "\n"


def put(path: Path, text: str) -> float:
    """Replaces `path` in one rename; returns when."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    now = time.time()
    os.rename(tmp, path)
    return now


def status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=30) as reply:
            reply.read()
            return reply.status
    except urllib.error.HTTPError as err:
        return err.code
    except (urllib.error.URLError, ConnectionError):
        return 0


def wait_served(url: str, within: float = 120.0) -> float:
    started = time.time()
    while status(url) != 200:
        if time.time() - started > within:
            sys.exit(f"{url} not served within {within}s")
        time.sleep(0.005)
    return time.time()


def wait_line(path: Path, count: int, within: float = 300.0) -> None:
    started = time.time()
    while path.read_text().count("wrote generation") < count:
        if time.time() - started > within:
            sys.exit(f"attache watch wrote fewer than {count} generations; see {path.parent}")
        time.sleep(0.02)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--routes", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="attache-xds-bench-"))
    inputs, xds = work / "input", work / "xds"
    inputs.mkdir()
    (inputs / "00-gateway.yaml").write_text(
        "\n---\n".join(json.dumps(d) for d in gateway_docs()) + "\n"
    )
    (inputs / "10-routes.yaml").write_text(routes_yaml(args.routes, 0))
    backend_port, listener_port, admin_port = free_port(), free_port(), free_port()
    procs = []
    try:
        procs.append(subprocess.Popen(
            [BACKEND, "--listen", f"127.0.0.1:{backend_port}"],
            stdout=subprocess.DEVNULL, stderr=open(work / "backend.log", "w")))
        watch_out = work / "watch.out"
        procs.append(subprocess.Popen(
            [ATTACHE, "watch", "-f", inputs, "--out", work / "attache.json",
             "--ecds", xds / "ecds/attache-ecds.json", "--wasm", WASM, "--xds-dir", xds,
             "--backend", f"*=127.0.0.1:{backend_port}", "--listener-port", f"http={listener_port}",
             "--envoy-admin", f"127.0.0.1:{admin_port}", "--interval-ms", "100"],
            stdout=open(watch_out, "w"), stderr=open(work / "watch.log", "w")))
        wait_line(watch_out, 1)
        subprocess.run(
            [ATTACHE, "render", "envoy", "-f", inputs, "--xds-dir", xds,
             "--admin-port", str(admin_port), "-o", work / "envoy.yaml"], check=True)
        procs.append(subprocess.Popen(
            [ENVOY, "-c", work / "envoy.yaml", "--disable-hot-restart", "--concurrency", "1",
             "--log-level", "warn"], stdout=subprocess.DEVNULL,
            stderr=open(work / "envoy.log", "w")))
        base = f"http://127.0.0.1:{listener_port}"
        wait_served(f"{base}/r{args.routes - 1}/g0")
        rds = xds / "rds/http/routes.json"
        results = {"all": [], "one": []}
        generation = 1
        for step in range(1, args.steps + 1):
            for kind in ("all", "one"):
                if kind == "all":
                    edited = put(inputs / "10-routes.yaml", routes_yaml(args.routes, step))
                    probe = f"{base}/r{args.routes - 1}/g{step}"
                else:
                    extra = json.dumps(route(f"extra{step}", f"/extra/{step}")) + "\n"
                    edited = put(inputs / f"20-extra{step}.yaml", extra)
                    probe = f"{base}/extra/{step}"
                served = wait_served(probe)
                generation += 1
                wait_line(watch_out, generation)
                written = rds.stat().st_mtime_ns / 1e9
                results[kind].append((served - written, served - edited))
                print(f"step {step} {kind}: rds written -> served {1000 * (served - written):.0f} ms,"
                      f" edit -> served {1000 * (served - edited):.0f} ms", flush=True)
        for kind, rows in results.items():
            print(f"{kind}: median rds written -> served"
                  f" {1000 * statistics.median(r[0] for r in rows):.0f} ms,"
                  f" edit -> served {1000 * statistics.median(r[1] for r in rows):.0f} ms"
                  f" ({len(rows)} steps)")
        print(f"RDS file at the end: {rds.stat().st_size:,} bytes;"
              f" load average {os.getloadavg()[0]:.2f}")
    finally:
        for proc in reversed(procs):
            proc.terminate()
            proc.wait()
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
