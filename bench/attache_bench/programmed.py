"""The pure parts of bench/edit_to_programmed.py (issue 45's targets): reading a policy's
Programmed condition, the stand-in's write log, an Envoy's served document id, and the
summaries the report quotes. Tested in bench/test_bench.py."""

import json
import statistics


def programmed(policy: dict) -> list[dict]:
    """The Programmed condition of every ancestor of a RoutePolicy (empty: no status yet)."""
    found = []
    for ancestor in (policy.get("status") or {}).get("ancestors") or []:
        for condition in ancestor.get("conditions") or []:
            if condition.get("type") == "Programmed":
                found.append(condition)
    return found


def served_by_all(policy: dict, replicas: int, generation: int | None = None) -> bool:
    """True when every ancestor says Programmed True, served by all `replicas`, and (if given)
    the condition observed this metadata.generation: the status that is correct once settled."""
    conditions = programmed(policy)
    if not conditions:
        return False
    for c in conditions:
        if c.get("status") != "True" or f"served by {replicas} of {replicas} replicas" not in c.get("message", ""):
            return False
        if generation is not None and c.get("observedGeneration") != generation:
            return False
    return True


def read_write_log(text: str) -> dict:
    """The stand-in's --write-log: every write line, the records it lost (`lagged`, counted
    rather than silently missing) and the exact total it wrote on Ctrl-C (None if absent)."""
    writes, lagged, total = [], 0, None
    for line in text.splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if "lagged" in row:
            lagged += row["lagged"]
        elif "total_writes" in row:
            total = row["total_writes"]
        else:
            writes.append(row)
    return {"writes": writes, "lagged": lagged, "total": total}


def status_writes(writes: list[dict], since: float, until: float, resource: str = "routepolicies") -> dict[str, int]:
    """Status writes per object name of `resource` received in [since, until) (wall clock)."""
    per_name: dict[str, int] = {}
    for w in writes:
        if w.get("resource") == resource and w.get("subresource") == "status" and since <= w["at"] < until:
            per_name[w["name"]] = per_name.get(w["name"], 0) + 1
    return per_name


def last_status_write(writes: list[dict], since: float, until: float, name: str | None = None,
                      resource: str = "routepolicies") -> float | None:
    """The arrival time of the last status write (to `name`, or to any) in [since, until]: when a
    status a watcher saw at `until` was written. The watcher, in Python, may read a burst of
    events late; the server's own clock for the write is not."""
    times = [w["at"] for w in writes if w.get("resource") == resource and w.get("subresource") == "status"
             and since <= w["at"] <= until and (name is None or w.get("name") == name)]
    return max(times, default=None)


def document_ids(stats_text: str) -> list[int]:
    """The filter's `attache.config.document_id` gauge(s) in an Envoy's plain /stats output
    (`name: value` lines; Envoy prefixes the filter's own stats, so match the suffix)."""
    ids = []
    for line in stats_text.splitlines():
        name, _, value = line.partition(":")
        if name.strip().endswith("attache.config.document_id") and value.strip().isdigit():
            ids.append(int(value.strip()))
    return ids


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(values: list[float]) -> dict:
    """p50 / p90 / max of a list of milliseconds (empty: nothing measured)."""
    if not values:
        return {}
    return {"p50": statistics.median(values), "p90": percentile(values, 0.9), "max": max(values), "n": len(values)}


def leg_shares(edits: list[dict]) -> dict[str, float]:
    """Each leg's share of the median edit, from the legs' medians (the legs' medians need not
    add up to the total's median, so the shares are of their sum, and say so in the report)."""
    legs = ("edit_to_applied_ms", "applied_to_served_ms", "served_to_status_ms")
    medians = {leg: statistics.median(e[leg] for e in edits) for leg in legs} if edits else {}
    whole = sum(medians.values())
    return {leg: (m / whole if whole else 0.0) for leg, m in medians.items()}
