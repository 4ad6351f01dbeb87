"""The report's pictures (docs/benchmarks/*.svg), drawn from the results files alone.

Each picture is a pure function of the JSON the runs wrote (docs/benchmarks.json,
docs/benchmarks-update.json, bench/results/edit-to-served.json): the same files give
the same bytes, and a figure whose data is absent is not drawn (the report then says
so) rather than drawn from anything else. The series are picked here, without
matplotlib, so that bench/test_bench.py checks them on any machine; `draw` needs
matplotlib (scripts/setup.sh, which bench/run.sh runs, installs it into .venv).
"""

import io
import statistics

# The variants of one line of "cost against the number of routes": the same filter
# and lookup at 10, 1,000 and 10,000 routes. A variant that did not run is left out.
ROUTE_SERIES = (
    ("attache, by route name", ("attache-name", "attache-1k", "attache-10k")),
    ("attache, Gateway API fallback", ("attache-fallback", "attache-fallback-10k")),
    ("native Envoy, a route per rule", ("native-rendered-1k", "native-rendered-10k")),
    ("attache, a route per rule", ("attache-rendered-1k", "attache-rendered-10k")),
)
# Colours by what a variant runs (the table's groups).
KIND_COLOURS = {"none": "#7f7f7f", "native": "#1f77b4", "lua": "#9467bd",
                "empty-wasm": "#2ca02c", "empty-module": "#bcbd22", "attache": "#d62728"}
UPDATE_KINDS = (("steady", "no edits", "#7f7f7f"), ("ecds", "a policy edit a second (the filter)", "#d62728"),
                ("rds", "a route edit a second (native RDS)", "#1f77b4"))


def per_request(results: dict) -> list[dict]:
    """Each variant's Envoy CPU per request: the median and every round, in run order."""
    out = []
    for key, v in results.get("variants", {}).items():
        rounds = [r["cpu_us_per_req"] for r in v.get("rounds", []) if r.get("cpu_us_per_req")]
        if rounds:
            out.append({"key": key, "label": v["label"], "kind": v["kind"],
                        "median": statistics.median(rounds), "rounds": rounds})
    return out


def against_routes(results: dict) -> list[tuple[str, list[tuple[int, float, list[float]]]]]:
    """(series, [(routes, median CPU µs/req, rounds)]) for each series with two points or more."""
    by_key = {x["key"]: x for x in per_request(results)}
    variants = results.get("variants", {})
    out = []
    for label, keys in ROUTE_SERIES:
        points = [(variants[k]["routes"], by_key[k]["median"], by_key[k]["rounds"]) for k in keys if k in by_key]
        if len(points) >= 2:
            out.append((label, sorted(points)))
    return out


def update_runs(update: dict) -> dict[int, dict[str, list[dict]]]:
    """{routes: {run kind: [run]}} of the update benchmark, routes in order; each run
    has `p99_ms` and, when the harness recorded it, `p99_ms_by_second`."""
    return {int(n): {k: list(runs) for k, runs in kinds.items()}
            for n, kinds in sorted(update.get("runs", {}).items(), key=lambda kv: int(kv[0]))}


def edit_to_served(edits: dict) -> list[float]:
    """Every edit's time from the API write to the first request served with it, in ms."""
    return [float(e["edit_to_served_ms"]) for e in edits.get("edits", [])]


def _svg(fig) -> str:
    out = io.StringIO()
    # No date in the file, and ids from a fixed salt: the same results, the same bytes.
    fig.savefig(out, format="svg", metadata={"Date": None}, bbox_inches="tight")
    return out.getvalue()


def _pyplot():
    import matplotlib

    matplotlib.use("svg")
    matplotlib.rcParams["svg.hashsalt"] = "attache-bench"
    matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: smaller, and searchable
    import matplotlib.pyplot as plt

    return plt


