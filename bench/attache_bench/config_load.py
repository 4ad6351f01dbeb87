"""Configuration load: from an atomic rename of the ECDS file to Envoy serving with it.

Two Envoys load a Wasm filter through ECDS (path_config_source on a watched directory,
as `attache render envoy` does): one runs the Attaché filter, the other the probe filter,
which receives the very same bytes (a marker line, then the document) but parses only
the marker. Each step writes a new configuration whose marker shows in a response
header, renames it into place and polls with back-to-back requests until the marker is
served. The probe's time is the floor (file watch, Envoy's JSON-to-proto parse, the copy
into the VM, the plugin swap); the Attaché filter's time minus the floor is the filter's
own work (parsing and indexing the document) for the same bytes.

A third Envoy takes the file exactly as the project writes it: `attache render ecds` on
manifests whose policy carries the marker (YAML, so a `.yaml` path), renamed into place.
That file holds the data-plane document (schema 2), the encoding Envoy and Istio get. A
fourth Envoy loads the same kind of file, rendered the same way for the probe's .wasm:
the same format and bytes but for the .wasm path (the probe finds the marker in the
document without parsing it), so the rendered series has a floor of its own and the
filter's load work and memory are measured on the document users deploy. (Before, that
floor was a JSON file holding the same string: Envoy parses a 1 MB YAML file about
70-90 ms slower than JSON, which the rendered series then counted as the filter's.)
"""

import copy
import http.client
import json
import os
import re
import statistics
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from . import documents, envoy_configs, policy

MARKER_HEADER = policy.RESPONSE_SET[0][0]
# Every document holds the 10-route document's target entry; requests hit that one, so
# a single Envoy route (named after it) serves every document.
TARGET_ROUTES = 10


@dataclass(frozen=True)
class Series:
    key: str
    # "attache" | "probe" | "rendered" (attache, file from `attache render ecds`) |
    # "rendered_probe" (the probe given a file rendered alike, for its .wasm)
    filter_kind: str
    routes: int
    strip_sources: bool = False


SERIES = [
    Series("attache_10", "attache", 10),
    Series("attache_10k", "attache", 10_000),
    Series("probe_10", "probe", 10),
    Series("probe_10k", "probe", 10_000),
    Series("rendered_10k", "rendered", 10_000),
    Series("rendered_probe_10k", "rendered_probe", 10_000),
]


def _marked(document: dict, generation: int, strip_sources: bool) -> dict:
    doc = copy.deepcopy(document)
    target = policy.entry_name(policy.target_index(TARGET_ROUTES))
    for entry in doc["routes"]:
        if strip_sources:
            entry.pop("sources", None)
        if entry["name"] == target:
            changes = entry.setdefault("responseHeaders", {"set": [], "add": [], "remove": []})
            changes["set"] = [h for h in changes.get("set", []) if h["name"] != MARKER_HEADER]
            changes["set"].append({"name": MARKER_HEADER, "value": f"gen-{generation}"})
    return doc


def configuration(series: Series, document: dict, generation: int) -> str:
    # Both kinds get the same document bytes (the marker differs in a few characters), in
    # the data-plane encoding, the only one the filter reads.
    text = json.dumps(documents.data_plane(_marked(document, generation, series.strip_sources)))
    if series.filter_kind == "probe":
        return f"marker:gen-{generation}\n" + text
    return text


