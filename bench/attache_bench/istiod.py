"""What the controller benchmarks (bench/edit_to_served.py, bench/edit_to_programmed.py)
share: istiod's part reduced to what the filter sees, a policy edit on the stand-in API
server, and running the CLI."""

import json
import os
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

from .config_load import ecds_response

PLUGINS = "/apis/extensions.istio.io/v1alpha1/namespaces/shop/wasmplugins"
POLICIES = "/apis/policy.attache.dev/v1alpha1/namespaces/shop/routepolicies"


def run_cli(cmd: list, timeout: float = 900) -> None:
    """Runs `cmd` (the attache CLI, a generator); its stderr's tail is the error."""
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))}: {proc.stderr.strip()[-600:]}")


class Mirror(threading.Thread):
    """istiod's part: every WasmPlugin event becomes each replica's ECDS file, written to
    a temp file and renamed (the rename is what Envoy reloads on)."""

    def __init__(self, server: str, wasm: Path, files: list[Path], watch_seconds: float):
        super().__init__(daemon=True)
        self.server, self.wasm, self.files, self.watch_seconds = server, wasm, files, watch_seconds
        self.applied: list[float] = []  # monotonic time of each event mirrored
        self.lock = threading.Lock()
        self.generation = 0

    def run(self) -> None:
        with urllib.request.urlopen(f"{self.server}{PLUGINS}?watch=true", timeout=self.watch_seconds) as stream:
            for line in stream:
                event = json.loads(line)
                if event.get("type") not in ("ADDED", "MODIFIED"):
                    continue
                at = time.monotonic()
                self.generation += 1
                text = json.dumps(ecds_response(self.wasm, "attache",
                                                json.dumps(event["object"]["spec"]["pluginConfig"]), self.generation))
                for path in self.files:
                    tmp = path.with_name(f".{path.name}.tmp")
                    tmp.write_text(text)
                    os.rename(tmp, path)
                with self.lock:
                    self.applied.append(at)

    def first_after(self, t: float) -> float | None:
        with self.lock:
            return next((at for at in self.applied if at >= t), None)


def edit_policy(server: str, route: int, value: str) -> int:
    """Sets policy p<route>'s header to `value`; returns its new metadata.generation."""
    patch = {"spec": {"defaults": {"requestHeaderModifier": {"set": [{"name": "x-tenant", "value": value}]}}}}
    req = urllib.request.Request(f"{server}{POLICIES}/p{route}", data=json.dumps(patch).encode(),
                                 method="PATCH", headers={"Content-Type": "application/merge-patch+json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())["metadata"]["generation"]
