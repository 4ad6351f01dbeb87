#!/usr/bin/env python3
"""Updates under steady load (issue 31): bench/attache_bench/updates.py says what and why.

    bench/run.sh --update          (builds, then runs this with the defaults)
    python3 bench/update_bench.py --envoy .venv/bin/envoy --attache target/release/attache \
        --wasm target/wasm32-wasip1/release/attache_filter.wasm --work .run/bench-update \
        [--routes 1000 10000] [--rate 1000] [--seconds 20] [--edits-per-second 1] [--rounds 3] \
        [--floor-wasm target/wasm32-wasip1/release/examples/probe.wasm [--floor-routes 10000]]
        [--module target/release/libattache_module.so]   the filter as a dynamic module instead

Needs hey and taskset, and 2 CPUs: Envoy under test on CPU 0, hey and the upstream on CPU 1.
Writes --out-md and --out-json when given.
"""

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from attache_bench import envoy_configs, machine, updates  # noqa: E402
from attache_bench.istiod import run_cli  # noqa: E402
from attache_bench.envoy_proc import Envoy, EnvoyError, version  # noqa: E402

UPSTREAM_PORT, UPSTREAM_ADMIN = 10399, 10499
FIRST_PORT, FIRST_ADMIN = 10300, 10400
ALTERNATES = 4  # pre-rendered edits per kind, applied in turn


class Gateway:
    """One Envoy on the file-based xDS layout of an N-route distinct-policy Gateway, with
    edited ECDS and RDS files staged beside the watched ones."""

    def __init__(self, args, routes: int, index: int, wasm: Path | None = None, label: str = ""):
        """`wasm`: the module the ECDS files name (the filter unless given: the floor
        passes the probe); `label` keeps the floor's files apart from the filter's."""
        # The ECDS files name the filter's build: the .wasm (or the floor's probe), or the
        # dynamic module with --module (issue 44), rendered by the same command.
        # The bootstrap and the xDS files take the module's pair too: the bootstrap's
        # ECDS subscription names the filter type it accepts.
        pair = ["--filter", "dynamic-module", "--module", args.module] if wasm is None and args.module else []
        build = pair or ["--wasm", wasm or args.wasm]
        self.routes = routes
        self.dir = args.work / f"g{routes}{label}"
        shutil.rmtree(self.dir, ignore_errors=True)
        self.xds = self.dir / "xds"
        self.stage = self.dir / "stage"
        self.stage.mkdir(parents=True)
        self.port, self.admin = FIRST_PORT + index, FIRST_ADMIN + index
        # JSON, as docs/envoy.md advises for a large document and as the RDS
        # anchor's routes.json is: Envoy's YAML reader took about 310M
        # instructions for the 320 KB configuration string, its JSON one
        # about 50M (bench/findings.md, "Issue 31", session canary).
        self.ecds = self.xds / "ecds" / "attache-ecds.json"
        self.ecds.parent.mkdir(parents=True)
        base = self.dir / "manifests.yaml"
        base.write_text(updates.distinct_manifests(routes))
        self.common = ["--backend", f"*=127.0.0.1:{UPSTREAM_PORT}", "--listener-port", f"http={self.port}"]
        run_cli([args.attache, "render", "xds", "-f", base, "--xds-dir", self.xds, "--ecds", self.ecds,
                 *self.common, *pair], timeout=600)
        run_cli([args.attache, "render", "ecds", "-f", base, *build, "-o", self.ecds], timeout=600)
        run_cli([args.attache, "render", "envoy", "-f", base, "--xds-dir", self.xds,
                 "--admin-port", str(self.admin), "-o", self.dir / "envoy.yaml", *pair], timeout=600)
        self.rds = sorted(self.xds.glob("rds/*/routes.json"))
        if len(self.rds) != 1:
            raise RuntimeError(f"expected one RDS file under {self.xds}/rds, found {self.rds}")
        self.rds = self.rds[0]
        self.alternates = {"ecds": [], "rds": []}
        for k in range(ALTERNATES):
            step = k + 1
            edited = self.stage / f"m{step}.yaml"
            target = updates.edited_route(routes, step)
            edited.write_text(updates.distinct_manifests(routes, timeout_edit=target, generation=step))
            out = self.stage / f"ecds-{step}.json"
            run_cli([args.attache, "render", "ecds", "-f", edited, *build, "-o", out], timeout=600)
            self.alternates["ecds"].append((out, self.ecds))
            edited.write_text(updates.distinct_manifests(routes, path_edit=target, generation=step))
            out_dir = self.stage / f"xds-{step}"
            run_cli([args.attache, "render", "xds", "-f", edited, "--xds-dir", self.xds, "--ecds", self.ecds,
                     "--output-dir", out_dir, *self.common, *pair], timeout=600)
            self.alternates["rds"].append((out_dir / self.rds.relative_to(self.xds), self.rds))
        self.turn = 0
        self.envoy = Envoy(args.envoy, self.dir / "envoy.yaml", self.admin, "0", self.dir / "envoy.log",
                           300 + index, ["--component-log-level", "wasm:info"])
        self.envoy.wait_ready()

    def apply(self, kind: str) -> None:
        """The next staged edit of `kind`, copied beside its target and renamed into place
        (the copy is not timed: the rename is the update)."""
        source, target = self.alternates[kind][self.turn % ALTERNATES]
        self.turn += 1
        tmp = target.with_name(f".{target.name}.tmp")
        shutil.copyfile(source, tmp)
        os.rename(tmp, target)

    def taken(self, kind: str) -> int:
        """Updates Envoy accepted so far: ECDS reloads, or RDS updates."""
        counters = self.envoy.counters()
        if kind == "ecds":
            return sum(v for k, v in counters.items()
                       if k.startswith("extension_config_discovery.") and k.endswith(".config_reload"))
        return sum(v for k, v in counters.items() if ".rds." in k and k.endswith(".update_success"))