def ecds_response(wasm: Path, vm_name: str, configuration_text: str, generation: int) -> dict:
    typed = envoy_configs.wasm_filter_config(vm_name, wasm, configuration_text)
    return {
        "version_info": str(generation),
        "resources": [{
            "@type": "type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig",
            "name": "attache",
            "typed_config": typed,
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


def _wait_for_marker(port: int, marker: str, timeout: float) -> float:
    deadline = time.monotonic() + timeout
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        while time.monotonic() < deadline:
            conn.request("GET", policy.request_path(TARGET_ROUTES), headers={"Host": policy.HOSTNAME})
            resp = conn.getresponse()
            resp.read()
            if resp.getheader(MARKER_HEADER) == marker:
                return time.monotonic()
    finally:
        conn.close()
    raise TimeoutError(f"marker {marker} not served within {timeout}s")


_LOADED = re.compile(r"accepted: .* (\d+) routes, .*; loaded in ([\d.]+) ms, Wasm memory ([\d.]+) MiB")


def filter_load_lines(log: Path, routes: int) -> list[dict]:
    """The filter's own account of each load of a `routes`-route document, from
    Envoy's log (docs/filter.md): how long its parse and compile took in the VM and
    how large the VM's linear memory is after it, in log order. Each update is
    loaded by a fresh VM first (Envoy checks the configuration on the main thread)
    and then by the VMs already serving, which still hold the previous generation."""
    found = []
    for line in log.read_text(errors="replace").splitlines():
        m = _LOADED.search(line)
        if m and int(m.group(1)) == routes:
            found.append({"ms": float(m.group(2)), "mib": float(m.group(3)),
                          "generation_1": "generation 1 " in line})
    return found


@dataclass
class Target:
    """One ECDS-fed Envoy: where its file is, which port serves it, which .wasm it runs."""

    filter_kind: str
    ecds: Path
    port: int
    wasm: Path
    vm_name: str


class RenderError(Exception):
    pass


def render_staged(attache: Path, target: Target, routes: int, generation: int) -> Path:
    """`attache render ecds` into a staging directory beside the watched one."""
    stage = target.ecds.parent.with_name(target.ecds.parent.name + "-stage")
    stage.mkdir(exist_ok=True)
    manifests = stage / "manifests.yaml"
    manifests.write_text(documents.manifests_yaml(routes, f"gen-{generation}"))
    out = stage / target.ecds.name
    cmd = [str(attache), "render", "ecds", "-f", str(manifests), "--gateway", policy.GATEWAY,
           "--wasm", str(target.wasm), "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RenderError(f"{' '.join(cmd)}: {proc.stderr.strip()[-400:]}")
    return out


def mark_for_probe(ecds_file: Path, generation: int) -> None:
    """Put the marker line in front of a rendered file's configuration, as `configuration`
    does for the probe: a large Gateway's document is the compressed envelope, in whose
    bytes the probe cannot find `gen-<digits>`; the probe reads only the first line."""
    import yaml  # PyYAML: run.sh names it; only the rendered series need it.

    with open(ecds_file) as handle:
        response = yaml.safe_load(handle)
    config = response["resources"][0]["typed_config"]["config"]["configuration"]
    config["value"] = f"marker:gen-{generation}\n" + config["value"]
    ecds_file.write_text(yaml.safe_dump(response, sort_keys=False))


def rendered_configuration(ecds_file: Path) -> str:
    """The filter configuration string inside a file `attache render ecds` wrote."""
    import yaml  # PyYAML: run.sh names it; only the rendered series need it.

    with open(ecds_file) as handle:
        return documents.extract_configuration(yaml.safe_load(handle))


def measure(targets: dict[str, Target], docs: dict[int, dict], repeats: int,
            attache: Path | None) -> dict:
    """Every series `repeats` times, interleaved; per-step latencies in ms."""
    chosen = [s for s in SERIES if s.filter_kind in targets]
    steps: dict[str, list[float]] = {s.key: [] for s in chosen}
    generation = 1000
    rendered_text = None  # the configuration string of the last rendered file
    for _ in range(repeats):
        for series in chosen:
            generation += 1
            target = targets[series.filter_kind]
            if series.filter_kind == "rendered" and attache is not None:
                staged = render_staged(attache, target, series.routes, generation)
                rendered_text = rendered_configuration(staged)
                started = time.monotonic()
                os.rename(staged, target.ecds)
            elif series.filter_kind == "rendered_probe" and attache is not None:
                staged = render_staged(attache, target, series.routes, generation)
                mark_for_probe(staged, generation)
                started = time.monotonic()
                os.rename(staged, target.ecds)
            else:
                text = json.dumps(ecds_response(target.wasm, target.vm_name,
                                                configuration(series, docs[series.routes], generation),
                                                generation))
                started = write_atomically(target.ecds, text)
            served = _wait_for_marker(target.port, f"gen-{generation}", 60.0)
            steps[series.key].append((served - started) * 1e3)
    medians = {k: statistics.median(v) for k, v in steps.items() if v}
    sizes = {
        "document_10k_bytes": len(json.dumps(documents.data_plane(docs[10_000]))),
    }
    if "rendered_10k" in medians:
        sizes["rendered_10k_bytes"] = targets["rendered"].ecds.stat().st_size
    if rendered_text is not None:
        sizes["rendered_10k_configuration_bytes"] = len(rendered_text)
    if "rendered_10k" in medians and "rendered_probe_10k" in medians:
        sizes["filter_ms_rendered_10k"] = medians["rendered_10k"] - medians["rendered_probe_10k"]
    return {
        "steps_ms": steps,
        "median_ms": medians,
        "filter_ms_10k": medians["attache_10k"] - medians["probe_10k"],
        "filter_ms_10": medians["attache_10"] - medians["probe_10"],
        **sizes,
    }
