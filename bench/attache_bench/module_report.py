"""Issue 44's section of docs/benchmarks.md: the filter as an Envoy dynamic module, from its
own run (bench/results/module-run.json, `bench/bench.py --out-json`), which interleaves the
module with native route configuration, Lua, the empty Wasm filter, the `.wasm` and the empty
module (the floor of Envoy's dynamic-module filter). The run of record of the rest of the
report predates the module, so its variants are reported from this run, with its command."""

from . import figures, report, updates

# The module's own work against the floor of any module, and the floor against native: the
# two parts of the module's distance from native configuration.
SPLIT = (("empty-module", "native", "the empty module vs native (what any module filter costs)"),
         ("module-name", "empty-module", "the module vs the empty module (the filter's own work and callbacks)"))


def split_lines(results: dict) -> list[str]:
    out = []
    for key, base, label in SPLIT:
        r = report.paired_ratio(results, key, base)
        if r:
            out.append(f"- {label[0].upper()}{label[1:]}: {r[0]:.2f}x (rounds {r[1]:.2f}-{r[2]:.2f}x).")
    return out


def draw(results: dict) -> str | None:
    rows = figures.per_request(results)
    return figures.draw_per_request(rows) if rows else None


def update_lines(update: dict) -> list[str]:
    """Issue 44's update targets, from `bench/update_bench.py --module` (its own run)."""
    summary, meta = update.get("summary"), update.get("meta", {})
    if not summary or meta.get("filter") != "dynamic-module":
        return []
    lines = ["### A policy edit a second, through the module", "",
             f"    {meta.get('command', '')}", ""]
    for routes, entry in sorted(summary.items(), key=lambda kv: int(kv[0])):
        steady, ecds = entry["figures"].get("steady"), entry.get("ecds")
        if steady and ecds:
            lines.append(f"- {int(routes):,} routes: steady p99 {steady['p99_ms']:.2f} ms; with edits served "
                         f"{ecds['served']:.3f}x, p99 {ecds['p99']:.2f}x, slowest {ecds['max_excess_ms']:+.1f} ms. "
                         + updates.module_verdict(ecds))
    return lines + [""]


def section(results: dict, drawn: bool, update: dict | None = None) -> list[str]:
    """The report's section; empty when the run has no module variant."""
    variants = results.get("variants", {})
    if not any(v.get("extra", {}).get("module") for v in variants.values()):
        return []
    meta = results.get("meta", {})
    lines = ["## The dynamic module (issue 44)", "",
             f"Its own run: {meta.get('date', '?')}, Envoy {meta.get('envoy_version', '?')}, "
             f"{meta.get('rounds', '?')} interleaved rounds of {meta.get('seconds', '?')} s; "
             "ratios are medians of per-round ratios of Envoy CPU per request.", "",
             f"    {meta.get('command', '')}", ""]
    lines += report._module_lines(results) + split_lines(results) + [""]
    lines += ["| variant | Envoy CPU µs/req (median) | rounds |", "|---|---:|---|"]
    for row in figures.per_request(results):
        rounds = ", ".join(f"{r:.1f}" for r in row["rounds"])
        lines.append(f"| {row['label']} | {row['median']:.1f} | {rounds} |")
    if drawn:
        lines += ["", "![Per-request cost of the module run](benchmarks/module-per-request.svg)"]
    return lines + [""] + update_lines(update or {})
