"""Schema-1 documents for N routes: from the real generator when it works, else built here.

The hand-built document has the shape of crates/attache-contract (Document/RouteEntry),
field for field; the report records which source produced each document.
"""

import json
import subprocess
from pathlib import Path

from . import policy


def manifests_yaml(routes: int, response_marker: str | None = None) -> str:
    """Gateway API manifests for one Gateway, `routes` HTTPRoutes and one RoutePolicy.

    Written as JSON flow documents (valid YAML), so no YAML library is needed.
    `response_marker` replaces the value of the first response header the policy sets
    (the configuration-load measurement watches for it).
    """
    response_set = list(policy.RESPONSE_SET)
    if response_marker is not None:
        response_set[0] = (response_set[0][0], response_marker)
    docs = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": policy.NAMESPACE}},
        {
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "GatewayClass",
            "metadata": {"name": "attache"},
            "spec": {"controllerName": "attache.dev/gateway-controller"},
        },
        {
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "Gateway",
            "metadata": {"name": "edge", "namespace": policy.NAMESPACE},
            "spec": {
                "gatewayClassName": "attache",
                "listeners": [
                    {
                        "name": policy.LISTENER,
                        "protocol": "HTTP",
                        "port": 80,
                        "hostname": policy.HOSTNAME,
                    }
                ],
            },
        },
        {
            "apiVersion": "policy.attache.dev/v1alpha1",
            "kind": "RoutePolicy",
            "metadata": {"name": "edge-defaults", "namespace": policy.NAMESPACE},
            "spec": {
                "targetRefs": [
                    {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "edge"}
                ],
                "defaults": {
                    "timeouts": {
                        "request": f"{policy.REQUEST_TIMEOUT_MS}ms",
                        "backendRequest": f"{policy.PER_TRY_TIMEOUT_MS}ms",
                    },
                    "retry": {"attempts": policy.RETRY_ATTEMPTS, "codes": policy.RETRY_CODES},
                    "requestHeaderModifier": {
                        "set": [{"name": n, "value": v} for n, v in policy.REQUEST_SET],
                        "remove": policy.REQUEST_REMOVE,
                    },
                    "responseHeaderModifier": {
                        "set": [{"name": n, "value": v} for n, v in response_set],
                    },
                },
            },
        },
    ]
    for i in range(routes):
        docs.append(
            {
                "apiVersion": "gateway.networking.k8s.io/v1",
                "kind": "HTTPRoute",
                "metadata": {"name": policy.route_name(i), "namespace": policy.NAMESPACE},
                "spec": {
                    "parentRefs": [{"name": "edge"}],
                    "rules": [
                        {
                            "matches": [
                                {"path": {"type": "PathPrefix", "value": policy.path_prefix(i)}}
                            ],
                            "backendRefs": [{"name": "upstream", "port": 80}],
                        }
                    ],
                },
            }
        )
    return "\n---\n".join(json.dumps(d) for d in docs) + "\n"


def entry(index: int) -> dict:
    return {
        "name": policy.entry_name(index),
        "listener": policy.LISTENER,
        "routeNamespace": policy.NAMESPACE,
        "routeName": policy.route_name(index),
        "rule": "0",
        "hostnames": [policy.HOSTNAME],
        "matches": [{"path": {"type": "PathPrefix", "value": policy.path_prefix(index)}}],
        "timeouts": {
            "requestMs": policy.REQUEST_TIMEOUT_MS,
            "backendRequestMs": policy.PER_TRY_TIMEOUT_MS,
        },
        "retry": {"attempts": policy.RETRY_ATTEMPTS, "codes": policy.RETRY_CODES,
                  "retryOn": policy.RETRY_ON},
        "requestHeaders": {
            "set": [{"name": n, "value": v} for n, v in policy.REQUEST_SET],
            "add": [],
            "remove": policy.REQUEST_REMOVE,
        },
        "responseHeaders": {
            "set": [{"name": n, "value": v} for n, v in policy.RESPONSE_SET],
            "add": [],
            "remove": [],
        },
    }


def built_here(routes: int) -> dict:
    return {
        "schemaVersion": 1,
        "gateway": policy.GATEWAY,
        "routes": [entry(i) for i in range(routes)],
    }


