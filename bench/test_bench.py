#!/usr/bin/env python3
"""Unit tests of the harness's pure parts: `python3 bench/test_bench.py`.

With ATTACHE_BIN set to a built `attache`, also checks that the document the harness
builds by hand is the one the real generator resolves from the same manifests.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_programmed import Conditions, Section, Stats, Summaries, WriteLog  # noqa: E402,F401 (run here too)
from test_module import ModuleVariants  # noqa: E402,F401 (run here too)
from attache_bench import config_load, documents, envoy_configs, load, machine, policy, report, updates, variants  # noqa: E402

HEY_OUTPUT = """
Summary:
  Total:\t1.0031 secs
  Slowest:\t0.0120 secs
  Fastest:\t0.0002 secs
  Average:\t0.0009 secs
  Requests/sec:\t8745.1234

Latency distribution:
  10% in 0.0004 secs
  50% in 0.0008 secs
  99% in 0.0031 secs

Status code distribution:
  [200]\t8700 responses
  [503]\t45 responses
"""


class HeyParsing(unittest.TestCase):
    def test_reads_rate_percentiles_and_codes(self):
        parsed = load.parse_hey(HEY_OUTPUT)
        self.assertAlmostEqual(parsed["rps"], 8745.1234)
        self.assertAlmostEqual(parsed["p50_ms"], 0.8)
        self.assertAlmostEqual(parsed["p99_ms"], 3.1)
        self.assertEqual(parsed["codes"], {200: 8700, 503: 45})

    def test_missing_figures_are_an_error_not_a_zero(self):
        with self.assertRaises(load.LoadError):
            load.parse_hey("Summary:\n  Total: 1 secs\n")


class Documents(unittest.TestCase):
    def test_target_entry_carries_the_whole_policy(self):
        doc = documents.built_here(10)
        target = next(r for r in doc["routes"] if r["name"] == policy.entry_name(9))
        self.assertEqual(target["timeouts"], {"requestMs": 10_000, "backendRequestMs": 2_000})
        self.assertEqual(target["retry"], {"attempts": 2, "codes": [502, 503],
                                           "retryOn": ["connect-failure", "refused-stream", "reset"]})
        self.assertEqual(len(target["requestHeaders"]["set"]), 3)
        self.assertEqual(target["requestHeaders"]["remove"], ["x-bench-remove"])
        self.assertEqual(len(target["responseHeaders"]["set"]), 2)

    def test_marker_changes_only_the_target_and_can_drop_provenance(self):
        doc = documents.built_here(12)
        for entry in doc["routes"]:
            entry["sources"] = {"timeouts.requestMs": "somewhere"}
        marked = config_load._marked(doc, 7, strip_sources=True)
        values = {r["name"]: r["responseHeaders"]["set"][-1]["value"] for r in marked["routes"]}
        self.assertEqual(values[policy.entry_name(9)], "gen-7")
        self.assertEqual(sum(v == "gen-7" for v in values.values()), 1)
        self.assertFalse(any("sources" in r for r in marked["routes"]))
        self.assertIn("sources", doc["routes"][0], "the input document is left alone")

    def test_probe_gets_a_marker_line_then_the_same_document(self):
        doc = documents.built_here(10)
        text = config_load.configuration(config_load.Series("p", "probe", 10), doc, 3)
        first, rest = text.split("\n", 1)
        self.assertEqual(first, "marker:gen-3")
        attache = config_load.configuration(config_load.Series("a", "attache", 10), doc, 3)
        self.assertEqual(rest, attache)

    @unittest.skipUnless(os.environ.get("ATTACHE_BIN"), "set ATTACHE_BIN to compare with the generator")
    def test_hand_built_document_equals_the_resolved_one(self):
        with tempfile.TemporaryDirectory() as tmp:
            manifests = Path(tmp) / "m.yaml"
            manifests.write_text(documents.manifests_yaml(5))
            out = subprocess.run([os.environ["ATTACHE_BIN"], "resolve", "-f", str(manifests)],
                                 capture_output=True, text=True, check=True).stdout
        resolved = json.loads(out)
        for entry in resolved["routes"]:
            entry.pop("sources", None)
        self.assertEqual(resolved, documents.built_here(5))


class DesignVariants(unittest.TestCase):
    def test_lean_document_trusts_and_drops_what_the_route_carries(self):
        doc = documents.built_here(3)
        lean = documents.for_variant(doc, {"trust": True, "native_timeouts_retries": True})
        self.assertTrue(lean["options"]["trustClientControlHeaders"])
        self.assertFalse(any("timeouts" in r or "retry" in r for r in lean["routes"]))
        self.assertIn("timeouts", doc["routes"][0], "the resolved document is left alone")
        self.assertIs(documents.for_variant(doc, {}), doc)

    def test_lean_envoy_strips_natively_and_routes_carry_the_policy(self):
        (lean,) = variants.select(["attache-lean"])
        cfg = envoy_configs.bootstrap(lean, 1, 2, 3, {"attache": Path("/x.wasm")}, "{}")
        hcm = cfg["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
        removed = [m["remove"] for m in
                   hcm["early_header_mutation_extensions"][0]["typed_config"]["mutations"]]
        self.assertEqual(removed, envoy_configs.CLIENT_CONTROL_HEADERS)
        route = hcm["route_config"]["virtual_hosts"][0]["routes"][0]
        self.assertEqual(route["route"]["retry_policy"]["num_retries"], policy.RETRY_ATTEMPTS)


class EnvoyConfigs(unittest.TestCase):
    def test_native_route_carries_the_policy_and_others_do_not(self):
        native = envoy_configs.route(variants.select(["native"])[0])
        self.assertEqual(native["route"]["retry_policy"]["retriable_status_codes"], [502, 503])
        self.assertEqual(native["route"]["retry_policy"]["per_try_timeout"], "2.0s")
        self.assertEqual(native["route"]["timeout"], "10.0s")
        self.assertEqual(native["request_headers_to_remove"], ["x-bench-remove"])
        baseline = envoy_configs.route(variants.select(["baseline"])[0])
        self.assertEqual(baseline["route"], {"cluster": "upstream"})

    def test_route_name_is_the_entry_name_only_when_matching_by_name(self):
        by_name, fallback = variants.select(["attache-10k", "attache-fallback-10k"])
        self.assertEqual(by_name.envoy_route_name, policy.entry_name(9_999))
        self.assertNotIn(fallback.envoy_route_name,
                         {r["name"] for r in documents.built_here(10_000)["routes"]})

    def test_lua_sets_every_header_the_filter_sets(self):
        code = envoy_configs._lua_code()
        for name, value in policy.REQUEST_SET + policy.RESPONSE_SET + policy.CONTROL_HEADERS:
            self.assertIn(f'h:replace("{name}", "{value}")', code)
        self.assertIn('h:remove("x-bench-remove")', code)


class RenderedTable(unittest.TestCase):
    RENDERED = {"name": "http", "virtual_hosts": [{"name": "bench.example.com", "domains": ["bench.example.com"],
                "routes": [{"name": policy.entry_name(i), "match": {"path_separated_prefix": policy.path_prefix(i)},
                            "route": {"cluster": "bench/upstream/80", "timeout": "0s"}} for i in range(3)]}]}

    def variant(self, kind):
        return next(v for v in variants.ALL if v.key == f"{kind}-rendered-1k")

    def test_every_route_goes_upstream_and_only_native_carries_the_policy(self):
        native = envoy_configs.rendered_route_config(self.variant("native"), self.RENDERED)
        filtered = envoy_configs.rendered_route_config(self.variant("attache"), self.RENDERED)
        for config, has_policy in ((native, True), (filtered, False)):
            routes = config["virtual_hosts"][0]["routes"]
            self.assertEqual([r["name"] for r in routes], [policy.entry_name(i) for i in range(3)])
            self.assertTrue(all(r["route"]["cluster"] == "upstream" for r in routes))
            self.assertEqual(all("retry_policy" in r["route"] for r in routes), has_policy)
            self.assertEqual(any("request_headers_to_add" in r for r in routes), has_policy)
        self.assertEqual(self.RENDERED["virtual_hosts"][0]["routes"][0]["route"]["cluster"], "bench/upstream/80")

    def test_the_bootstrap_uses_the_rendered_table(self):
        v = self.variant("attache")
        table = envoy_configs.rendered_route_config(v, self.RENDERED)
        cfg = envoy_configs.bootstrap(v, 1, 2, 3, {"attache": Path("/a.wasm")}, "{}", route_config=table)
        hcm = cfg["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
        self.assertEqual(hcm["route_config"], table)


class IstioLayout(unittest.TestCase):
    def variant(self, kind):
        return next(v for v in variants.ALL if v.key == f"{kind}-istio-10k")

    def test_ten_thousand_routes_over_a_thousand_named_virtual_hosts(self):
        config = envoy_configs.istio_route_config(self.variant("attache"), 1000)
        vhosts = config["virtual_hosts"]
        self.assertEqual(len(vhosts), 1000)
        self.assertTrue(all(len(v["routes"]) == 10 for v in vhosts))
        self.assertTrue(all(v["name"] == f"{v['domains'][0]}:80" for v in vhosts))
        self.assertEqual(len({v["name"] for v in vhosts}), 1000)
        names = [r["name"] for v in vhosts for r in v["routes"]]
        self.assertEqual(names, [policy.entry_name(i) for i in range(10_000)])

    def test_the_loads_host_is_the_virtual_host_of_the_target_route(self):
        last = envoy_configs.istio_route_config(self.variant("attache"), 1000)["virtual_hosts"][-1]
        self.assertIn(policy.HOSTNAME, last["domains"])
        target = policy.target_index(10_000)
        route = next(r for r in last["routes"] if r["name"] == policy.entry_name(target))
        self.assertTrue(policy.request_path(10_000).startswith(route["match"]["prefix"]))

    def test_only_native_carries_the_policy(self):
        for kind, has_policy in (("native", True), ("attache", False)):
            config = envoy_configs.istio_route_config(self.variant(kind), 1000)
            routes = [r for v in config["virtual_hosts"] for r in v["routes"]]
            self.assertTrue(all(("retry_policy" in r["route"]) == has_policy for r in routes), kind)


    def test_the_references_share_the_filters_route_table(self):
        tables = {kind: envoy_configs.istio_route_config(self.variant(kind), 1000)
                  for kind in ("attache", "empty-wasm", "lua")}
        self.assertEqual(tables["empty-wasm"], tables["attache"])
        self.assertEqual(tables["lua"], tables["attache"])
        for kind in ("empty-wasm", "lua"):
            v = self.variant(kind)
            self.assertEqual(v.path, self.variant("attache").path)
            self.assertEqual(v.kind, kind)


class WasmBuilds(unittest.TestCase):
    def test_each_variant_loads_its_own_build(self):
        keys = {v.key: envoy_configs.wasm_key(v) for v in variants.ALL if v.kind in ("attache", "empty-wasm")}
        self.assertEqual(keys["empty-wasm"], "empty")
        self.assertEqual(keys["empty-wasm-raw"], "empty-raw")
        self.assertEqual(keys["empty-wasm-raw-ctx"], "empty-raw-ctx")
        self.assertEqual(keys["attache-name"], "attache")
        self.assertEqual(keys["attache-name-o3"], "attache-o3")
        self.assertEqual({k for k in keys.values() if k.startswith("attache-")},
                         {f"attache-{b}" for b in variants.OPT_LEVEL_PROFILES})
        v = next(v for v in variants.ALL if v.key == "attache-name-o2")
        filters = envoy_configs.http_filters(v, {"attache": Path("/a.wasm"), "attache-o2": Path("/o2.wasm")}, "{}")
        self.assertEqual(filters[0]["typed_config"]["config"]["vm_config"]["code"]["local"]["filename"], "/o2.wasm")


class DataPlaneVariant(unittest.TestCase):
    def test_the_configuration_string_comes_out_of_the_ecds_response(self):
        response = {"resources": [{"typed_config": {"config": {"configuration": {
            "@type": "type.googleapis.com/google.protobuf.StringValue", "value": '{"schemaVersion":2}'}}}}]}
        self.assertEqual(documents.extract_configuration(response), '{"schemaVersion":2}')

    def test_the_filter_gets_the_data_plane_encoding_of_each_document(self):
        doc = documents.built_here(3)
        encoded = documents.data_plane(doc)
        self.assertEqual(encoded["schemaVersion"], 2)
        # One policy and one hostname: one profile, one group, every route in order.
        self.assertEqual(len(encoded["profiles"]), 1)
        self.assertEqual([r["name"] for g in encoded["groups"] for r in g["routes"]],
                         [r["name"] for r in doc["routes"]])
        profile = encoded["profiles"][0]
        self.assertEqual(profile["retry"], doc["routes"][0]["retry"])
        name, value = profile["requestHeaders"]["set"][0]
        first = doc["routes"][0]["requestHeaders"]["set"][0]
        self.assertEqual((encoded["strings"][name], encoded["strings"][value]),
                         (first["name"], first["value"]))
        # The marker makes the target's settings a profile of their own, in a group of its own.
        marked = documents.data_plane(config_load._marked(documents.built_here(10), 5, True))
        self.assertEqual(len(marked["profiles"]), 2)
        target = policy.entry_name(policy.target_index(10))
        self.assertEqual([[r["name"] for r in g["routes"]] for g in marked["groups"]][1:], [[target]])
        self.assertEqual(marked["groups"][1]["profile"], 1)

    def test_no_variant_asks_for_a_schema_1_build(self):
        self.assertNotIn("s-dp", variants.OPT_LEVEL_PROFILES)
        v = next(v for v in variants.ALL if v.key == "attache-name-s")
        self.assertEqual(envoy_configs.wasm_key(v), "attache-s")

    @unittest.skipUnless(os.environ.get("ATTACHE_BIN"), "set ATTACHE_BIN to compare with the generator")
    def test_the_encoding_equals_what_attache_render_ecds_writes(self):
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            source = documents.DocumentSource(Path(os.environ["ATTACHE_BIN"]), work)
            resolved = source.document(12)
            rendered = documents.data_plane_text(Path(os.environ["ATTACHE_BIN"]), work, 12)
        self.assertEqual(source.notes[12], "attache resolve")
        self.assertEqual(documents.data_plane(resolved), json.loads(rendered))


class FilterLoadLog(unittest.TestCase):
    def test_reads_each_load_of_the_size_asked_for_from_envoys_log(self):
        line = ('[2026-11-24 00:54:20.883][23089][info][wasm] [source/extensions/common/wasm/context.cc:1151] '
                'wasm log attache attache: attache: configuration generation {g} (fingerprint 81a526c2) accepted: '
                'gateway "bench/edge", {n} routes, {n} fallback candidates, client control headers stripped; '
                'loaded in {ms} ms, Wasm memory {mib} MiB')
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / "envoy.log"
            log.write_text("\n".join([
                line.format(g=1, n=10, ms="0.4", mib="1.2"),
                line.format(g=1, n=10000, ms="37.9", mib="6.6"),
                "[...][warning][main] unrelated",
                line.format(g=4, n=10000, ms="46.1", mib="10.5"),
            ]))
            loads = config_load.filter_load_lines(log, 10_000)
        self.assertEqual(loads, [{"ms": 37.9, "mib": 6.6, "generation_1": True},
                                 {"ms": 46.1, "mib": 10.5, "generation_1": False}])
        lines = report._filter_log_lines(loads)
        self.assertIn("42 ms in the VM (median of 2 loads, 38-46 ms)", lines[0])
        self.assertIn("6.6 MiB in a fresh VM (target < 8 MiB: **met**)", lines[1])
        self.assertIn("10.5 MiB in a VM that loads an update", lines[1])


class EnvoyLog(unittest.TestCase):
    def test_an_earlier_runs_log_is_gone_before_envoy_starts(self):
        from attache_bench.envoy_proc import Envoy
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / "envoy.log"
            log.write_text("accepted: from an earlier run\n")
            # `true` stands in for Envoy: only the start-up is under test.
            envoy = Envoy(Path("/bin/true"), Path(tmp) / "none.json", 1, "0", log, 999)
            envoy.proc.wait()
            self.assertFalse(log.exists())


class Report(unittest.TestCase):
    def test_ratios_are_against_the_named_variants(self):
        def variant(label, cpu):
            return {"label": label, "kind": "x", "rss_kib": 1024, "wasm_vms_active": None,
                    "median": {"rps": 1.0, "p50_ms": 1.0, "p99_ms": 1.0,
                               "cpu_us_per_req": cpu, "sched_us_per_req": cpu}}
        results = {"variants": {"baseline": variant("b", 50.0), "empty-wasm": variant("e", 100.0),
                                "native": variant("n", 80.0), "lua": variant("l", 125.0),
                                "attache-name": variant("a", 110.0)}}
        row = next(line for line in report.table(results).splitlines() if line.startswith("| a |"))
        self.assertIn("| 2.20x | 1.10x | 1.38x | 0.88x |", row)

    def test_issue_31_holds_istios_layout_to_references_on_the_same_table(self):
        def variant(*sched):
            return {"rounds": [{"sched_us_per_req": s} for s in sched]}
        results = {"variants": {
            "attache-istio-10k": variant(110.0, 120.0, 130.0),
            "empty-wasm-istio-10k": variant(100.0, 100.0, 100.0),
            "lua-istio-10k": variant(100.0, 125.0, 140.0),
            "empty-wasm": variant(1.0, 1.0, 1.0), "lua": variant(1.0, 1.0, 1.0)}}
        lines = report._istio_layout_lines(results)
        self.assertEqual(len(lines), 2)
        self.assertIn("vs the empty Wasm on the same route table, CPU per request: 1.20x (rounds 1.10-1.30x); "
                      "target <= 1.15x: **not met**", lines[0])
        self.assertIn("vs Lua on the same route table, CPU per request: 0.96x (rounds 0.93-1.10x); "
                      "target <= 1.00x: **met**", lines[1])
        del results["variants"]["lua-istio-10k"]
        self.assertEqual(len(report._istio_layout_lines(results)), 1, "a reference that did not run has no line")

    def test_issue_24_targets_pair_each_variant_with_its_own_reference(self):
        def variant(*sched):
            return {"rounds": [{"sched_us_per_req": s} for s in sched]}
        results = {"variants": {
            "native-istio-10k": variant(100.0, 100.0, 100.0), "attache-istio-10k": variant(110.0, 120.0, 130.0),
            "native-rendered-10k": variant(100.0, 100.0, 100.0),
            "attache-rendered-10k": variant(150.0, 150.0, 150.0),
            "attache-name": variant(100.0, 100.0, 100.0), "attache-name-o3": variant(90.0, 95.0, 100.0),
            "empty-wasm": variant(50.0, 60.0, 70.0), "empty-wasm-raw": variant(45.0, 50.0, 70.0),
            "empty-wasm-raw-ctx": variant(80.0, 80.0, 80.0)}}
        lines = "\n".join(report._issue_24_lines(results))
        self.assertIn("same shape, CPU per request: 1.20x (rounds 1.10-1.30x); no target", lines)
        self.assertIn("one virtual host of 10,000 routes (the rendered table): 1.50x", lines)
        self.assertIn("opt-level 3 vs as shipped (by route name, 10 routes): 0.95x (rounds 0.90-1.00x)", lines)
        self.assertIn("5.0 µs per request saved", lines)
        self.assertIn("vs an empty filter exporting the same callbacks: 1.25x (rounds 1.25-1.25x), 20.0 µs", lines)
        self.assertNotIn("opt-level s", lines, "a variant that did not run has no line")



class Machine(unittest.TestCase):
    def test_steal_is_the_share_of_all_ticks_since_the_first_sample(self):
        before = machine.parse_cpu_line("cpu  100 0 50 800 10 0 5 35 7 0")
        after = machine.parse_cpu_line("cpu  200 0 100 1500 10 0 5 85 9 0")
        # user nice system idle iowait irq softirq steal: 1000 -> 1900 ticks, 35 -> 85 stolen;
        # guest (7 -> 9) is inside user already and must not count twice.
        self.assertEqual(before.total, 1000)
        self.assertAlmostEqual(after.steal_share_since(before), 50 / 900)
        self.assertEqual(before.steal_share_since(before), 0.0)
        self.assertIsNone(machine.steal_share(None, after))

    def test_a_line_that_is_not_the_cpu_total_is_refused(self):
        with self.assertRaises(ValueError):
            machine.parse_cpu_line("cpu0 1 2 3 4 5 6 7 8")
        with self.assertRaises(ValueError):
            machine.parse_cpu_line("cpu 1 2 3")

    def test_the_report_says_what_the_machine_did_only_when_it_was_recorded(self):
        self.assertEqual(report._machine_state({}), "")
        text = report._machine_state({"load_average_at_start": 0.5,
                                      "steal_share": {"median": 0.004, "max": 0.11, "runs": 9}})
        self.assertIn("Load average 0.50 at the start.", text)
        self.assertIn("0.4% of the CPU time in the median run (most 11.0%", text)


class Updates(unittest.TestCase):
    """The update benchmark's pure parts (bench/attache_bench/updates.py)."""

    def test_the_gateway_is_gen_distincts(self):
        script = Path(__file__).resolve().parent.parent / "scripts" / "gen_distinct.py"
        out = subprocess.run([sys.executable, str(script), "5"], capture_output=True, text=True, check=True)
        ours = updates.distinct_manifests(5)
        self.assertEqual([json.loads(d) for d in ours.split("\n---\n")],
                         [json.loads(d) for d in out.stdout.split("\n---\n")])

    def test_an_edit_changes_one_policy_or_one_route_only(self):
        base = [json.loads(d) for d in updates.distinct_manifests(50).split("\n---\n")]
        timed = [json.loads(d) for d in updates.distinct_manifests(50, timeout_edit=7, generation=3).split("\n---\n")]
        moved = [json.loads(d) for d in updates.distinct_manifests(50, path_edit=7, generation=3).split("\n---\n")]
        for edited, kind in ((timed, "RoutePolicy"), (moved, "HTTPRoute")):
            changed = [(a["kind"], a["metadata"]["name"]) for a, b in zip(base, edited) if a != b]
            self.assertEqual(changed, [(kind, "p7" if kind == "RoutePolicy" else "r7")])
        policy7 = next(d for d in timed if d["metadata"]["name"] == "p7")
        self.assertEqual(policy7["spec"]["defaults"]["timeouts"]["request"], "1010ms")

    def test_edits_never_touch_the_loaded_route_and_spread(self):
        for routes in (1000, 10_000):
            targets = {updates.edited_route(routes, s) for s in range(1, 50)}
            self.assertNotIn(0, targets)
            self.assertTrue(all(0 < t < routes for t in targets))
            self.assertGreater(len(targets), 40)

    def test_the_rate_is_split_over_connections(self):
        cmd = updates.rate_command(10300, "h0.example.com", "/r0/b", 20, 1000, 10)
        self.assertEqual(cmd[cmd.index("-q") + 1], "100")
        self.assertEqual(cmd[cmd.index("-c", 3) + 1], "10")
        self.assertEqual(cmd[:3], ["taskset", "-c", "1"])
        with self.assertRaises(ValueError):
            updates.rate_command(10300, "h", "/", 20, 1000, 7)

    def test_hey_slowest_is_read(self):
        parsed = updates.parse_hey(HEY_OUTPUT)
        self.assertAlmostEqual(parsed["max_ms"], 12.0)
        self.assertAlmostEqual(parsed["p99_ms"], 3.1)
        with self.assertRaises(ValueError):
            updates.parse_hey("Requests/sec: 1\n")

    def test_edits_are_evenly_spaced_inside_the_run(self):
        self.assertEqual(updates.edit_times(5, 1), [1.0, 2.0, 3.0, 4.0])
        self.assertEqual(updates.edit_times(3, 2), [1.0, 1.5, 2.0])
        self.assertEqual(updates.edit_times(20, 0), [])
        self.assertEqual(len(updates.edit_times(20, 1)), 19)

    def test_runs_are_compared_with_the_same_rounds_steady_run(self):
        steady = [{"rps": 1000.0, "p50_ms": 1.0, "p99_ms": 4.0, "max_ms": 7.0, "applied": 0},
                  {"rps": 990.0, "p50_ms": 1.0, "p99_ms": 5.0, "max_ms": 9.0, "applied": 0}]
        ecds = [{"rps": 980.0, "p50_ms": 1.0, "p99_ms": 5.0, "max_ms": 20.0, "applied": 19},
                {"rps": 990.0, "p50_ms": 1.1, "p99_ms": 6.0, "max_ms": 30.0, "applied": 19}]
        rds = [{"rps": 900.0, "p50_ms": 1.2, "p99_ms": 9.0, "max_ms": 70.0, "applied": 19},
               {"rps": 910.0, "p50_ms": 1.3, "p99_ms": 9.5, "max_ms": 80.0, "applied": 19}]
        summary = updates.summarise({1000: {"steady": steady, "ecds": ecds, "rds": rds}})[1000]
        self.assertAlmostEqual(summary["ecds"]["served"], (0.98 + 1.0) / 2)
        self.assertAlmostEqual(summary["ecds"]["max_excess_ms"], (13 + 21) / 2)
        self.assertEqual(summary["verdicts"], {"served": True, "p99": True, "max": True})
        worse = updates.verdicts({"served": 0.99, "p99": 1.2, "max_excess_ms": 60},
                                 {"served": 0.99, "p99": 1.1, "max_excess_ms": 40})
        self.assertEqual(worse, {"served": True, "p99": False, "max": False})
        # Equal served rates that differ in the fifth digit are not "worse";
        # a real shortfall is.
        noise = updates.verdicts({"served": 0.99993, "p99": 1.0, "max_excess_ms": 0},
                                 {"served": 1.00001, "p99": 1.1, "max_excess_ms": 1})
        self.assertTrue(noise["served"])
        short = updates.verdicts({"served": 0.97, "p99": 1.0, "max_excess_ms": 0},
                                 {"served": 0.99, "p99": 1.1, "max_excess_ms": 1})
        self.assertFalse(short["served"])
        text = updates.markdown({1000: summary}, {"rate": 1000, "seconds": 20})
        self.assertIn("## 1,000 routes (3,000 entries)", text)
        self.assertIn("| ecds | 985.0 |", text)
        self.assertIn("**met**", text)
        self.assertNotIn("floor", text, "no floor line when the floor did not run")

    def test_the_floor_is_compared_with_its_own_steady_runs(self):
        steady = [{"rps": 1000.0, "p50_ms": 1.0, "p99_ms": 2.0, "max_ms": 5.0, "applied": 0},
                  {"rps": 1000.0, "p50_ms": 1.0, "p99_ms": 4.0, "max_ms": 6.0, "applied": 0}]
        ecds = [{"rps": 1000.0, "p50_ms": 1.0, "p99_ms": 3.0, "max_ms": 9.0, "applied": 19},
                {"rps": 990.0, "p50_ms": 1.0, "p99_ms": 5.0, "max_ms": 10.0, "applied": 18}]
        floor = updates.summarise({10_000: {"steady": steady, "ecds": ecds}})
        # Round by round: p99 1.5x and 1.25x, slowest +4 and +4 ms.
        self.assertAlmostEqual(floor[10_000]["ecds"]["p99"], 1.375)
        self.assertAlmostEqual(floor[10_000]["ecds"]["max_excess_ms"], 4.0)
        line = updates.floor_lines(floor, 10_000)
        self.assertEqual(len(line), 1)
        self.assertIn("p99 1.38x, slowest +4.0 ms against its own steady runs; edits taken 18", line[0])
        self.assertEqual(updates.floor_lines(floor, 1000), [], "a size without a floor has no line")
        summary = {10_000: {"figures": {}}}
        self.assertIn("floor (the same ECDS updates to the probe filter",
                      updates.markdown(summary, {}, floor))

# The report and its pictures (bench/test_figures.py), run with the rest.
from test_figures import Committed, Pictures, Report, SecondBySecond, Series  # noqa: E402,F401

if __name__ == "__main__":
    unittest.main()
