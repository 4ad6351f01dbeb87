"""Envoy bootstrap JSON for the upstream and for every variant under test.

Envoy reads JSON bootstraps as readily as YAML, so the stdlib is enough.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path

from . import policy

HCM = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
ROUTER = {
    "name": "envoy.filters.http.router",
    "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"},
}
WASM_TYPE = "type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm"


@dataclass
class Variant:
    """One Envoy configuration under test."""

    key: str
    label: str
    # "none" | "native" | "lua" | "empty-wasm" | "empty-module" | "probe" | "attache"
    kind: str
    routes: int = 10
    # Envoy's route name: the document's entry name (lookup by name) or a name the
    # document does not know (the filter falls back to Gateway API matching).
    by_name: bool = True
    extra: dict = field(default_factory=dict)

    @property
    def path(self) -> str:
        return policy.request_path(self.routes)

    @property
    def envoy_route_name(self) -> str:
        if self.kind == "attache" and self.by_name:
            return policy.entry_name(policy.target_index(self.routes))
        return "bench-default"

    @property
    def enforces_policy(self) -> bool:
        return self.kind in ("native", "lua", "attache")


def _socket(port: int) -> dict:
    return {"socket_address": {"address": "127.0.0.1", "port_value": port}}


def _admin(port: int) -> dict:
    return {"address": _socket(port)}


def _header_option(name: str, value: str) -> dict:
    return {"header": {"key": name, "value": value}, "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"}


def _listener(port: int, routes: list[dict], http_filters: list[dict],
              hcm_extra: dict | None = None, route_config: dict | None = None) -> dict:
    hcm = {
        "@type": HCM,
        "stat_prefix": "ingress",
        "route_config": route_config or {
            "name": "local",
            "virtual_hosts": [{"name": "bench", "domains": ["*"], "routes": routes}],
        },
        "http_filters": http_filters + [ROUTER],
        **(hcm_extra or {}),
    }
    return {
        "name": "ingress",
        "address": _socket(port),
        "filter_chains": [
            {
                "filters": [
                    {"name": "envoy.filters.network.http_connection_manager", "typed_config": hcm}
                ]
            }
        ],
    }


def upstream_bootstrap(port: int, admin_port: int) -> dict:
    """The upstream: Envoy answering with direct_response.

    `x-bench-status: 503` answers 503 (to check retries); `x-bench-verify` echoes the
    request headers the policy touches as response headers (to check enforcement).
    Load requests carry neither and get the plain 200.
    """
    echoed = [name for name, _ in policy.REQUEST_SET] + policy.REQUEST_REMOVE + [
        "x-envoy-expected-rq-timeout-ms"
    ]
    routes = [
        {
            "match": {"prefix": "/", "headers": [{"name": "x-bench-status", "string_match": {"exact": "503"}}]},
            "direct_response": {"status": 503, "body": {"inline_string": "unavailable"}},
        },
        {
            "match": {"prefix": "/", "headers": [{"name": "x-bench-verify", "present_match": True}]},
            "direct_response": {"status": 200, "body": {"inline_string": "verify"}},
            "response_headers_to_add": [
                _header_option(f"x-echo-{name}", f"%REQ({name})%") for name in echoed
            ],
        },
        {"match": {"prefix": "/"}, "direct_response": {"status": 200, "body": {"inline_string": "ok"}}},
    ]
    return {
        "admin": _admin(admin_port),
        # The Envoy under test is the upstream's trusted caller: without this the upstream
        # would strip the x-envoy-* headers it is asked to echo.
        "static_resources": {"listeners": [_listener(port, routes, [], {
            "use_remote_address": True,
            "internal_address_config": {"cidr_ranges": [{"address_prefix": "127.0.0.1", "prefix_len": 32}]},
        })]},
    }


def _cluster(upstream_port: int) -> dict:
    return {
        "name": "upstream",
        "connect_timeout": "1s",
        "type": "STATIC",
        "load_assignment": {
            "cluster_name": "upstream",
            "endpoints": [{"lb_endpoints": [{"endpoint": {"address": _socket(upstream_port)}}]}],
        },
    }


def _native_route_policy() -> dict:
    return {
        "timeout": f"{policy.REQUEST_TIMEOUT_MS / 1000}s",
        "retry_policy": {
            "retry_on": policy.RETRY_ON_HEADER,
            "retriable_status_codes": policy.RETRY_CODES,
            "num_retries": policy.RETRY_ATTEMPTS,
            "per_try_timeout": f"{policy.PER_TRY_TIMEOUT_MS / 1000}s",
        },
    }


def _lua_code() -> str:
    # The Lua filter does what the Wasm filter does per request: drop client-supplied
    # control headers, set the router's timeout/retry headers, apply the header changes.
    lines = ["function envoy_on_request(handle)", "  local h = handle:headers()"]
    for name in ("x-envoy-expected-rq-timeout-ms", "x-envoy-hedge-on-per-try-timeout",
                 "x-envoy-retry-grpc-on"):
        lines.append(f'  h:remove("{name}")')
    for name, value in policy.CONTROL_HEADERS:
        lines.append(f'  h:replace("{name}", "{value}")')
    for name in policy.REQUEST_REMOVE:
        lines.append(f'  h:remove("{name}")')
    for name, value in policy.REQUEST_SET:
        lines.append(f'  h:replace("{name}", "{value}")')
    lines += ["end", "function envoy_on_response(handle)", "  local h = handle:headers()"]
    for name, value in policy.RESPONSE_SET:
        lines.append(f'  h:replace("{name}", "{value}")')
    lines.append("end")
    return "\n".join(lines) + "\n"


def wasm_filter_config(name: str, wasm: Path, configuration: str) -> dict:
    """The body of an envoy.extensions.filters.http.wasm.v3.Wasm."""
    return {
        "@type": WASM_TYPE,
        "config": {
            "name": name,
            "root_id": name,
            "vm_config": {
                "vm_id": name,
                "runtime": "envoy.wasm.runtime.v8",
                "code": {"local": {"filename": str(wasm)}},
            },
            "configuration": {
                "@type": "type.googleapis.com/google.protobuf.StringValue",
                "value": configuration,
            },
            "fail_open": False,
        },
    }


MODULE_TYPE = "type.googleapis.com/envoy.extensions.filters.http.dynamic_modules.v3.DynamicModuleFilter"


def module_filter_config(module: Path, configuration: str) -> dict:
    """The body of a DynamicModuleFilter loading the filter's dynamic module (issue 44),
    as `attache render --filter dynamic-module` writes it (crates/attache-render/src/module.rs)."""
    return {
        "@type": MODULE_TYPE,
        "dynamic_module_config": {"module": {"local": {"filename": str(module)}}, "do_not_close": True},
        "filter_name": "attache",
        "filter_config": {"@type": "type.googleapis.com/google.protobuf.StringValue", "value": configuration},
    }


def http_filters(variant: Variant, wasm: dict[str, Path], document: str | None) -> list[dict]:
    if variant.kind == "lua":
        return [{
            "name": "envoy.filters.http.lua",
            "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua",
                "default_source_code": {"inline_string": _lua_code()},
            },
        }]
    if variant.kind == "empty-wasm":
        return [{"name": "envoy.filters.http.wasm",
                 "typed_config": wasm_filter_config("bench_empty", wasm[wasm_key(variant)], "")}]
    if variant.kind == "probe":
        return [{"name": "envoy.filters.http.wasm",
                 "typed_config": wasm_filter_config("bench_probe", wasm["probe"], variant.extra["steps"])}]
    if variant.kind == "empty-module":
        return [{"name": "envoy.filters.http.dynamic_modules",
                 "typed_config": module_filter_config(wasm[wasm_key(variant)], "")}]
    if variant.kind == "attache" and variant.extra.get("module"):
        return [{"name": "envoy.filters.http.dynamic_modules",
                 "typed_config": module_filter_config(wasm[wasm_key(variant)], document or "")}]
    if variant.kind == "attache":
        return [{"name": "envoy.filters.http.wasm",
                 "typed_config": wasm_filter_config("attache", wasm[wasm_key(variant)], document or "")}]
    return []


def wasm_key(variant: Variant) -> str:
    """Which built .wasm a variant loads: `empty` or `attache`, or another build of it
    (`extra["wasm"]`: the raw-exports empty filter, the filter at another opt-level)."""
    if variant.kind == "empty-module":
        return "empty-module"
    if variant.extra.get("module"):
        return "module"
    base = "empty" if variant.kind == "empty-wasm" else variant.kind
    build = variant.extra.get("wasm")
    return f"{base}-{build}" if build else base


def route(variant: Variant) -> dict:
    entry = {"name": variant.envoy_route_name, "match": {"prefix": "/"}, "route": {"cluster": "upstream"}}
    return _with_policy(variant, entry)


def _with_policy(variant: Variant, entry: dict) -> dict:
    if variant.extra.get("native_timeouts_retries"):
        entry["route"].update(_native_route_policy())
    if variant.kind == "native":
        entry["route"].update(_native_route_policy())
        entry["request_headers_to_add"] = [_header_option(n, v) for n, v in policy.REQUEST_SET]
        entry["request_headers_to_remove"] = list(policy.REQUEST_REMOVE)
        entry["response_headers_to_add"] = [_header_option(n, v) for n, v in policy.RESPONSE_SET]
    return entry


def rendered_route_config(variant: Variant, rendered: dict) -> dict:
    """The route table of `attache render envoy`'s bootstrap (one Envoy route per
    document entry, named after it), pointed at the bench upstream; the native variant
    carries the policy in every route, as native configuration of that size would."""
    config = json.loads(json.dumps(rendered))
    for vhost in config["virtual_hosts"]:
        for entry in vhost["routes"]:
            entry["route"]["cluster"] = "upstream"
            _with_policy(variant, entry)
    return config


def istio_route_config(variant: Variant, hosts: int) -> dict:
    """Istio's layout of a gateway's route table: one virtual host per (hostname, port),
    named `<host>:<port>` with the domains Istio gives it, the routes spread evenly over
    them. The load's hostname is the last virtual host, which holds the target route
    (the last one), so a re-match looks up one virtual host by domain and scans its
    routes only. Envoy route names are the document's entry names (lookup by name)."""
    per_host = max(1, variant.routes // hosts)
    vhosts = []
    for h in range(hosts):
        host = policy.HOSTNAME if h == hosts - 1 else f"svc-host-{h:04d}.example.com"
        routes = []
        for i in range(h * per_host, min(variant.routes, (h + 1) * per_host)):
            entry = {"name": policy.entry_name(i),
                     "match": {"prefix": policy.path_prefix(i)},
                     "route": {"cluster": "upstream"}}
            routes.append(_with_policy(variant, entry))
        vhosts.append({"name": f"{host}:80", "domains": [host, f"{host}:*"], "routes": routes})
    return {"name": "http.80", "virtual_hosts": vhosts}


# Every router control header the filter strips (crates/attache-filter/src/control.rs).
CLIENT_CONTROL_HEADERS = [
    "x-envoy-max-retries", "x-envoy-retry-on", "x-envoy-retry-grpc-on",
    "x-envoy-retriable-status-codes", "x-envoy-retriable-header-names",
    "x-envoy-upstream-rq-timeout-ms", "x-envoy-upstream-rq-per-try-timeout-ms",
    "x-envoy-expected-rq-timeout-ms", "x-envoy-hedge-on-per-try-timeout",
    "x-envoy-upstream-rq-timeout-alt-response", "x-envoy-upstream-stream-duration-ms",
]


def native_strip() -> dict:
    """HCM early header mutation: strips client control headers before routing and
    before any filter, natively, so the filter may trust what is left."""
    return {"early_header_mutation_extensions": [{
        "name": "envoy.http.early_header_mutation.header_mutation",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.http.early_header_mutation.header_mutation.v3.HeaderMutation",
            "mutations": [{"remove": name} for name in CLIENT_CONTROL_HEADERS],
        },
    }]}


def bootstrap(variant: Variant, port: int, admin_port: int, upstream_port: int,
              wasm: dict[str, Path], document: str | None,
              filters_override: list[dict] | None = None, route_config: dict | None = None) -> dict:
    filters = filters_override if filters_override is not None else http_filters(variant, wasm, document)
    hcm_extra = native_strip() if variant.extra.get("native_strip") else None
    return {
        # xDS (the ECDS file) needs a node identity.
        "node": {"id": f"bench-{variant.key}", "cluster": "bench"},
        "admin": _admin(admin_port),
        "static_resources": {
            "listeners": [_listener(port, [route(variant)], filters, hcm_extra, route_config)],
            "clusters": [_cluster(upstream_port)],
        },
    }


def write(path: Path, config: dict) -> Path:
    path.write_text(json.dumps(config, indent=1))
    return path
