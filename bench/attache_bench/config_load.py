"""Configuration load: from an atomic rename of the ECDS file to Envoy serving with it.

One Envoy loads the filter through ECDS (path_config_source, watched directory), as
`attache render envoy` does. Each step writes a new document whose target route sets a
new generation marker in a response header, renames it into place, and polls with
requests until the marker appears. 10-route steps alternate with 10,000-route steps, so
the 10-route figure is the floor (file watch, ECDS, plugin swap) and the difference is
what the document's size costs.
"""

import copy
import http.client
import json
import os
import statistics
import time
from pathlib import Path

from . import envoy_configs, policy

MARKER_HEADER = policy.RESPONSE_SET[0][0]
# Both documents hold the 10-route document's target entry; requests hit that one, so
# a single Envoy route (named after it) serves both.
TARGET_ROUTES = 10


def _marked(document: dict, generation: int) -> dict:
    doc = copy.deepcopy(document)
    target = policy.entry_name(policy.target_index(TARGET_ROUTES))
    for entry in doc["routes"]:
        if entry["name"] == target:
            changes = entry.setdefault("responseHeaders", {"set": [], "add": [], "remove": []})
            changes["set"] = [h for h in changes.get("set", []) if h["name"] != MARKER_HEADER]
            changes["set"].append({"name": MARKER_HEADER, "value": f"gen-{generation}"})
    return doc


def ecds_response(wasm: Path, document: dict, generation: int) -> dict:
    return {
        "version_info": str(generation),
        "resources": [{
            "@type": "type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig",
            "name": "attache",
            "typed_config": envoy_configs.wasm_filter_config("attache", wasm, json.dumps(document)),
        }],
    }


def write_atomically(path: Path, text: str) -> float:
    """Write `text` beside `path`, rename it into place; return the monotonic rename time."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    with open(tmp, "rb") as handle:
        os.fsync(handle.fileno())
    start = time.monotonic()
    os.rename(tmp, path)
    return start


def ecds_filter(ecds: Path) -> dict:
    return {
        "name": "attache",
        "config_discovery": {
            "config_source": {"path_config_source": {
                "path": str(ecds), "watched_directory": {"path": str(ecds.parent)}}},
            "type_urls": [envoy_configs.WASM_TYPE],
        },
    }


def _wait_for_marker(port: int, path: str, marker: str, timeout: float) -> float:
    deadline = time.monotonic() + timeout
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        while time.monotonic() < deadline:
            conn.request("GET", path, headers={"Host": policy.HOSTNAME})
            resp = conn.getresponse()
            resp.read()
            if resp.getheader(MARKER_HEADER) == marker:
                return time.monotonic()
    finally:
        conn.close()
    raise TimeoutError(f"marker {marker} not served within {timeout}s")


def measure(port: int, ecds: Path, wasm: Path, small: dict, large: dict,
            repeats: int, generation_start: int) -> dict:
    """Alternate small and large documents; return per-step latencies in ms."""
    steps = {"small_ms": [], "large_ms": []}
    generation = generation_start
    for _ in range(repeats):
        for key, doc in (("large_ms", large), ("small_ms", small)):
            generation += 1
            text = json.dumps(ecds_response(wasm, _marked(doc, generation), generation))
            started = write_atomically(ecds, text)
            served = _wait_for_marker(port, policy.request_path(TARGET_ROUTES), f"gen-{generation}", 30.0)
            steps[key].append((served - started) * 1e3)
    steps["large_median_ms"] = statistics.median(steps["large_ms"])
    steps["small_median_ms"] = statistics.median(steps["small_ms"])
    steps["document_cost_ms"] = steps["large_median_ms"] - steps["small_median_ms"]
    steps["large_document_bytes"] = len(json.dumps(large))
    return steps
