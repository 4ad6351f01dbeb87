"""Issue 44's parts of the harness: the dynamic module's variants (the module and the empty
module as the floor), the report's module section and the module's update verdicts. Pure:
no Envoy. bench/test_bench.py runs these too."""

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from attache_bench import envoy_configs, module_report, report, updates, variants  # noqa: E402


class ModuleVariants(unittest.TestCase):
    """Issue 44: the dynamic module gets the same document as the .wasm, through
    the dynamic-modules filter, and the report judges it against native and Lua."""

    def test_a_module_variant_loads_the_so_with_the_document_as_filter_config(self):
        module = variants.select(["module-name"])[0]
        paths = {"attache": Path("/w/attache_filter.wasm"), "module": Path("/m/libattache_module.so")}
        [f] = envoy_configs.http_filters(module, paths, '{"schemaVersion":2}')
        self.assertEqual(f["name"], "envoy.filters.http.dynamic_modules")
        config = f["typed_config"]
        self.assertEqual(config["@type"], envoy_configs.MODULE_TYPE)
        self.assertEqual(config["dynamic_module_config"]["module"]["local"]["filename"],
                         "/m/libattache_module.so")
        self.assertEqual(config["filter_config"]["value"], '{"schemaVersion":2}')
        wasm = variants.select(["attache-name"])[0]
        [w] = envoy_configs.http_filters(wasm, paths, '{"schemaVersion":2}')
        self.assertEqual(w["typed_config"]["config"]["configuration"], config["filter_config"])

    def test_module_variants_match_by_name_or_fallback_as_the_wasm_ones(self):
        by_key = {v.key: v for v in variants.ALL}
        self.assertEqual(by_key["module-name"].envoy_route_name, by_key["attache-name"].envoy_route_name)
        self.assertNotEqual(by_key["module-fallback"].envoy_route_name, by_key["module-name"].envoy_route_name)
        self.assertFalse(by_key["module-fallback"].by_name)
        self.assertEqual(by_key["module-istio-10k"].extra["istio_table"], 1000)

    def test_the_report_judges_the_module_against_native_and_lua(self):
        def rounds(*us):
            return {"rounds": [{"sched_us_per_req": u} for u in us]}
        results = {"variants": {"native": rounds(100, 100), "lua": rounds(150, 150),
                                "module-name": rounds(104, 104), "attache-name": rounds(126, 126)}}
        lines = report._module_lines(results)
        self.assertTrue(any("vs native): 1.04x" in l and "**met**" in l for l in lines), lines)
        self.assertTrue(any("vs Lua): 0.69x" in l and "**met**" in l for l in lines), lines)
        results["variants"]["module-name"] = rounds(110, 110)
        lines = report._module_lines(results)
        self.assertTrue(any("vs native): 1.10x" in l and "**not met**" in l for l in lines), lines)


    def test_the_empty_module_loads_its_own_so_with_no_document_and_enforces_nothing(self):
        empty = variants.select(["empty-module"])[0]
        paths = {"module": Path("/m/libattache_module.so"), "empty-module": Path("/m/libempty_module.so")}
        [f] = envoy_configs.http_filters(empty, paths, '{"schemaVersion":2}')
        config = f["typed_config"]
        self.assertEqual(config["dynamic_module_config"]["module"]["local"]["filename"], "/m/libempty_module.so")
        self.assertEqual(config["filter_config"]["value"], "")
        self.assertFalse(empty.enforces_policy)
        self.assertNotIn("request_headers_to_add", envoy_configs.route(empty))

    def test_the_module_section_splits_the_distance_from_native_at_the_empty_module(self):
        def rounds(*us):
            return {"label": "x", "kind": "attache", "extra": {"module": True},
                    "rounds": [{"sched_us_per_req": u, "cpu_us_per_req": u} for u in us]}
        results = {"meta": {"command": "python3 bench/bench.py --variants ..."},
                   "variants": {"native": rounds(100, 100), "empty-module": rounds(110, 108),
                                "module-name": rounds(121, 113.4)}}
        lines = module_report.section(results, drawn=False)
        self.assertIn("- The empty module vs native (what any module filter costs): 1.09x (rounds 1.08-1.10x).",
                      lines)
        self.assertTrue(any(l.startswith("- The module vs the empty module") and "1.08x" in l for l in lines), lines)
        self.assertNotIn("module-per-request.svg", "\n".join(lines))
        del results["variants"]["module-name"], results["variants"]["empty-module"]
        results["variants"]["native"]["extra"] = {}
        self.assertEqual(module_report.section(results, drawn=False), [])


    def test_the_module_section_reports_its_update_run_only_when_it_went_through_the_module(self):
        f = {"p99_ms": 2.0}
        update = {"meta": {"filter": "dynamic-module", "command": "update_bench.py --module m.so"},
                  "summary": {"10000": {"figures": {"steady": f},
                                        "ecds": {"served": 1.0, "p99": 1.1, "max_excess_ms": 3.0}}}}
        lines = module_report.update_lines(update)
        self.assertTrue(any(l.startswith("- 10,000 routes: steady p99 2.00 ms") and "p99 <= 1.5x **met**" in l
                            for l in lines), lines)
        update["meta"]["filter"] = "wasm"
        self.assertEqual(module_report.update_lines(update), [])

    def test_an_update_run_through_the_module_is_judged_by_the_module_targets(self):
        summary = {"1000": {"figures": {}, "ecds": {"served": 0.995, "p50": 1.0, "p99": 1.2, "max_excess_ms": 12.0}}}
        text = updates.markdown(summary, {"filter": "dynamic-module"})
        self.assertIn("served >= 0.99x **met**; p99 <= 1.5x **met**; slowest <= steady + 10 ms **not met**", text)
        self.assertNotIn("Dynamic module targets", updates.markdown(summary, {"filter": "wasm"}))


if __name__ == "__main__":
    unittest.main()
