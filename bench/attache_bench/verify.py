"""Check, before measuring, that a variant really enforces the policy.

A variant that silently did nothing would be the fastest in the table; this makes that
impossible. The upstream echoes the request headers the policy touches (see
envoy_configs.upstream_bootstrap) and answers 503 on demand so retries can be counted.
"""

import http.client

from . import policy
from .envoy_proc import Envoy

RETRY_STAT = "cluster.upstream.upstream_rq_retry"


class PolicyNotEnforced(Exception):
    pass


def _get(port: int, path: str, headers: dict[str, str]) -> tuple[int, dict[str, str]]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path, headers={"Host": policy.HOSTNAME, **headers})
        resp = conn.getresponse()
        resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}
    finally:
        conn.close()


def problems(envoy: Envoy, port: int, path: str, enforces: bool) -> list[str]:
    found = []
    status, headers = _get(port, path, {"x-bench-verify": "1",
                                        policy.REQUEST_REMOVE[0]: "from-client"})
    if status != 200:
        return [f"verify request answered {status}"]
    if not enforces:
        return found
    for name, value in policy.REQUEST_SET:
        if headers.get(f"x-echo-{name}") != value:
            found.append(f"upstream saw {name}={headers.get(f'x-echo-{name}')!r}, want {value!r}")
    for name in policy.REQUEST_REMOVE:
        if headers.get(f"x-echo-{name}", "") not in ("", "-"):
            found.append(f"upstream still saw {name}")
    expected = headers.get("x-echo-x-envoy-expected-rq-timeout-ms")
    if expected != str(policy.PER_TRY_TIMEOUT_MS):
        found.append(f"router's expected timeout {expected!r}, want {policy.PER_TRY_TIMEOUT_MS} (per-try)")
    for name, value in policy.RESPONSE_SET:
        if headers.get(name) != value:
            found.append(f"response {name}={headers.get(name)!r}, want {value!r}")
    before = envoy.counters(RETRY_STAT).get(RETRY_STAT, 0)
    status, _ = _get(port, path, {"x-bench-status": "503"})
    retries = envoy.counters(RETRY_STAT).get(RETRY_STAT, 0) - before
    if status != 503 or retries != policy.RETRY_ATTEMPTS:
        found.append(f"503 upstream: answered {status} after {retries} retries, "
                     f"want 503 after {policy.RETRY_ATTEMPTS}")
    return found


def check(envoy: Envoy, port: int, path: str, enforces: bool, label: str) -> None:
    found = problems(envoy, port, path, enforces)
    if found:
        raise PolicyNotEnforced(f"{label}: " + "; ".join(found))