class DocumentSource:
    """Produces documents, preferring `attache resolve`; remembers why it fell back."""

    def __init__(self, attache_bin: Path | None, work: Path):
        self.attache_bin = attache_bin
        self.work = work
        self.notes: dict[int, str] = {}

    def document(self, routes: int) -> dict:
        if self.attache_bin is not None:
            resolved, why = self._resolve(routes)
            if resolved is not None:
                self.notes[routes] = "attache resolve"
                return resolved
            self.notes[routes] = f"built by bench (attache resolve unavailable: {why})"
        else:
            self.notes[routes] = "built by bench (no attache binary)"
        return built_here(routes)

    def _resolve(self, routes: int) -> tuple[dict | None, str]:
        manifests = self.work / f"manifests-{routes}.yaml"
        manifests.write_text(manifests_yaml(routes))
        out = self.work / f"resolved-{routes}.json"
        cmd = [str(self.attache_bin), "resolve", "-f", str(manifests),
               "--gateway", policy.GATEWAY, "-o", str(out)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as err:
            return None, str(err)
        if proc.returncode != 0:
            return None, (proc.stderr.strip().splitlines() or ["exit %d" % proc.returncode])[-1]
        try:
            doc = json.loads(out.read_text())
        except (OSError, ValueError) as err:
            return None, f"unreadable output: {err}"
        names = {r.get("name") for r in doc.get("routes", [])}
        if policy.entry_name(policy.target_index(routes)) not in names or len(names) != routes:
            return None, f"unexpected document: {len(names)} routes"
        return doc, ""


def for_variant(document: dict, extra: dict) -> dict:
    """The document a variant's filter gets: as resolved, or reshaped for a design A/B.

    `trust`: the Envoy strips client control headers natively, so the document lets the
    filter trust them. `native_timeouts_retries`: the Envoy route carries timeouts and
    retries, so the document leaves them out and the filter sets no control headers.
    """
    if not (extra.get("trust") or extra.get("native_timeouts_retries")):
        return document
    doc = dict(document)
    if extra.get("trust"):
        doc["options"] = {**doc.get("options", {}), "trustClientControlHeaders": True}
    if extra.get("native_timeouts_retries"):
        doc["routes"] = [{k: v for k, v in r.items() if k not in ("timeouts", "retry")}
                         for r in doc["routes"]]
    return doc


def data_plane(document: dict) -> dict:
    """A schema-1 document in the data-plane encoding (schema 2), the only one the filter
    reads: what `DataPlaneDocument::encode` (crates/attache-contract/src/data_plane.rs)
    writes, mirrored here so that the bench can reshape schema-1 documents (design A/Bs,
    load markers) and hand the filter their encoding. test_bench.py checks it against
    `attache render ecds`."""
    strings: list[str] = []
    index: dict[str, int] = {}

    def intern(text: str) -> int:
        if text not in index:
            index[text] = len(strings)
            strings.append(text)
        return index[text]

    def changes(c: dict) -> dict:
        out = {"set": [[intern(h["name"]), intern(h["value"])] for h in c.get("set", [])],
               "add": [[intern(h["name"]), intern(h["value"])] for h in c.get("add", [])],
               "remove": [intern(n) for n in c.get("remove", [])]}
        return {k: v for k, v in out.items() if v}

    profiles: list[dict] = []
    profile_index: dict[str, int] = {}
    groups: list[dict] = []
    for entry in document["routes"]:
        profile = {k: entry[k] for k in ("timeouts", "retry") if entry.get(k) is not None}
        for key in ("requestHeaders", "responseHeaders"):
            if entry.get(key) is not None:
                profile[key] = changes(entry[key])
        number = None
        if profile:
            key = json.dumps(profile, sort_keys=True)
            if key not in profile_index:
                profile_index[key] = len(profiles)
                profiles.append(profile)
            number = profile_index[key]
        route = {"name": entry["name"]}
        if entry.get("matches"):
            route["matches"] = entry["matches"]
        hostnames = entry.get("hostnames", [])
        last = groups[-1] if groups else None
        if last is not None and last.get("profile") == number and last.get("hostnames", []) == hostnames:
            last["routes"].append(route)
            continue
        group = {} if number is None else {"profile": number}
        if hostnames:
            group["hostnames"] = hostnames
        group["routes"] = [route]
        groups.append(group)
    out = {"schemaVersion": 2, "gateway": document["gateway"]}
    if document.get("options"):
        out["options"] = document["options"]
    if strings:
        out["strings"] = strings
    if profiles:
        out["profiles"] = profiles
    out["groups"] = groups
    return out


class RenderError(Exception):
    """`attache render` could not produce what a variant needs."""


def _render(attache_bin: Path | None, work: Path, routes: int, what: str, args: list[str]) -> dict:
    """`attache render <args>` on the bench's manifests for `routes` routes, its YAML
    output read back. PyYAML is the only non-stdlib module the bench uses, and only for
    the variants that need the generator's output (`what` names them in errors)."""
    if attache_bin is None:
        raise RenderError(f"the {what} variants need the attache CLI (--attache)")
    try:
        import yaml  # noqa: PLC0415
    except ImportError as err:
        raise RenderError(f"the {what} variants need PyYAML (apt-get install -y python3-yaml): {err}")
    manifests = work / f"manifests-{routes}.yaml"
    manifests.write_text(manifests_yaml(routes))
    out = work / f"{args[0]}-{routes}.yaml"
    cmd = [str(attache_bin), "render", *args, "-f", str(manifests), "--gateway", policy.GATEWAY,
           "--wasm", str(work / "unused.wasm"), "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RenderError(f"{' '.join(cmd)}: {proc.stderr.strip()}")
    return yaml.safe_load(out.read_text())


def rendered_route_config(attache_bin: Path | None, work: Path, routes: int) -> dict:
    """The HCM route_config of `attache render envoy` for the bench's manifests: the
    route table a real gateway of `routes` routes gets from the project."""
    bootstrap = _render(attache_bin, work, routes, "rendered-table",
                        ["envoy", "--ecds", str(work / "unused-ecds.yaml"), "--backend", "*=127.0.0.1:9"])
    for listener in bootstrap["static_resources"]["listeners"]:
        for chain in listener["filter_chains"]:
            for f in chain["filters"]:
                config = f.get("typed_config", {}).get("route_config")
                if config:
                    return config
    raise RenderError(f"no route_config in the bootstrap `attache render envoy` wrote for {routes} routes")


def data_plane_text(attache_bin: Path | None, work: Path, routes: int) -> str:
    """The filter configuration `attache render ecds` writes for the bench's manifests:
    the data-plane encoding (schema 2), for a filter build that reads nothing else."""
    return extract_configuration(_render(attache_bin, work, routes, "data-plane", ["ecds"]))


def extract_configuration(ecds_response: dict) -> str:
    """The filter configuration string inside an ECDS DiscoveryResponse."""
    return ecds_response["resources"][0]["typed_config"]["config"]["configuration"]["value"]
