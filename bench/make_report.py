#!/usr/bin/env python3
"""The report and its pictures from the results files, with no benchmark run:
docs/benchmarks.md and docs/benchmarks/*.svg from docs/benchmarks.json,
docs/benchmarks-update.json, bench/results/edit-to-served.json and
bench/results/edit-to-programmed-N.json, one per policy count (a file that is
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
from attache_bench import figures, programmed_report, report  # noqa: E402

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


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", type=Path, default=ROOT / "docs/benchmarks.json")
    p.add_argument("--update", type=Path, default=ROOT / "docs/benchmarks-update.json")
    p.add_argument("--edits", type=Path, default=ROOT / "bench/results/edit-to-served.json")
    p.add_argument("--programmed", type=Path, nargs="*",
                   default=sorted((ROOT / "bench/results").glob("edit-to-programmed-*.json")),
                   help="bench/edit_to_programmed.py --out-json files")
    p.add_argument("--out-dir", type=Path, default=ROOT / "docs/benchmarks")
    p.add_argument("--out-md", type=Path, default=ROOT / "docs/benchmarks.md")
    args = p.parse_args()
    results = read(args.bench)
    if not results:
        print(f"figures: no results at {args.bench}", file=sys.stderr)
        return 1
    drawn = figures.draw(results, read(args.update), read(args.edits))
    runs = {r["meta"]["routes"]: r for r in map(read, args.programmed) if r}
    programmed = programmed_report.draw(runs)
    if programmed:
        drawn["edit-to-programmed.svg"] = programmed
    else:
        (args.out_dir / "edit-to-programmed.svg").unlink(missing_ok=True)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for name, svg in drawn.items():
        (args.out_dir / name).write_text(svg)
    # A picture the results no longer support must not stay beside the report.
    for stale in set(MAKES) - set(drawn):
        (args.out_dir / stale).unlink(missing_ok=True)
    shown = [name for name in drawn if name in MAKES]
    text = report.markdown(results, sorted(shown), absent(drawn))
    extra = programmed_report.section(runs, bool(programmed))
    args.out_md.write_text(text + ("\n" + "\n".join(extra) if extra else ""))
    print(f"figures: {', '.join(sorted(drawn))} in {args.out_dir}; {args.out_md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
