"""docs/benchmarks.md from the raw results: a summary, the pictures, medians, ratios and
the targets. The session-by-session history is bench/findings.md, linked, not copied: the
report is what a user reads, the findings are what the engineers learnt."""

import statistics
from pathlib import Path

# Where the pictures are, relative to docs/benchmarks.md, and what each shows.
PICTURES = (
    ("per-request.svg", "Envoy CPU per request by variant",
     "What one request costs Envoy's worker, by variant: no filter, native route configuration, "
     "Lua, an empty Wasm filter (the floor any Wasm filter pays) and the filter in each mode."),
    ("routes.svg", "Envoy CPU per request against the number of routes",
     "The same request as the Gateway grows from 10 to 10,000 routes: the filter's lookup by route "
     "name and by Gateway API matching, and a route table of one Envoy route per rule, native and "
     "with the filter."),
    ("updates.svg", "p99 latency through one edit a second",
     "p99 latency at a steady rate with no edits, with one policy edit a second (the "
     "filter reloads its configuration) and with one route edit a second (Envoy's own RDS update)."),
    ("edit-to-served.svg", "The controller's edit-to-served time",
     "From a policy edit written to the API server to the first request served with it, through "
     "`attache controller`, Envoy and the filter (bench/edit_to_served.py)."),
)



def _filter_log_lines(loads: list[dict]) -> list[str]:
    """The filter's own account of its 10,000-route loads (its log line per VM)."""
    if not loads:
        return []
    ms = [x["ms"] for x in loads]
    fresh = [x["mib"] for x in loads if x["generation_1"]]
    kept = [x["mib"] for x in loads if not x["generation_1"]]
    line = (f"- The filter's own account of the same loads (its log line, each VM; docs/filter.md): "
            f"{statistics.median(ms):.0f} ms in the VM (median of {len(ms)} loads, {min(ms):.0f}-{max(ms):.0f} ms); "
            f"target < {LOAD_MS_MAX} ms per load: {_met(statistics.median(ms) < LOAD_MS_MAX)}. Envoy loads each "
            f"update in a fresh VM on the main thread first, then in the serving VMs, one after the other, so "
            f"about two such loads lie between the rename and the first request served.")
    mem = "- Wasm linear memory after a 10,000-route load, as the VM reports it:"
    if fresh:
        mem += f" {max(fresh):.1f} MiB in a fresh VM (target < {VM_MIB_MAX} MiB: {_met(max(fresh) < VM_MIB_MAX)});"
    if kept:
        mem += (f" {max(kept):.1f} MiB in a VM that loads an update while it still serves the previous "
                f"generation (both are in memory during the swap, and Wasm memory never shrinks): "
                f"{_met(max(kept) < VM_MIB_MAX)}.")
    return [line, mem.rstrip(";") + ("" if mem.endswith(".") else ".")]

def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def _machine_state(meta: dict) -> str:
    """What the machine was doing besides the benchmark, where the run recorded it."""
    out = ""
    if meta.get("load_average_at_start") is not None:
        out += f" Load average {meta['load_average_at_start']:.2f} at the start."
    steal = meta.get("steal_share")
    if steal:
        out += (f" The hypervisor took {100 * steal['median']:.1f}% of the CPU time in the median run "
                f"(most {100 * steal['max']:.1f}%; /proc/stat steal, {steal['runs']} runs).")
    return out


def _ratio(value: float, floor: float | None) -> str:
    return f"{value / floor:.2f}x" if floor else "-"


