#!/usr/bin/env python3
"""The report and its pictures from the results files, with no benchmark run:
docs/benchmarks.md and docs/benchmarks/*.svg from docs/benchmarks.json,
docs/benchmarks-update.json, bench/results/edit-to-served.json and
bench/results/edit-to-programmed-N.json, one per policy count, and
bench/results/module-run.json and update-module.json, the dynamic module's own runs (a file that is
absent draws no picture, and the report says which run would make it).

  .venv/bin/python bench/make_report.py     # bench/run.sh runs it after the runs

Needs matplotlib (scripts/setup.sh, which bench/run.sh runs, installs it into .venv).
"""

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from attache_bench import figures, module_report, programmed_report, report  # noqa: E402

# Why each picture may be missing, and what makes it.
MAKES = {
    "per-request.svg": "docs/benchmarks.json has no rounds (`bench/run.sh`)",
    "routes.svg": "docs/benchmarks.json has fewer than two route counts of one kind (`bench/run.sh`)",
    "updates.svg": "docs/benchmarks-update.json has no runs (`bench/run.sh --update`)",
    "edit-to-served.svg": "bench/results/edit-to-served.json holds no edits yet "
                          "(`bench/edit_to_served.py ... --out-json bench/results/edit-to-served.json`)",
}


def read(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


def absent(drawn) -> dict[str, str]:
    """Why each picture not drawn is missing."""
    return {name: why for name, why in MAKES.items() if name not in drawn}


# Pictures drawn by a section of their own, beside the ones MAKES lists.
SECTION_PICTURES = ("edit-to-programmed.svg", "module-per-request.svg")


def generate(bench: Path, update: Path, edits: Path, programmed: list[Path],
             module_run: Path, module_update: Path) -> tuple[dict[str, str], str] | None:
    """({picture name: SVG}, the report's Markdown) from the results files alone; None
    when the run of record is absent. Needs matplotlib."""
    results = read(bench)
    if not results:
        return None
    drawn = figures.draw(results, read(update), read(edits))
    runs = {r["meta"]["routes"]: r for r in map(read, programmed) if r}
    module = read(module_run)
    for name, svg in (("edit-to-programmed.svg", programmed_report.draw(runs)),
                      ("module-per-request.svg", module_report.draw(module))):
        if svg:
            drawn[name] = svg
    shown = [name for name in drawn if name in MAKES]
    text = report.markdown(results, sorted(shown), absent(drawn))
    extra = (programmed_report.section(runs, "edit-to-programmed.svg" in drawn)
             + module_report.section(module, "module-per-request.svg" in drawn, read(module_update)))
    return drawn, text + ("\n" + "\n".join(extra) if extra else "")


def defaults() -> dict:
    return {"bench": ROOT / "docs/benchmarks.json", "update": ROOT / "docs/benchmarks-update.json",
            "edits": ROOT / "bench/results/edit-to-served.json",
            "programmed": sorted((ROOT / "bench/results").glob("edit-to-programmed-*.json")),
            "module_run": ROOT / "bench/results/module-run.json",
            "module_update": ROOT / "bench/results/update-module.json"}


def main() -> int:
    d = defaults()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", type=Path, default=d["bench"])
    p.add_argument("--update", type=Path, default=d["update"])
    p.add_argument("--edits", type=Path, default=d["edits"])
    p.add_argument("--programmed", type=Path, nargs="*", default=d["programmed"],
                   help="bench/edit_to_programmed.py --out-json files")
    p.add_argument("--module-run", type=Path, default=d["module_run"],
                   help="the dynamic module's run (bench/bench.py --out-json)")
    p.add_argument("--module-update", type=Path, default=d["module_update"],
                   help="the module's update run (bench/update_bench.py --module --out-json)")
    p.add_argument("--out-dir", type=Path, default=ROOT / "docs/benchmarks")
    p.add_argument("--out-md", type=Path, default=ROOT / "docs/benchmarks.md")
    args = p.parse_args()
    made = generate(args.bench, args.update, args.edits, args.programmed, args.module_run, args.module_update)
    if made is None:
        print(f"figures: no results at {args.bench}", file=sys.stderr)
        return 1
    drawn, text = made
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for name, svg in drawn.items():
        (args.out_dir / name).write_text(svg)
    # A picture the results no longer support must not stay beside the report.
    for stale in (set(MAKES) | set(SECTION_PICTURES)) - set(drawn):
        (args.out_dir / stale).unlink(missing_ok=True)
    args.out_md.write_text(text)
    print(f"figures: {', '.join(sorted(drawn))} in {args.out_dir}; {args.out_md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
