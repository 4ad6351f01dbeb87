"""The configurations under test, in the order the report lists them."""

from .envoy_configs import Variant

ALL = [
    Variant("baseline", "baseline (no filter, no policy)", "none"),
    Variant("native", "native route config", "native"),
    Variant("lua", "Lua filter", "lua"),
    Variant("empty-wasm", "empty Wasm (floor)", "empty-wasm"),
    Variant("attache-name", "attache, by route name (10 routes)", "attache", routes=10),
    Variant("attache-fallback", "attache, Gateway API fallback (10 routes)", "attache",
            routes=10, by_name=False),
    Variant("attache-1k", "attache, by route name (1,000 routes)", "attache", routes=1000),
    Variant("attache-10k", "attache, by route name (10,000 routes)", "attache", routes=10_000),
    Variant("attache-fallback-10k", "attache, Gateway API fallback (10,000 routes)", "attache",
            routes=10_000, by_name=False),
    # A real gateway's route table: `attache render envoy`'s (one Envoy route per entry),
    # the filter against native route configuration of the same size.
    Variant("native-rendered-1k", "native route config, rendered table (1,000 routes)", "native",
            routes=1000, extra={"rendered_table": True}),
    Variant("attache-rendered-1k", "attache, rendered table (1,000 routes)", "attache",
            routes=1000, extra={"rendered_table": True}),
    Variant("native-rendered-10k", "native route config, rendered table (10,000 routes)", "native",
            routes=10_000, extra={"rendered_table": True}),
    Variant("attache-rendered-10k", "attache, rendered table (10,000 routes)", "attache",
            routes=10_000, extra={"rendered_table": True}),
    # Istio's layout (issue 24): 10,000 routes over 1,000 virtual hosts named `<host>:<port>`.
    # The route-cache clear that any request-header write causes re-matches within the
    # request's virtual host only; reported beside the one-virtual-host rendered table.
    Variant("native-istio-10k", "native route config, Istio layout (10,000 routes, 1,000 vhosts)",
            "native", routes=10_000, extra={"istio_table": 1000}),
    Variant("attache-istio-10k", "attache, Istio layout (10,000 routes, 1,000 vhosts)", "attache",
            routes=10_000, extra={"istio_table": 1000}),
    # Issue 31's request-path references on the same table: an empty filter pays for its
    # VM entries but never writes a header, so it costs no re-match; Lua writes the same
    # headers as the filter and, by its default, clears the route cache as Wasm does.
    Variant("empty-wasm-istio-10k", "empty Wasm, Istio layout (10,000 routes, 1,000 vhosts)", "empty-wasm",
            routes=10_000, extra={"istio_table": 1000}),
    Variant("lua-istio-10k", "Lua filter, Istio layout (10,000 routes, 1,000 vhosts)", "lua",
            routes=10_000, extra={"istio_table": 1000}),
    # What exporting fewer callbacks saves: an empty filter exporting only the ABI
    # version, malloc and the two header callbacks, against the SDK's empty filter.
    Variant("empty-wasm-raw", "empty Wasm, minimal raw exports", "empty-wasm", extra={"wasm": "raw"}),
    # The filter exports its own callbacks since issue 24 (no SDK): context create and
    # delete besides the two header callbacks. The same exports, empty: the filter against
    # it is the cost of its own work, VM entries aside.
    Variant("empty-wasm-raw-ctx", "empty Wasm, the filter's exports", "empty-wasm",
            extra={"wasm": "raw-ctx"}),
    # The filter built at other opt-levels (Cargo profiles wasm-s, wasm-o2, wasm-o3). Without
    # the SDK (issue 24, H24) every level fits the 400,000-byte budget (357-380 KB).
    Variant("attache-name-s", "attache, by route name (10 routes), opt-level s", "attache",
            routes=10, extra={"wasm": "s"}),
    Variant("attache-name-o2", "attache, by route name (10 routes), opt-level 2", "attache",
            routes=10, extra={"wasm": "o2"}),
    Variant("attache-name-o3", "attache, by route name (10 routes), opt-level 3", "attache",
            routes=10, extra={"wasm": "o3"}),
    # The same filter as an Envoy dynamic module (issue 44, libattache_module.so): native
    # calls instead of V8 crossings, and no route-cache clear on its header writes.
    Variant("module-name", "attache module (.so), by route name (10 routes)", "attache",
            routes=10, extra={"module": True}),
    Variant("module-fallback", "attache module (.so), Gateway API fallback (10 routes)", "attache",
            routes=10, by_name=False, extra={"module": True}),
    # The floor of Envoy's dynamic-module filter: the module's 21 hooks, each empty
    # (crates/bench-empty-filter/examples/empty_module.rs). The module against it is the
    # filter's own work and callbacks; it against native is what any module costs.
    Variant("empty-module", "empty dynamic module (floor)", "empty-module", extra={"module": "empty"}),
    Variant("module-istio-10k", "attache module (.so), Istio layout (10,000 routes, 1,000 vhosts)",
            "attache", routes=10_000, extra={"istio_table": 1000, "module": True}),
    # Design A/Bs where the project renders the Envoy config (bench/findings.md).
    Variant("attache-native-strip", "attache + native control-header strip (10 routes)", "attache",
            routes=10, extra={"native_strip": True, "trust": True}),
    Variant("attache-lean", "attache + native strip + native timeouts/retries (10 routes)", "attache",
            routes=10, extra={"native_strip": True, "trust": True, "native_timeouts_retries": True}),
]