def draw_per_request(rows: list[dict]) -> str:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(rows) + 1.2))
    ys = list(range(len(rows)))[::-1]
    for y, row in zip(ys, rows):
        ax.barh(y, row["median"], color=KIND_COLOURS.get(row["kind"], "#8c564b"), alpha=0.8)
        ax.plot(row["rounds"], [y] * len(row["rounds"]), "|", color="black", markersize=6)
    ax.set_yticks(ys, [r["label"] for r in rows], fontsize=8)
    ax.set_xlabel("Envoy CPU per request, µs (bar: median; ticks: each round)")
    ax.set_title("What a request costs Envoy, by variant")
    ax.grid(axis="x", alpha=0.3)
    svg = _svg(fig)
    plt.close(fig)
    return svg


def draw_against_routes(series: list) -> str:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    for label, points in series:
        xs = [p[0] for p in points]
        ax.plot(xs, [p[1] for p in points], "o-", label=label)
        for x, _, rounds in points:
            ax.plot([x] * len(rounds), rounds, "_", color="black", alpha=0.5)
    ax.set_xscale("log")
    ax.set_xlabel("routes in the Gateway")
    ax.set_ylabel("Envoy CPU per request, µs (median)")
    ax.set_ylim(bottom=0)
    ax.set_title("Cost against the number of routes")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    svg = _svg(fig)
    plt.close(fig)
    return svg


def draw_updates(runs: dict[int, dict[str, list[dict]]], meta: dict) -> str:
    """p99 second by second through the edits where the runs recorded it; else the
    p99 of each whole run, round by round (the title says which)."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(runs), figsize=(5 * len(runs), 3.6), squeeze=False)
    by_second = all("p99_ms_by_second" in r for kinds in runs.values() for rs in kinds.values() for r in rs)
    for ax, (routes, kinds) in zip(axes[0], runs.items()):
        for kind, label, colour in UPDATE_KINDS:
            for i, run in enumerate(kinds.get(kind, [])):
                # A second with no response is a gap in the line, not a zero.
                ys = [float("nan") if y is None else y for y in run["p99_ms_by_second"]] if by_second \
                    else [run["p99_ms"]]
                xs = range(1, len(ys) + 1) if by_second else [i + 1]
                ax.plot(xs, ys, "-" if by_second else "o", color=colour, alpha=0.6,
                        label=label if i == 0 else None)
        ax.set_title(f"{routes:,} routes")
        ax.set_xlabel("second of the run" if by_second else "round")
        ax.set_ylabel("p99 latency, ms")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    # One legend for both panels, below them, where it hides no point.
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, bbox_to_anchor=(0.5, -0.13))
    rate, seconds = meta.get("rate"), meta.get("seconds")
    fig.suptitle("p99 " + ("second by second" if by_second else f"of each {seconds:g} s run, round by round")
                 + (f" at {rate:,} requests/s" if rate else "") + ", with and without edits", y=1.04)
    svg = _svg(fig)
    plt.close(fig)
    return svg


def draw_edit_to_served(ms: list[float]) -> str:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.hist(ms, bins=min(20, max(5, len(ms))), color="#d62728", alpha=0.8)
    ax.axvline(statistics.median(ms), color="black", linestyle="--", label=f"median {statistics.median(ms):.0f} ms")
    ax.set_xlabel("policy edit to the first request served with it, ms")
    ax.set_ylabel("edits")
    ax.set_title(f"The controller's edit-to-served time ({len(ms)} edits)")
    ax.legend(fontsize=8)
    svg = _svg(fig)
    plt.close(fig)
    return svg


def draw(results: dict, update: dict, edits: dict) -> dict[str, str]:
    """{file name: SVG} of every picture whose data the results hold."""
    out = {}
    rows = per_request(results)
    if rows:
        out["per-request.svg"] = draw_per_request(rows)
    series = against_routes(results)
    if series:
        out["routes.svg"] = draw_against_routes(series)
    runs = update_runs(update)
    if runs:
        out["updates.svg"] = draw_updates(runs, update.get("meta", {}))
    ms = edit_to_served(edits)
    if ms:
        out["edit-to-served.svg"] = draw_edit_to_served(ms)
    return out
