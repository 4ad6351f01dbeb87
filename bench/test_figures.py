#!/usr/bin/env python3
"""Tests of the report and its pictures (bench/attache_bench/figures.py, report.py):
run by bench/test_bench.py, which imports them, or alone.

The series and the report's text are checked on any machine. The SVGs need
matplotlib; where it is missing (a machine that has not run bench/run.sh's setup)
those tests are skipped with the reason printed, and `.venv/bin/python
bench/test_bench.py` runs them.
"""

import copy
import json
import statistics
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from attache_bench import figures, report, updates  # noqa: E402
import make_report  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

try:
    import matplotlib  # noqa: F401

    HAVE_MATPLOTLIB = True
except ImportError:
    HAVE_MATPLOTLIB = False


def variant(label, kind, routes, cpus):
    rounds = [{"cpu_us_per_req": c, "rps": 1.0, "p50_ms": 1.0, "p99_ms": 2.0} for c in cpus]
    return {"label": label, "kind": kind, "routes": routes, "rounds": rounds,
            "median": {"cpu_us_per_req": statistics.median(cpus)}}


def results():
    return {"variants": {
        "baseline": variant("no filter", "none", 10, [90.0, 92.0, 94.0]),
        "attache-name": variant("by name, 10", "attache", 10, [120.0, 130.0, 125.0]),
        "attache-10k": variant("by name, 10k", "attache", 10_000, [131.0, 133.0, 135.0]),
        "attache-fallback": variant("fallback, 10", "attache", 10, [140.0, 141.0, 142.0]),
    }}


def update(by_second=False):
    def run(p99):
        out = {"p99_ms": p99}
        if by_second:
            out["p99_ms_by_second"] = [p99 - 1, p99, p99 + 1]
        return out
    return {"meta": {"rate": 1000, "seconds": 20.0},
            "runs": {"10000": {"steady": [run(3.0)], "ecds": [run(5.0)]}, "1000": {"steady": [run(2.5)]}}}


class Series(unittest.TestCase):
    def test_each_variant_has_its_median_and_every_round(self):
        rows = {r["key"]: r for r in figures.per_request(results())}
        self.assertEqual(rows["attache-name"]["median"], 125.0)
        self.assertEqual(rows["attache-name"]["rounds"], [120.0, 130.0, 125.0])
        changed = results()
        changed["variants"]["attache-name"]["rounds"][0]["cpu_us_per_req"] = 200.0
        self.assertEqual({r["key"]: r for r in figures.per_request(changed)}["attache-name"]["median"], 130.0)

    def test_a_variant_without_rounds_is_left_out(self):
        r = results()
        r["variants"]["attache-name"]["rounds"] = []
        self.assertNotIn("attache-name", [x["key"] for x in figures.per_request(r)])

    def test_a_line_against_routes_needs_two_route_counts(self):
        series = dict(figures.against_routes(results()))
        self.assertEqual([(n, m) for n, m, _ in series["attache, by route name"]], [(10, 125.0), (10_000, 133.0)])
        # The fallback ran at 10 routes only here: one point is no line.
        self.assertNotIn("attache, Gateway API fallback", series)

    def test_update_runs_are_keyed_by_route_count_in_order(self):
        runs = figures.update_runs(update())
        self.assertEqual(list(runs), [1000, 10000])
        self.assertEqual(runs[10000]["ecds"][0]["p99_ms"], 5.0)

    def test_edit_to_served_reads_what_edit_to_served_py_writes(self):
        import edit_to_served

        written = edit_to_served.record(10_000, [(7, 0.080, 0.600, 0.680), (9, 0.070, 0.650, 0.720)], "now")
        self.assertEqual(figures.edit_to_served(json.loads(json.dumps(written))), [680.0, 720.0])
        self.assertEqual(written["edits"][0]["route"], 7)

    def test_edit_to_served_reads_every_edit(self):
        edits = {"edits": [{"edit_to_served_ms": 600}, {"edit_to_served_ms": 700.5}]}
        self.assertEqual(figures.edit_to_served(edits), [600.0, 700.5])
        self.assertEqual(figures.edit_to_served({}), [])


