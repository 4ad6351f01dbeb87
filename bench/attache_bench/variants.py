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
]

QUICK = ["baseline", "native", "lua", "empty-wasm", "attache-name", "attache-fallback"]


def select(keys: list[str] | None) -> list[Variant]:
    if not keys:
        return list(ALL)
    known = {v.key: v for v in ALL}
    unknown = [k for k in keys if k not in known]
    if unknown:
        raise SystemExit(f"unknown variant(s) {unknown}; known: {sorted(known)}")
    return [known[k] for k in keys]