def one_run(args, gw: Gateway, kind: str) -> dict:
    host, path = updates.request(gw.routes)
    before = gw.taken(kind) if kind != "steady" else 0
    cmd = updates.rate_command(gw.port, host, path, args.seconds, args.rate, args.connections, csv=True)
    before_machine = machine.cpu_times()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    start = time.monotonic()
    if kind != "steady":
        for at in updates.edit_times(args.seconds, args.edits_per_second):
            time.sleep(max(0.0, start + at - time.monotonic()))
            gw.apply(kind)
    out, err = proc.communicate(timeout=args.seconds + 60)
    if proc.returncode != 0:
        raise RuntimeError(f"hey failed: {err[-400:]}")
    figures = updates.parse_hey_csv(out, args.seconds)
    figures["applied"] = (gw.taken(kind) - before) if kind != "steady" else 0
    steal = machine.steal_share(before_machine, machine.cpu_times())
    if steal is not None:
        figures["steal_share"] = steal
    return figures


def report_run(r: int, rounds: int, what: str, f: dict) -> None:
    steal = f" steal {100 * f['steal_share']:4.1f}%" if "steal_share" in f else ""
    print(f"round {r + 1}/{rounds} {what} {f['rps']:8.1f}/s p50 {f['p50_ms']:6.2f} p99 {f['p99_ms']:7.2f} "
          f"max {f['max_ms']:7.1f} ms edits taken {f['applied']}{steal}", flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--envoy", type=Path, required=True)
    p.add_argument("--attache", type=Path, required=True)
    p.add_argument("--wasm", type=Path, required=True)
    p.add_argument("--work", type=Path, required=True)
    p.add_argument("--routes", type=int, nargs="*", default=[1000, 10_000])
    p.add_argument("--rate", type=int, default=1000)
    p.add_argument("--connections", type=int, default=10)
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--edits-per-second", type=float, default=1.0)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--floor-wasm", type=Path,
                   help="the probe filter: with it, the floor runs beside the filter (updates.py)")
    p.add_argument("--module", type=Path,
                   help="the filter as a dynamic module (libattache_module.so): the runs load it, not the .wasm")
    p.add_argument("--floor-routes", type=int, nargs="*", default=[10_000])
    p.add_argument("--out-md", type=Path)
    p.add_argument("--out-json", type=Path)
    p.add_argument("--command", default="")
    args = p.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    args.wasm = args.wasm.resolve()
    args.module = args.module.resolve() if args.module is not None else None
    running = []
    runs: dict = {}
    floor_runs: dict = {}
    try:
        up = envoy_configs.write(args.work / "upstream.json",
                                 envoy_configs.upstream_bootstrap(UPSTREAM_PORT, UPSTREAM_ADMIN))
        upstream = Envoy(args.envoy, up, UPSTREAM_ADMIN, "1", args.work / "upstream.log", 390)
        running.append(upstream)
        upstream.wait_ready()
        gateways = []
        for i, n in enumerate(args.routes):
            gw = Gateway(args, n, i)
            running.append(gw.envoy)
            gateways.append(gw)
            runs[n] = {k: [] for k in updates.KINDS}
            print(f"ready: {n} routes on port {gw.port}", flush=True)
        floors = []
        if args.floor_wasm is not None:
            for i, n in enumerate(args.floor_routes):
                gw = Gateway(args, n, len(args.routes) + i, wasm=args.floor_wasm.resolve(), label="-floor")
                running.append(gw.envoy)
                floors.append(gw)
                floor_runs[n] = {"steady": [], "ecds": []}
                print(f"ready: the floor of {n} routes on port {gw.port}", flush=True)
        for gw in gateways + floors:  # warm-up: the figures are not read
            host, path = updates.request(gw.routes)
            subprocess.run(updates.rate_command(gw.port, host, path, 2.0, args.rate, args.connections),
                           capture_output=True, check=False)
        for r in range(args.rounds):
            for gw in gateways:
                order = updates.KINDS[r % 3:] + updates.KINDS[:r % 3]
                for kind in order:
                    f = one_run(args, gw, kind)
                    runs[gw.routes][kind].append(f)
                    report_run(r, args.rounds, f"{gw.routes:6d} routes {kind:6s}", f)
            for gw in floors:
                for kind in ("steady", "ecds") if r % 2 == 0 else ("ecds", "steady"):
                    f = one_run(args, gw, kind)
                    floor_runs[gw.routes][kind].append(f)
                    report_run(r, args.rounds, f"{gw.routes:6d} floor  {kind:6s}", f)
    finally:
        for envoy in reversed(running):
            envoy.stop()
    summary = updates.summarise(runs)
    floor = updates.summarise(floor_runs)
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "envoy_version": version(args.envoy), "rate": args.rate, "seconds": args.seconds,
            "edits_per_second": args.edits_per_second, "rounds": args.rounds,
            "filter": "dynamic-module" if args.module is not None else "wasm",
            "command": args.command or " ".join(sys.argv),
            "load_average": os.getloadavg()[0]}
    if args.out_json:
        args.out_json.write_text(json.dumps({"meta": meta, "runs": runs, "summary": summary,
                                             "floor_runs": floor_runs, "floor": floor}, indent=1) + "\n")
    text = updates.markdown(summary, meta, floor)
    if args.out_md:
        args.out_md.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (EnvoyError, RuntimeError, ValueError, subprocess.TimeoutExpired) as err:
        print(f"update bench: {err}", file=sys.stderr)
        sys.exit(1)
