#!/usr/bin/env python3
"""Attaché load benchmark. Usually started by bench/run.sh, which builds what it needs.

Envoy under test: --concurrency 1, pinned to CPU 0. hey and the upstream Envoy
(direct_response): pinned to CPU 1. Every variant runs at once on its own ports; rounds
interleave them (the start rotates each round) so drift on a shared machine spreads
evenly. Reports medians over rounds; raw figures go to the JSON.
"""

import argparse
import datetime
import json
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from attache_bench import config_load, documents, envoy_configs, load, machine, report, variants, verify  # noqa: E402
from attache_bench.envoy_proc import Envoy, EnvoyError, version  # noqa: E402

UPSTREAM_PORT, UPSTREAM_ADMIN = 10099, 10199
FIRST_PORT, FIRST_ADMIN = 10100, 10200
ECDS_PORT, ECDS_ADMIN = 10150, 10250


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--envoy", type=Path, required=True)
    p.add_argument("--empty-wasm", type=Path, required=True)
    p.add_argument("--attache-wasm", type=Path, help="the filter; without it attache variants are skipped")
    p.add_argument("--attache", type=Path, help="the attache CLI, for `attache resolve`")
    p.add_argument("--work", type=Path, required=True, help="scratch directory (configs, logs)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--warmup-seconds", type=float, default=2.0)
    p.add_argument("--connections", type=int, default=8)
    p.add_argument("--variants", nargs="*", help="subset of variant keys")
    p.add_argument("--load-repeats", type=int, default=5, help="ECDS load steps per document size")
    p.add_argument("--quick", action="store_true", help="smoke run: 1 round, 1 s, few variants")
    p.add_argument("--profile", action="store_true",
                   help="cost of each host call: probe filters between the empty Wasm and attache")
    p.add_argument("--probe-wasm", type=Path, help="the probe filter (needed by --profile)")
    p.add_argument("--empty-raw-wasm", type=Path, help="the empty filter with minimal raw exports")
    p.add_argument("--empty-raw-ctx-wasm", type=Path,
                   help="the empty filter with the attache filter's own exports (raw_ctx)")
    p.add_argument("--attache-module", type=Path,
                   help="the filter as a dynamic module (libattache_module.so); without it module variants are skipped")
    p.add_argument("--empty-module", type=Path,
                   help="the empty dynamic module (examples/libempty_module.so), the module's floor")
    p.add_argument("--attache-wasm-build", action="append", default=[], metavar="BUILD=PATH",
                   help="another build of the filter (e.g. o3=.../wasm-o3/attache_filter.wasm)")
    p.add_argument("--out-md", type=Path)
    p.add_argument("--out-json", type=Path)
    p.add_argument("--command", default="", help="the command line to record in the report")
    args = p.parse_args()
    if args.quick:
        args.rounds, args.seconds, args.warmup_seconds, args.load_repeats = 1, 1.0, 0.5, 1
        if not args.variants:
            args.variants = variants.QUICK
    return args


def start(binary: Path, config: Path, admin: int, cpu: str, log: Path, base_id: int,
          extra_args: list[str] | None = None) -> Envoy:
    envoy = Envoy(binary, config, admin, cpu, log, base_id, extra_args)
    envoy.wait_ready()
    return envoy