class SecondBySecond(unittest.TestCase):
    """The update runs' p99 second by second, from hey's CSV (bench/update_bench.py)."""

    HEADER = "response-time,DNS+dialup,DNS,Request-write,Response-delay,Response-read,status-code,offset\n"

    def csv(self, rows):
        return self.HEADER + "".join(f"{ms / 1e3:.4f},0,0,0,0,0,{code},{at:.4f}\n" for ms, code, at in rows)

    def test_hey_percentiles_follow_hey(self):
        values = [float(v) for v in range(1, 101)]
        self.assertEqual(updates.hey_percentile(values, 99), 100.0)
        self.assertEqual(updates.hey_percentile(values, 50), 51.0)
        self.assertEqual(updates.hey_percentile([3.0], 99), 3.0)

    def test_each_second_has_its_own_p99(self):
        rows = [(1.0 + i % 10, 200, 0.01 * i) for i in range(100)]  # second 0: 1-10 ms
        rows += [(20.0, 503, 1.5)] + [(2.0, 200, 1.0 + 0.01 * i) for i in range(99)]  # second 1
        parsed = updates.parse_hey_csv(self.csv(rows), 3.0)
        self.assertEqual(parsed["p99_ms_by_second"], [10.0, 20.0, None])
        self.assertEqual(parsed["codes"], {200: 199, 503: 1})
        self.assertEqual(parsed["max_ms"], 20.0)
        self.assertAlmostEqual(parsed["rps"], 200 / 3.0)
        self.assertEqual(parsed["p99_ms"], updates.hey_percentile(sorted(r[0] for r in rows), 99))
        with self.assertRaises(ValueError):
            updates.parse_hey_csv(self.HEADER, 3.0)

    def test_the_csv_run_asks_hey_for_csv_and_medians_skip_the_series(self):
        cmd = updates.rate_command(10300, "h0.example.com", "/r0/b", 20, 1000, 10, csv=True)
        self.assertEqual(cmd[-3:], ["-o", "csv", "http://127.0.0.1:10300/r0/b"])
        self.assertNotIn("-o", updates.rate_command(10300, "h", "/", 20, 1000, 10))
        runs = [{"p99_ms": 3.0, "p99_ms_by_second": [3.0]}, {"p99_ms": 5.0, "p99_ms_by_second": [5.0]}]
        self.assertEqual(updates.medians(runs), {"p99_ms": 4.0})


class Report(unittest.TestCase):
    def real(self):
        return json.loads((ROOT / "docs/benchmarks.json").read_text())

    def test_the_summary_quotes_the_results(self):
        r = self.real()
        cpu = {k: v["median"]["cpu_us_per_req"] for k, v in r["variants"].items()}
        text = " ".join(report.summary(r))
        self.assertIn(f"{cpu['attache-name']:.0f} µs of CPU", text)
        self.assertIn(f"{cpu['empty-wasm']:.0f} µs with an empty Wasm filter", text)
        r["variants"]["attache-name"]["median"]["cpu_us_per_req"] = 999.0
        self.assertIn("999 µs of CPU", " ".join(report.summary(r)))
        del r["variants"]["attache-name"]
        self.assertEqual(report.summary(r), [])

    def test_the_report_links_the_pictures_drawn_and_says_why_the_others_are_not(self):
        text = report.markdown(self.real(), ["per-request.svg"], {"edit-to-served.svg": "no edits yet"})
        self.assertIn("](benchmarks/per-request.svg)", text)
        self.assertNotIn("benchmarks/routes.svg", text)
        self.assertIn("The controller's edit-to-served time: not drawn, no edits yet", text)

    def test_the_history_is_linked_not_copied(self):
        text = report.markdown(self.real())
        findings = (ROOT / "bench/findings.md").read_text()
        first_heading = next(line for line in findings.splitlines() if line.startswith("## "))
        self.assertNotIn(first_heading, text)
        self.assertIn("(../bench/findings.md)", text)
        self.assertLess(len(text.splitlines()), 250, "the report stays short enough to read")


class Committed(unittest.TestCase):
    """docs/benchmarks.md and its pictures are what bench/make_report.py makes of the
    committed results: nothing in them was written by hand."""

    @unittest.skipUnless(HAVE_MATPLOTLIB, "matplotlib is not installed: run with .venv/bin/python (scripts/setup.sh installs it)")
    def test_the_committed_report_and_pictures_are_the_generated_ones(self):
        drawn, text = make_report.generate(**make_report.defaults())
        self.assertEqual(text, (ROOT / "docs/benchmarks.md").read_text(), "run .venv/bin/python bench/make_report.py")
        committed = {p.name: p.read_text() for p in (ROOT / "docs/benchmarks").glob("*.svg")}
        self.assertEqual(sorted(drawn), sorted(committed))
        for name, svg in drawn.items():
            self.assertEqual(svg, committed[name], f"docs/benchmarks/{name}: run bench/make_report.py")


@unittest.skipUnless(HAVE_MATPLOTLIB, "matplotlib is not installed: run with .venv/bin/python (scripts/setup.sh installs it)")
class Pictures(unittest.TestCase):
    def test_the_same_results_draw_the_same_bytes(self):
        a = figures.draw(results(), update(), {})
        b = figures.draw(copy.deepcopy(results()), update(), {})
        self.assertEqual(sorted(a), ["per-request.svg", "routes.svg", "updates.svg"])
        self.assertEqual(a, b)

    def test_a_changed_figure_changes_the_picture(self):
        changed = results()
        changed["variants"]["attache-10k"]["rounds"][1]["cpu_us_per_req"] = 400.0
        self.assertNotEqual(figures.draw(results(), {}, {})["routes.svg"],
                            figures.draw(changed, {}, {})["routes.svg"])

    def test_the_pictures_name_what_they_show(self):
        svgs = figures.draw(results(), update(), {"edits": [{"edit_to_served_ms": 650}] * 3})
        self.assertIn("by name, 10k", svgs["per-request.svg"])
        self.assertIn("round by round", svgs["updates.svg"])
        self.assertIn("at 1,000 requests/s", svgs["updates.svg"])
        self.assertIn("median 650 ms", svgs["edit-to-served.svg"])
        self.assertIn("second by second", figures.draw({}, update(by_second=True), {})["updates.svg"])

    def test_no_data_draws_no_picture(self):
        self.assertEqual(figures.draw({}, {}, {}), {})


if __name__ == "__main__":
    unittest.main()