# The variants of ALL that --profile measures too, as the same objects.
_SHARED = {v.key: v for v in ALL}

# Issue 24's request path: 4 header reads (x-envoy-internal and the three control headers
# Envoy never strips), 9 single-header writes, 2 response writes; counters are tallied in
# the VM.
LIKE_ATTACHE_STEPS = "property,check:4,set:9,response:2"

# --profile: the empty filter plus, cumulatively, each kind of host call the Attaché filter
# makes per request (crates/bench-empty-filter/examples/probe.rs); differences between
# neighbours are the marginal cost of one step.
PROFILE = [
    _SHARED["empty-wasm"],
    Variant("probe-property", "probe: read xds.route_name", "probe", extra={"steps": "property"}),
    Variant("probe-remove", "probe: + remove 10 request headers", "probe",
            extra={"steps": "property,remove:10"}),
    Variant("probe-set", "probe: + set 8 request headers", "probe",
            extra={"steps": "property,remove:10,set:8"}),
    Variant("probe-response", "probe: + set 2 response headers", "probe",
            extra={"steps": "property,remove:10,set:8,response:2"}),
    Variant("probe-check", "probe: property, check-then-remove 10, set 8, response 2", "probe",
            extra={"steps": "property,check:10,set:8,response:2"}),
    Variant("probe-batch", "probe: property, whole-map rewrite (strip 10, add 8), response 2", "probe",
            extra={"steps": "property,batch:8,response:2"}),
    Variant("probe-like-attache", "probe: the attache filter's host calls, nothing else", "probe",
            extra={"steps": LIKE_ATTACHE_STEPS}),
    _SHARED["attache-name"],
    # The same floor on Istio's layout, where issue 31 holds the request path to the empty
    # Wasm of the same table: the probe's writes clear the route cache as the filter's do.
    _SHARED["empty-wasm-istio-10k"],
    Variant("probe-like-attache-istio-10k", "probe: the attache filter's host calls, Istio layout", "probe",
            routes=10_000, extra={"steps": LIKE_ATTACHE_STEPS, "istio_table": 1000}),
    _SHARED["attache-istio-10k"],
]

QUICK = ["baseline", "native", "lua", "empty-wasm", "attache-name", "attache-fallback", "module-name"]

# Opt-level builds: variant build key -> Cargo profile (root Cargo.toml).
OPT_LEVEL_PROFILES = {"s": "wasm-s", "o2": "wasm-o2", "o3": "wasm-o3"}


def select(keys: list[str] | None, profile: bool = False) -> list[Variant]:
    pool = PROFILE if profile else ALL
    if not keys:
        return list(pool)
    known = {v.key: v for v in pool}
    unknown = [k for k in keys if k not in known]
    if unknown:
        raise SystemExit(f"unknown variant(s) {unknown}; known: {sorted(known)}")
    return [known[k] for k in keys]