def main() -> int:
    args = parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    load_at_start = machine.load_average()
    chosen = variants.select(args.variants, args.profile)
    skipped = {}
    if args.attache_wasm is None or not args.attache_wasm.exists():
        skipped = {v.key: "the attache .wasm is not built" for v in chosen if v.kind == "attache"}
        chosen = [v for v in chosen if v.kind != "attache"]
    wasm = {"empty": args.empty_wasm.resolve()}
    if args.probe_wasm is not None:
        wasm["probe"] = args.probe_wasm.resolve()
    if args.attache_wasm is not None:
        wasm["attache"] = args.attache_wasm.resolve()
    if args.empty_raw_wasm is not None:
        wasm["empty-raw"] = args.empty_raw_wasm.resolve()
    if args.empty_raw_ctx_wasm is not None:
        wasm["empty-raw-ctx"] = args.empty_raw_ctx_wasm.resolve()
    if args.attache_module is not None:
        wasm["module"] = args.attache_module.resolve()
    if args.empty_module is not None:
        wasm["empty-module"] = args.empty_module.resolve()
    for spec in args.attache_wasm_build:
        build, _, path = spec.partition("=")
        wasm[f"attache-{build}"] = Path(path).resolve()
    missing = {v.key: f"{envoy_configs.wasm_key(v)} is not built" for v in chosen
               if (v.extra.get("wasm") or v.extra.get("module"))
               and not wasm.get(envoy_configs.wasm_key(v), Path("/nonexistent")).exists()}
    skipped.update(missing)
    chosen = [v for v in chosen if v.key not in missing]

    source = documents.DocumentSource(args.attache, args.work)
    sizes = sorted({v.routes for v in chosen if v.kind == "attache"})
    if args.attache_wasm is not None and args.attache_wasm.exists() and not (args.quick or args.profile):
        sizes = sorted(set(sizes) | {10, 10_000})  # the configuration-load step needs both
    docs = {n: source.document(n) for n in sizes}
    # The filter reads only the data-plane encoding: every document goes over encoded.
    doc_text = {n: json.dumps(documents.data_plane(d)) for n, d in docs.items()}

    running: list[Envoy] = []
    results = {"variants": {}, "skipped": skipped}
    try:
        upstream_cfg = envoy_configs.write(args.work / "upstream.json",
                                           envoy_configs.upstream_bootstrap(UPSTREAM_PORT, UPSTREAM_ADMIN))
        running.append(start(args.envoy, upstream_cfg, UPSTREAM_ADMIN, "1", args.work / "upstream.log", 90))
        under_test = {}
        for i, v in enumerate(chosen):
            text = doc_text.get(v.routes)
            if v.kind == "attache" and v.extra:
                text = json.dumps(documents.data_plane(documents.for_variant(docs[v.routes], v.extra)))
            table = None
            if v.extra.get("rendered_table"):
                rendered = documents.rendered_route_config(args.attache, args.work, v.routes)
                table = envoy_configs.rendered_route_config(v, rendered)
            elif v.extra.get("istio_table"):
                table = envoy_configs.istio_route_config(v, v.extra["istio_table"])
            cfg = envoy_configs.bootstrap(v, FIRST_PORT + i, FIRST_ADMIN + i, UPSTREAM_PORT, wasm, text,
                                          route_config=table)
            path = envoy_configs.write(args.work / f"{v.key}.json", cfg)
            envoy = start(args.envoy, path, FIRST_ADMIN + i, "0", args.work / f"{v.key}.log", 100 + i)
            running.append(envoy)
            under_test[v.key] = (v, envoy, FIRST_PORT + i)
            verify.check(envoy, FIRST_PORT + i, v.path, v.enforces_policy, v.label)
            print(f"ready and verified: {v.label}", flush=True)

        for v, envoy, port in under_test.values():
            load.run(envoy, port, v.path, args.warmup_seconds, args.connections)

        rounds: dict[str, list[dict]] = {k: [] for k in under_test}
        keys = list(under_test)
        for r in range(args.rounds):
            order = keys[r % len(keys):] + keys[:r % len(keys)]
            for key in order:
                v, envoy, port = under_test[key]
                m = load.run(envoy, port, v.path, args.seconds, args.connections)
                rounds[key].append(m.as_dict())
                steal = "" if m.steal_share is None else f"  steal {100 * m.steal_share:4.1f}%"
                print(f"round {r + 1}/{args.rounds} {key:22s} {m.rps:9.0f} rps  p50 {m.p50_ms:6.3f} ms  "
                      f"p99 {m.p99_ms:6.3f} ms  {m.cpu_us_per_req:6.2f} us/req (sched {m.sched_us_per_req:6.2f})"
                      f"{steal}", flush=True)

        for key, (v, envoy, port) in under_test.items():
            results["variants"][key] = {
                "label": v.label, "kind": v.kind, "routes": v.routes, "by_name": v.by_name, "extra": v.extra,
                "envoy_route_name": v.envoy_route_name, "path": v.path,
                "rounds": rounds[key],
                "median": {f: statistics.median(x[f] for x in rounds[key])
                           for f in ("rps", "p50_ms", "p99_ms", "cpu_us_per_req", "sched_us_per_req")},
                "rss_kib": envoy.rss_kib(),
                "wasm_vms_active": envoy.counters("wasm.envoy.wasm.runtime.v8.active").get(
                    "wasm.envoy.wasm.runtime.v8.active"),
            }

        if {"attache", "probe"} <= wasm.keys() and wasm["attache"].exists() and not (args.quick or args.profile):
            results["config_load"] = measure_config_load(args, wasm, docs)
    finally:
        for envoy in reversed(running):
            envoy.stop()

    results["meta"] = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "envoy_version": version(args.envoy),
        "machine": f"{platform.machine()}, {len(__import__('os').sched_getaffinity(0))} CPUs, "
                   f"{platform.release()}",
        "cpu_model": report.cpu_model(),
        "load_average_at_start": load_at_start,
        "steal_share": _run_steal(results),
        "command": args.command or " ".join(sys.argv),
        "rounds": args.rounds, "seconds": args.seconds, "connections": args.connections,
        "wasm_bytes": {k: p.stat().st_size for k, p in wasm.items() if p.exists()},
        "documents": {str(n): source.notes.get(n, "") for n in docs},
        "quick": args.quick,
        "profile": args.profile,
        "json": str(args.out_json) if args.out_json else None,
    }
    if args.out_json:
        args.out_json.write_text(json.dumps(results, indent=1) + "\n")
    if args.out_md:
        args.out_md.write_text(report.markdown(results))
    print(report.table(results))
    return 0


