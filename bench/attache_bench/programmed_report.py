"""Issue 45's figures in docs/benchmarks.md, from bench/results/edit-to-programmed-N.json
(bench/edit_to_programmed.py --out-json): edit -> Programmed True with its legs, the status
writes per edit and while idle, and cold-start convergence beside the figures published by
gateway-api-bench (which were not measured here, and are quoted as published)."""

import statistics

from . import programmed as pg

# Published by gateway-api-bench for 1,000 routes: (seconds to converge, status writes).
PUBLISHED_1000 = (("Istio", 2, 311), ("kgateway", 12, 323), ("Envoy Gateway", 23, 1383))
P50_TARGET_MS = 1500
LEGS = (("edit_to_applied_ms", "edit -> applied"), ("applied_to_served_ms", "applied -> served by all replicas"),
        ("served_to_status_ms", "served -> status written"))


def edits_run(runs: dict[int, dict]) -> dict:
    """The run with edits and the most routes (the target names 10,000)."""
    with_edits = [runs[n] for n in sorted(runs) if runs[n].get("edits")]
    return with_edits[-1] if with_edits else {}


def edit_ms(runs: dict[int, dict]) -> list[float]:
    return [float(e["edit_to_programmed_ms"]) for e in edits_run(runs).get("edits", [])]


def draw(runs: dict[int, dict]) -> str | None:
    """A histogram of edit -> Programmed (None when no run has edits)."""
    from .figures import _pyplot, _svg
    ms = edit_ms(runs)
    if not ms:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.hist(ms, bins=min(20, max(5, len(ms))), color="#2ca02c", alpha=0.8)
    ax.axvline(statistics.median(ms), color="black", linestyle="--", label=f"median {statistics.median(ms):.0f} ms")
    ax.axvline(P50_TARGET_MS, color="grey", linestyle=":", label=f"target p50 {P50_TARGET_MS} ms")
    routes = edits_run(runs)["meta"]["routes"]
    ax.set_xlabel("policy edit to Programmed True written, ms")
    ax.set_ylabel("edits")
    ax.set_title(f"Edit to Programmed, {routes:,} routes, 3 real Envoys ({len(ms)} edits)")
    ax.legend(fontsize=8)
    svg = _svg(fig)
    plt.close(fig)
    return svg


def section(runs: dict[int, dict], drawn: bool) -> list[str]:
    """The report's section; empty when no run exists."""
    if not runs:
        return []
    lines = ["## Programmed means served (issue 45)", "",
             "`attache controller` with confirmation on, the stand-in API server and three real Envoys "
             "as the Gateway's replicas, istiod emulated by writing each one's ECDS file "
             "(bench/edit_to_programmed.py).", ""]
    run = edits_run(runs)
    if run:
        edits = run["edits"]
        ms = [e["edit_to_programmed_ms"] for e in edits]
        s = pg.summary(ms)
        shares = pg.leg_shares(edits)
        if drawn:
            lines += ["![Edit to Programmed](benchmarks/edit-to-programmed.svg)", ""]
        lines += [f"- Edit -> `Programmed: True` written, {run['meta']['routes']:,} routes, {run['meta']['replicas']} "
                  f"replicas ({run['meta']['date']}): p50 {s['p50']:.0f} ms, p90 {s['p90']:.0f} ms, max "
                  f"{s['max']:.0f} ms over {s['n']} edits; target p50 <= {P50_TARGET_MS} ms: "
                  f"{'met' if s['p50'] <= P50_TARGET_MS else 'not met'}."]
        lines += ["- Legs (median, and share of the legs' medians' sum): " + "; ".join(
            f"{label} {statistics.median(e[key] for e in edits):.0f} ms ({100 * shares[key]:.0f}%)"
            for key, label in LEGS) + "."]
        lines += [f"- Status writes per edit: on the edited policy {sorted({e['status_writes_edited'] for e in edits})}, "
                  f"on the Gateway's other policies {sorted({e['status_writes_others'] for e in edits})}."]
    lines += ["", "| policies | cold start: all statuses correct | status writes to converge | "
              f"status writes until quiet | most writes on one policy | status writes while idle |",
              "|---|---|---|---|---|---|"]
    for n in sorted(runs):
        c, idle, meta = runs[n]["cold_start"], runs[n]["idle"], runs[n]["meta"]
        lines.append(f"| {n:,} | {c['converged_s']:.2f} s | {c['status_writes_to_converged']:,} | "
                     f"{c['status_writes_settled']:,} | {c['max_writes_per_policy']} | "
                     f"{idle['status_writes']} in {meta['idle_s']:g} s |")
    lost = [n for n in runs if runs[n]["write_log"]["lagged"]]
    if lost:
        lines += ["", f"The write log lost records at {', '.join(map(str, lost))} policies: those counts are lower bounds."]
    lines += ["", "Published by gateway-api-bench (not measured here), 1,000 routes, time to converge / status "
              "writes: " + "; ".join(f"{name} {s} s / {w:,}" for name, s, w in PUBLISHED_1000) + ".", ""]
    return lines