def table(results: dict) -> str:
    v = results["variants"]
    cpu = {k: x["median"]["cpu_us_per_req"] for k, x in v.items()}
    base, floor, native, lua = (cpu.get(k) for k in ("baseline", "empty-wasm", "native", "lua"))
    rows = ["| variant | req/s | p50 ms | p99 ms | Envoy CPU µs/req | sched µs/req | vs baseline | vs empty Wasm | vs native | vs Lua |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for key, x in v.items():
        m = x["median"]
        rows.append(f"| {x['label']} | {m['rps']:.0f} | {m['p50_ms']:.3f} | {m['p99_ms']:.3f} | "
                    f"{m['cpu_us_per_req']:.2f} | {m['sched_us_per_req']:.2f} | {_ratio(cpu[key], base)} | "
                    f"{_ratio(cpu[key], floor)} | {_ratio(cpu[key], native)} | {_ratio(cpu[key], lua)} |")
    return "\n".join(rows)


def paired_ratio(results: dict, key: str, floor: str) -> tuple[float, float, float] | None:
    """Median, min and max over rounds of key/floor within the same round.

    Rounds interleave the variants, so a round's ratio cancels the drift of a shared
    machine that the medians of each variant alone keep.
    """
    v = results["variants"]
    if key not in v or floor not in v:
        return None
    ratios = [a["sched_us_per_req"] / b["sched_us_per_req"]
              for a, b in zip(v[key]["rounds"], v[floor]["rounds"])]
    return statistics.median(ratios), min(ratios), max(ratios)


# Issue 24's targets (issue 12's, the floor tightened to 1.15x), all medians of per-round
# ratios within one run.
FLOOR_MAX, LUA_MAX, SCALE_MAX = 1.15, 1.00, 1.05
# Issue 31: the request path on Istio's layout is held to the same floor and Lua targets,
# each reference run on the same route table. Native configuration of that shape is
# reported beside them without a target: an empty Wasm filter alone costs 1.10-1.16x
# native, which would leave the filter almost nothing (issue 31 dropped that target).
# "No worse than today": the full run of 02:01 UTC (4ee551d; docs/benchmarks.md then).
PREVIOUS_FILTER_LOAD_MS, PREVIOUS_ECDS_BYTES = 58, 981_199
WASM_BYTES_MAX = 400_000
# Fallback matching as an index: 10,000 routes at most 1.2x 10 routes (issue 9).
FALLBACK_SCALE_MAX = 1.20
LOAD_MS_MAX, VM_MIB_MAX, ECDS_BYTES_MAX = 100, 8, 1_000_000


# Issue 44: the dynamic module against native route configuration and Lua.
MODULE_NATIVE_MAX, MODULE_LUA_MAX = 1.05, 0.90


def _module_lines(results: dict) -> list[str]:
    out = []
    for key, base, label, limit in (
            ("module-name", "native", "by route name, 10 routes, vs native", MODULE_NATIVE_MAX),
            ("module-name", "lua", "by route name, 10 routes, vs Lua", MODULE_LUA_MAX),
            ("module-istio-10k", "native-istio-10k", "Istio layout, vs native on that table", MODULE_NATIVE_MAX)):
        r = paired_ratio(results, key, base)
        if r:
            out.append(f"- Dynamic module ({label}): {r[0]:.2f}x (rounds {r[1]:.2f}-{r[2]:.2f}x); "
                       f"target <= {limit:.2f}x: {_met(r[0] <= limit)}.")
    r = paired_ratio(results, "module-name", "attache-name")
    if r:
        out.append(f"- Dynamic module vs the .wasm, by route name, 10 routes: {r[0]:.2f}x "
                   f"(rounds {r[1]:.2f}-{r[2]:.2f}x).")
    return out


def _met(ok: bool) -> str:
    return f"**{'met' if ok else 'not met'}**"


def _targets(results: dict) -> list[str]:
    out = []
    for key, label in (("attache-name", "by route name, 10 routes"),
                       ("attache-fallback", "Gateway API fallback, 10 routes")):
        r = paired_ratio(results, key, "empty-wasm")
        if r:
            out.append(f"- Filter ({label}) CPU per request vs the empty-Wasm floor: {r[0]:.2f}x "
                       f"(median of per-round ratios; rounds {r[1]:.2f}-{r[2]:.2f}x); target <= {FLOOR_MAX:.2f}x: "
                       f"{_met(r[0] <= FLOOR_MAX)}.")
    for key, label in (("attache-native-strip", "design A/B: client control headers stripped natively"),
                       ("attache-lean", "design A/B: native strip, timeouts and retries in the route")):
        r = paired_ratio(results, key, "empty-wasm")
        if r:
            out.append(f"- Filter ({label}) vs the empty-Wasm floor: {r[0]:.2f}x "
                       f"(rounds {r[1]:.2f}-{r[2]:.2f}x); target <= {FLOOR_MAX:.2f}x: "
                       f"{_met(r[0] <= FLOOR_MAX)}.")
    r = paired_ratio(results, "attache-name", "native")
    if r:
        out.append(f"- Filter vs native: {r[0]:.2f}x (rounds {r[1]:.2f}-{r[2]:.2f}x).")
    out.extend(_issue_24_lines(results))
    r = paired_ratio(results, "attache-name", "lua")
    if r:
        out.append(f"- Filter (by route name, 10 routes) vs Lua: {r[0]:.2f}x (rounds {r[1]:.2f}-{r[2]:.2f}x); "
                   f"target <= {LUA_MAX:.2f}x: {_met(r[0] <= LUA_MAX)}.")
    out.extend(_istio_layout_lines(results))
    out.extend(_module_lines(results))
    for key, label in (("attache-1k", "1,000"), ("attache-10k", "10,000"),
                       ("attache-fallback-10k", "10,000 (fallback matching)")):
        base = "attache-fallback" if "fallback" in key else "attache-name"
        r = paired_ratio(results, key, base)
        if r:
            limit = FALLBACK_SCALE_MAX if "fallback" in key else SCALE_MAX
            target = f"; target <= {limit:.2f}x: {_met(r[0] <= limit)}"
            out.append(f"- {label} routes vs 10 routes, CPU per request: {r[0]:.2f}x "
                       f"(rounds {r[1]:.2f}-{r[2]:.2f}x){target}.")
    for size in ("1k", "10k"):
        r = paired_ratio(results, f"attache-rendered-{size}", f"native-rendered-{size}")
        if r:
            out.append(f"- Rendered route table ({size} Envoy routes): the filter vs native route configuration "
                       f"of the same size, CPU per request: {r[0]:.2f}x (rounds {r[1]:.2f}-{r[2]:.2f}x).")
    load = results.get("config_load")
    if load:
        med = load["median_ms"]
        rss, vms = load.get("rss_kib", {}), load.get("wasm_vms_active", {})
        dp_ms = load.get("filter_ms_rendered_10k")
        if dp_ms is not None:
            out.append(f"- Filter load time, 10,000-route data-plane document: {dp_ms:.0f} ms; target no worse "
                       f"than the {PREVIOUS_FILTER_LOAD_MS} ms of the 02:01 UTC run: "
                       f"{_met(dp_ms <= PREVIOUS_FILTER_LOAD_MS)}.")
            out.append(f"- 10,000-route data-plane document (the {load['rendered_10k_configuration_bytes'] / 1e6:.2f} MB "
                       f"configuration `attache render ecds` writes): served {med['rendered_10k']:.0f} ms after "
                       f"the rename (median); the probe given the same bytes: {med['rendered_probe_10k']:.0f} ms; "
                       f"the filter's own work: {dp_ms:.0f} ms; target < {LOAD_MS_MAX} ms of filter time: "
                       f"{_met(dp_ms < LOAD_MS_MAX)}.")
        rendered = load.get("rendered_10k_bytes")
        if rendered:
            out.append(f"- ECDS bytes of the 10,000-route document as `attache render ecds` writes it: "
                       f"{rendered / 1e6:.2f} MB; target < 1 MB: {_met(rendered < ECDS_BYTES_MAX)}; no worse "
                       f"than the {PREVIOUS_ECDS_BYTES} bytes of the 02:01 UTC run: "
                       f"{_met(rendered <= PREVIOUS_ECDS_BYTES)}.")
        if rss.get("rendered") and rss.get("rendered_probe") and vms.get("rendered"):
            per_vm = (rss["rendered"] - rss["rendered_probe"]) / 1024 / vms["rendered"]
            out.append(f"- Filter memory per VM after the 10,000-route data-plane loads: {per_vm:.1f} MiB "
                       f"(Envoy RSS minus the probe's given the same bytes, per VM); target < "
                       f"{VM_MIB_MAX} MiB: {_met(per_vm < VM_MIB_MAX)}.")
        out.extend(_filter_log_lines(load.get("filter_log_rendered_10k") or []))
        out.append(f"- For comparison, the same data-plane encoding in an ECDS JSON file the bench writes "
                   f"({load['document_10k_bytes'] / 1e6:.2f} MB of configuration): filter work "
                   f"{load['filter_ms_10k']:.0f} ms (served {med['attache_10k']:.0f} ms, floor "
                   f"{med['probe_10k']:.0f} ms).")
        if rss.get("attache") and rss.get("probe") and vms.get("attache"):
            per_vm = (rss["attache"] - rss["probe"]) / 1024 / vms["attache"]
            out.append(f"  Memory per VM after those loads: {per_vm:.1f} MiB.")
    size = results["meta"]["wasm_bytes"].get("attache")
    if size:
        out.append(f"- attache .wasm: {size / 1024:.0f} KiB ({size} bytes); target < {WASM_BYTES_MAX} bytes: "
                   f"{_met(size < WASM_BYTES_MAX)}. Empty filter: "
                   f"{results['meta']['wasm_bytes']['empty'] / 1024:.0f} KiB.")
        others = {k: b for k, b in results["meta"]["wasm_bytes"].items() if k.startswith("attache-")}
        if others:
            out.append("  Other opt-levels of the filter: " + "; ".join(
                f"{k.removeprefix('attache-')}: {b} bytes ({'within' if b < WASM_BYTES_MAX else 'over'} budget)"
                for k, b in sorted(others.items())) + ".")
    return out


def _istio_layout_lines(results: dict) -> list[str]:
    """Issue 31's request path: the filter on Istio's layout against the empty Wasm filter
    and Lua, each on the same route table."""
    out = []
    for floor, label, limit in (("empty-wasm-istio-10k", "the empty Wasm", FLOOR_MAX),
                                ("lua-istio-10k", "Lua", LUA_MAX)):
        r = paired_ratio(results, "attache-istio-10k", floor)
        if r:
            out.append(f"- Istio layout (10,000 routes over 1,000 virtual hosts): the filter vs {label} on the "
                       f"same route table, CPU per request: {r[0]:.2f}x (rounds {r[1]:.2f}-{r[2]:.2f}x); "
                       f"target <= {limit:.2f}x: {_met(r[0] <= limit)}.")
    return out


def _issue_24_lines(results: dict) -> list[str]:
    """Istio's layout, the opt-level A/B and what fewer exports would save."""
    out = []
    r = paired_ratio(results, "attache-istio-10k", "native-istio-10k")
    if r:
        out.append(f"- Istio layout (10,000 routes over 1,000 virtual hosts `<host>:<port>`): the filter vs "
                   f"native route configuration of the same shape, CPU per request: {r[0]:.2f}x "
                   f"(rounds {r[1]:.2f}-{r[2]:.2f}x); no target (issue 31 measures this layout against "
                   f"the empty Wasm and Lua, above).")
        one = paired_ratio(results, "attache-rendered-10k", "native-rendered-10k")
        if one:
            out.append(f"  Beside it, one virtual host of 10,000 routes (the rendered table): {one[0]:.2f}x "
                       f"(rounds {one[1]:.2f}-{one[2]:.2f}x).")
    for key, label in (("attache-name-s", "s"), ("attache-name-o2", "2"), ("attache-name-o3", "3")):
        r = paired_ratio(results, key, "attache-name")
        if r:
            out.append(f"- Opt-level A/B: the filter at opt-level {label} vs as shipped (by route name, 10 routes): "
                       f"{r[0]:.2f}x (rounds {r[1]:.2f}-{r[2]:.2f}x).")
    r = paired_ratio(results, "empty-wasm-raw", "empty-wasm")
    if r:
        v = results["variants"]
        saved = statistics.median(b["sched_us_per_req"] - a["sched_us_per_req"]
                                  for a, b in zip(v["empty-wasm-raw"]["rounds"], v["empty-wasm"]["rounds"]))
        out.append(f"- Fewer exports: an empty filter exporting only the two header callbacks vs the SDK's empty "
                   f"filter: {r[0]:.2f}x (rounds {r[1]:.2f}-{r[2]:.2f}x), {saved:.1f} µs per request saved "
                   f"(median of per-round differences).")
    r = paired_ratio(results, "attache-name", "empty-wasm-raw-ctx")
    if r:
        v = results["variants"]
        own = statistics.median(a["sched_us_per_req"] - b["sched_us_per_req"]
                                for a, b in zip(v["attache-name"]["rounds"], v["empty-wasm-raw-ctx"]["rounds"]))
        out.append(f"- The filter's own work: by route name (10 routes) vs an empty filter exporting the same "
                   f"callbacks: {r[0]:.2f}x (rounds {r[1]:.2f}-{r[2]:.2f}x), {own:.1f} µs per request "
                   f"(median of per-round differences).")
    return out


def _memory(results: dict) -> list[str]:
    v = results["variants"]
    if "empty-wasm" not in v:
        return []
    floor = v["empty-wasm"]["rss_kib"]
    rows = ["| variant | Envoy RSS MiB | minus empty Wasm, MiB | Wasm VMs | per VM, MiB |", "|---|---:|---:|---:|---:|"]
    for key, x in v.items():
        vms = x.get("wasm_vms_active") or 0
        delta = (x["rss_kib"] - floor) / 1024
        per_vm = f"{delta / vms:.1f}" if vms and x["kind"] == "attache" else "-"
        rows.append(f"| {x['label']} | {x['rss_kib'] / 1024:.1f} | {delta:+.1f} | {vms} | {per_vm} |")
    return rows


def summary(results: dict) -> list[str]:
    """Three sentences with the figures a user asks for first, read from the results."""
    cpu = {k: x["median"]["cpu_us_per_req"] for k, x in results["variants"].items()}
    if "attache-name" not in cpu:
        return []
    line = (f"In this run a request through the filter (found by route name, 10 routes) cost Envoy "
            f"{cpu['attache-name']:.0f} µs of CPU")
    refs = [(k, what) for k, what in (("baseline", "no filter"), ("empty-wasm", "an empty Wasm filter"),
                                      ("native", "native route configuration"), ("lua", "a Lua filter"))
            if k in cpu]
    if refs:
        line += ", against " + ", ".join(f"{cpu[k]:.0f} µs with {what}" for k, what in refs)
    out = [line + "."]
    if "attache-10k" in cpu:
        out.append(f"At 10,000 routes it cost {cpu['attache-10k']:.0f} µs (the pictures below show every "
                   "round; the targets give the ratios within rounds).")
    return out


def _pictures(present: list[str], absent: dict[str, str]) -> list[str]:
    lines = []
    for name, alt, what in PICTURES:
        if name in present:
            lines += [f"![{alt}](benchmarks/{name})", "", what, ""]
        elif name in absent:
            lines += [f"- {alt}: not drawn, {absent[name]}", ""]
    return lines


def markdown(results: dict, present: list[str] = (), absent: dict[str, str] | None = None) -> str:
    """The report. `present` names the pictures drawn beside it (docs/benchmarks/),
    `absent` says why each other picture is not."""
    meta = results["meta"]
    lines = [
        "# Benchmarks",
        "",
        "<!-- Generated by bench/run.sh from docs/benchmarks.json, docs/benchmarks-update.json",
        "     and bench/results/; edit bench/attache_bench/report.py, not this file. -->",
        "",
        "What Attaché's filter costs Envoy, measured on one machine: a summary, pictures, the",
        "current table and the targets. [docs/benchmarks-update.md](benchmarks-update.md) has the",
        "update runs in full; [bench/findings.md](../bench/findings.md) has the history, session by",
        "session: what each change measured and why the design is what it is.",
        "",
    ]
    lines += summary(results) and [" ".join(summary(results)), ""]
    pictures = _pictures(list(present), absent or {})
    if pictures:
        lines += ["## Pictures", ""] + pictures
    lines += [
        "## What each figure is",
        "",
        "- A *variant* is one Envoy configuration under the same load: `baseline` has no filter",
        "  and no policy; `native` sets the same timeouts, retries and headers in Envoy's own",
        "  route configuration; `Lua` does the filter's work in a Lua filter; the *empty Wasm*",
        "  filter does nothing, so it is the floor any Wasm filter pays; `attache` is the filter,",
        "  finding its entry by Envoy's route name or, for a route name it does not know, by",
        "  Gateway API matching (*fallback*).",
        "- *Envoy CPU µs/req* is the figure to read: the CPU time of the Envoy under test over a",
        "  run, divided by the requests it served. req/s and latency also measure the load",
        "  generator and the machine, which other work shares.",
        "- Ratios (`vs baseline`, the targets) are taken within one round, where the variants run",
        "  back to back, and the median of those per-round ratios is reported: absolute figures",
        "  drift between rounds on this shared virtual machine, ratios much less (bench/findings.md,",
        "  \"How to read these numbers\").",
        "- hey reports latency in 0.1 ms steps.",
        "",
        "## Run",
        "",
        f"- Date: {meta['date']}",
        f"- Envoy: {meta['envoy_version']}",
        f"- Machine: {meta['machine']}; {meta['cpu_model']}.{_machine_state(meta)}",
        f"- Command: `{meta['command']}`",
        f"- Load: hey, {meta['connections']} connections, {meta['seconds']:g} s per run, "
        f"{meta['rounds']} interleaved rounds; medians below, every round in {meta.get('json', 'the JSON')}.",
        "- Envoy under test: `--concurrency 1`, `taskset -c 0`. hey and the upstream Envoy "
        "(direct_response): `taskset -c 1`.",
        "- Documents: " + "; ".join(f"{n} routes: {src}" for n, src in meta["documents"].items()),
        "",
        "## Per request",
        "",
        table(results),
        "",
        "CPU µs/req is Envoy's utime+stime from /proc/<pid>/stat over the run, divided by the",
        "requests Envoy counted (`http.ingress.downstream_rq_completed`); it ticks at 10 ms,",
        "so over a run it resolves about 0.3%. `sched` is the same from the per-thread",
        "scheduler clock (/proc/<pid>/task/*/schedstat, ns), used for the ratios in the targets.",
        "",
    ]
    if results.get("skipped"):
        lines += ["Skipped: " + "; ".join(f"{k} ({why})" for k, why in results["skipped"].items()), ""]
    targets = _targets(results)
    if targets:
        lines += ["## Targets", ""] + targets + [""]
    memory = _memory(results)
    if memory:
        lines += ["## Memory", "",
                  "Envoy's RSS after the load rounds (/proc/<pid>/status VmRSS). V8 allocates Wasm",
                  "memory outside Envoy's heap, so admin /memory does not see it; RSS does. The",
                  "difference from the empty-Wasm Envoy, divided by the active VMs",
                  "(`wasm.envoy.wasm.runtime.v8.active`), bounds the filter's memory per VM from above:",
                  "these Envoys carry the document inline in their bootstrap, so the difference also",
                  "holds Envoy's own copies of it. The configuration-load section compares against a",
                  "probe given the same bytes, which isolates the filter's own share.", ""] + memory + [""]
    load = results.get("config_load")
    if load:
        names = {
            "attache_10": "attache, 10 routes (data-plane encoding, JSON file)",
            "attache_10k": "attache, 10,000 routes (data-plane encoding, JSON file)",
            "probe_10": "probe (floor), same bytes as 10 routes",
            "probe_10k": "probe (floor), same bytes as 10,000 routes",
            "rendered_10k": "attache, 10,000 routes, data-plane document as `attache render ecds` writes it (YAML)",
            "rendered_probe_10k": "probe (floor), same configuration string as the rendered 10,000 routes",
        }
        lines += ["## Configuration load (ECDS)", "",
                  "From the rename of the ECDS file to the first request served with the new "
                  "configuration, polled with back-to-back requests; series interleaved "
                  "(bench/attache_bench/config_load.py says how the floor is taken).", "",
                  "| configuration | median ms | every step, ms |", "|---|---:|---|"]
        for key, values in load["steps_ms"].items():
            lines.append(f"| {names.get(key, key)} | {load['median_ms'][key]:.0f} | "
                         f"{', '.join(f'{x:.0f}' for x in values)} |")
        rss = load.get("rss_kib", {})
        vms = load.get("wasm_vms_active", {})
        if rss.get("attache") and rss.get("probe") and vms.get("attache"):
            per_vm = (rss["attache"] - rss["probe"]) / 1024 / vms["attache"]
            lines += ["", f"After these loads the filter's Envoy holds {rss['attache'] / 1024:.0f} MiB RSS and "
                      f"the probe's {rss['probe'] / 1024:.0f} MiB, with {vms['attache']} Wasm VMs each: "
                      f"the filter's own memory is about {per_vm:.0f} MiB per VM at 10,000 routes "
                      "(Wasm linear memory only grows, so this is the high-water mark of parsing "
                      "and indexing plus the index kept)."]
        lines.append("")
    return "\n".join(lines) + "\n"