def _run_steal(results: dict) -> dict | None:
    """Median and largest steal share over every measured run, when it was read."""
    shares = [m["steal_share"] for v in results["variants"].values() for m in v["rounds"]
              if m.get("steal_share") is not None]
    if not shares:
        return None
    return {"median": statistics.median(shares), "max": max(shares), "runs": len(shares)}


def measure_config_load(args: argparse.Namespace, wasm: dict[str, Path], docs: dict) -> dict:
    """Two ECDS-fed Envoys (the filter, and the probe as the floor); see config_load."""
    targets, envoys = {}, {}
    try:
        kinds = [("attache", "attache", "json"), ("probe", "bench_probe", "json")]
        if args.attache is not None and args.attache.exists():
            kinds.append(("rendered", "attache", "yaml"))
            kinds.append(("rendered_probe", "bench_probe", "yaml"))
        for offset, (kind, vm_name, ext) in enumerate(kinds):
            ecds_dir = args.work / f"ecds-{kind}"
            ecds_dir.mkdir(exist_ok=True)
            probe = kind in ("probe", "rendered_probe")
            code = wasm["probe" if probe else "attache"]
            target = config_load.Target(kind, ecds_dir / f"filter.{ext}", ECDS_PORT + offset, code, vm_name)
            first = config_load.Series("initial", "probe" if probe else "attache", 10)
            ecds_text = config_load.configuration(first, docs[10], 0)
            # JSON is YAML too, so the first file serves either extension.
            target.ecds.write_text(json.dumps(config_load.ecds_response(target.wasm, vm_name, ecds_text, 0)))
            v = variants.Variant(f"ecds-{kind}", f"{kind} via ECDS", "attache", routes=10)
            cfg = envoy_configs.bootstrap(v, target.port, ECDS_ADMIN + offset, UPSTREAM_PORT, {}, None,
                                          filters_override=[config_load.ecds_filter(target.ecds)])
            path = envoy_configs.write(args.work / f"ecds-{kind}-bootstrap.json", cfg)
            # The filter logs each accepted load with its own time and the
            # VM's memory (info level); the probe logs nothing.
            extra = None if probe else ["--component-log-level", "wasm:info"]
            envoys[kind] = start(args.envoy, path, ECDS_ADMIN + offset, "0",
                                 args.work / f"ecds-{kind}.log", 150 + offset, extra)
            targets[kind] = target
        out = config_load.measure(targets, docs, args.load_repeats, args.attache)
        out["ecds_stats"] = {k: e.counters("extension_config_discovery") for k, e in envoys.items()}
        out["rss_kib"] = {k: e.rss_kib() for k, e in envoys.items()}
        if "rendered" in envoys:
            out["filter_log_rendered_10k"] = config_load.filter_load_lines(envoys["rendered"].log, 10_000)
        out["wasm_vms_active"] = {k: e.counters("wasm.envoy.wasm.runtime.v8.active").get(
            "wasm.envoy.wasm.runtime.v8.active") for k, e in envoys.items()}
        # VMs created over the whole series: tells whether an update reuses the VMs.
        out["wasm_vms_created"] = {k: e.counters("wasm.envoy.wasm.runtime.v8.created").get(
            "wasm.envoy.wasm.runtime.v8.created") for k, e in envoys.items()}
        return out
    finally:
        for envoy in envoys.values():
            envoy.stop()


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (EnvoyError, verify.PolicyNotEnforced, load.LoadError, config_load.RenderError,
            documents.RenderError, TimeoutError) as err:
        print(f"bench: {err}", file=sys.stderr)
        sys.exit(1)
