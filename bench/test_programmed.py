#!/usr/bin/env python3
"""Unit tests of bench/attache_bench/programmed.py (bench/edit_to_programmed.py's pure parts).
Run alone or through bench/test_bench.py, which imports them."""

import json
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from attache_bench import programmed as pg, programmed_report  # noqa: E402


def policy(*conditions: dict) -> dict:
    return {"status": {"ancestors": [{"conditions": [c]} for c in conditions]}}


TRUE_3 = {"type": "Programmed", "status": "True", "observedGeneration": 2,
          "message": "WasmPlugin shop/attache-edge applied; served by 3 of 3 replicas"}
PENDING = {"type": "Programmed", "status": "False", "reason": "Pending", "observedGeneration": 2,
           "message": "served by 2 of 3 replicas of Gateway shop/edge"}


class Conditions(unittest.TestCase):
    def test_served_by_all_needs_every_ancestor_true_for_every_replica(self):
        self.assertTrue(pg.served_by_all(policy(TRUE_3), 3))
        self.assertTrue(pg.served_by_all(policy(TRUE_3, TRUE_3), 3, generation=2))
        self.assertFalse(pg.served_by_all(policy(TRUE_3, PENDING), 3))
        self.assertFalse(pg.served_by_all(policy(TRUE_3), 4), "3 of 3 is not all of 4")
        self.assertFalse(pg.served_by_all(policy(TRUE_3), 3, generation=3), "an older generation's status")
        self.assertFalse(pg.served_by_all({}, 3))
        self.assertFalse(pg.served_by_all(policy({"type": "Accepted", "status": "True"}), 3))


class WriteLog(unittest.TestCase):
    TEXT = "\n".join(json.dumps(r) for r in [
        {"at": 10.0, "verb": "apply", "resource": "wasmplugins", "name": "attache-edge", "subresource": None},
        {"at": 10.5, "verb": "patch", "resource": "routepolicies", "name": "p1", "subresource": "status"},
        {"lagged": 3},
        {"at": 11.0, "verb": "patch", "resource": "routepolicies", "name": "p1", "subresource": "status"},
        {"at": 12.0, "verb": "patch", "resource": "routepolicies", "name": "p2", "subresource": "status"},
        {"at": 12.5, "verb": "patch", "resource": "routepolicies", "name": "p2", "subresource": None},
        {"total_writes": 9},
    ]) + "\n"

    def test_lines_lagged_records_and_the_exact_total_are_apart(self):
        log = pg.read_write_log(self.TEXT)
        self.assertEqual(len(log["writes"]), 5)
        self.assertEqual(log["lagged"], 3)
        self.assertEqual(log["total"], 9)

    def test_status_writes_count_the_window_per_name_status_only(self):
        writes = pg.read_write_log(self.TEXT)["writes"]
        self.assertEqual(pg.status_writes(writes, 0, 100), {"p1": 2, "p2": 1})
        self.assertEqual(pg.status_writes(writes, 11.0, 12.0), {"p1": 1}, "[since, until)")
        self.assertEqual(pg.status_writes(writes, 13, 20), {})

    def test_the_last_status_write_is_the_servers_time_for_what_the_watcher_saw(self):
        writes = pg.read_write_log(self.TEXT)["writes"]
        self.assertEqual(pg.last_status_write(writes, 0, 11.5, "p1"), 11.0)
        self.assertEqual(pg.last_status_write(writes, 0, 100), 12.0, "any policy; not the non-status patch")
        self.assertIsNone(pg.last_status_write(writes, 0, 100, "p3"))


class Stats(unittest.TestCase):
    def test_the_document_id_gauge_is_read_whatever_envoy_prefixes(self):
        text = ("wasmcustom.attache.config.document_id: 4503599627370495\n"
                "wasmcustom.attache.configs.accepted: 2\n"
                "http.http.rq_total: 7\n")
        self.assertEqual(pg.document_ids(text), [4503599627370495])
        self.assertEqual(pg.document_ids("attache.config.document_id: \n"), [])


class Summaries(unittest.TestCase):
    def test_summary_and_shares(self):
        s = pg.summary([300.0, 100.0, 200.0])
        self.assertEqual((s["p50"], s["max"], s["n"]), (200.0, 300.0, 3))
        self.assertEqual(pg.summary([]), {})
        edits = [{"edit_to_applied_ms": 300, "applied_to_served_ms": 100, "served_to_status_ms": 600},
                 {"edit_to_applied_ms": 300, "applied_to_served_ms": 100, "served_to_status_ms": 600}]
        shares = pg.leg_shares(edits)
        self.assertAlmostEqual(shares["edit_to_applied_ms"], 0.3)
        self.assertAlmostEqual(sum(shares.values()), 1.0)


class Section(unittest.TestCase):
    @staticmethod
    def run_of(routes: int, edits: list[dict]) -> dict:
        return {"meta": {"routes": routes, "replicas": 3, "date": "d", "idle_s": 30, "settle_s": 5},
                "cold_start": {"converged_s": 1.5, "status_writes_to_converged": routes,
                               "status_writes_settled": routes, "max_writes_per_policy": 1},
                "idle": {"status_writes": 0, "writes": 0}, "write_log": {"lagged": 0},
                "edits": edits}

    def test_the_largest_run_with_edits_is_quoted_and_every_run_converges_in_the_table(self):
        edit = {"edit_to_applied_ms": 300, "applied_to_served_ms": 100, "served_to_status_ms": 1300,
                "edit_to_programmed_ms": 1700, "status_writes_edited": 2, "status_writes_others": 0}
        runs = {1000: self.run_of(1000, []), 10000: self.run_of(10000, [edit])}
        text = "\n".join(programmed_report.section(runs, drawn=False))
        self.assertIn("10,000 routes, 3 replicas", text)
        self.assertIn("target p50 <= 1500 ms: not met", text)
        self.assertIn("| 1,000 | 1.50 s | 1,000 |", text)
        self.assertIn("published by gateway-api-bench (not measured here)", text.lower())
        self.assertNotIn("edit-to-programmed.svg", text, "no picture drawn, none linked")
        self.assertEqual(programmed_report.section({}, drawn=False), [])


if __name__ == "__main__":
    unittest.main()
