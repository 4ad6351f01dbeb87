"""The one realistic policy every variant enforces, and the request that exercises it.

Every Envoy variant (native route config, Lua, the Attaché filter) is built from these
constants, so they cannot drift apart.
"""

GATEWAY = "bench/edge"
NAMESPACE = "bench"
LISTENER = "http"
HOSTNAME = "bench.example.com"

REQUEST_TIMEOUT_MS = 10_000
PER_TRY_TIMEOUT_MS = 2_000
RETRY_ATTEMPTS = 2
RETRY_CODES = [502, 503]
# A retry stanza in effect also retries connection errors (GEP-1731,
# docs/semantics.md): the resolver adds these triggers, so the filter sets them
# and the native and Lua variants must too.
RETRY_ON = ["connect-failure", "refused-stream", "reset"]
# What `x-envoy-retry-on` (or the route's `retry_on`) carries: the triggers,
# then the one that makes the status codes count (crates/attache-filter/src/control.rs).
RETRY_ON_HEADER = ",".join(RETRY_ON + ["retriable-status-codes"])

REQUEST_SET = [("x-bench-a", "alpha"), ("x-bench-b", "bravo"), ("x-bench-c", "charlie")]
REQUEST_REMOVE = ["x-bench-remove"]
RESPONSE_SET = [("x-bench-resp-a", "one"), ("x-bench-resp-b", "two")]

# The Envoy router headers a filter (Wasm or Lua) sets to carry timeouts and retries;
# native route config carries the same values in the route itself.
CONTROL_HEADERS = [
    ("x-envoy-upstream-rq-timeout-ms", str(REQUEST_TIMEOUT_MS)),
    ("x-envoy-upstream-rq-per-try-timeout-ms", str(PER_TRY_TIMEOUT_MS)),
    ("x-envoy-max-retries", str(RETRY_ATTEMPTS)),
    ("x-envoy-retry-on", RETRY_ON_HEADER),
    ("x-envoy-retriable-status-codes", ",".join(str(c) for c in RETRY_CODES)),
]


def route_name(index: int) -> str:
    """Route `svc-NNNNN` of the generated Gateway, rule 0 (entry naming of docs/contract.md)."""
    return f"svc-{index:05d}"


def entry_name(index: int) -> str:
    return f"{LISTENER}/{NAMESPACE}/{route_name(index)}/0"


def path_prefix(index: int) -> str:
    return f"/{route_name(index)}"


def target_index(routes: int) -> int:
    """The route the load hits: the last one, the worst case for anything that scans."""
    return routes - 1


def request_path(routes: int) -> str:
    return f"{path_prefix(target_index(routes))}/bench"
