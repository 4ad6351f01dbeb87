"""Drive one Envoy with hey and account for what it served and what it cost."""

import re
import subprocess
from dataclasses import dataclass, asdict

from . import machine, policy
from .envoy_proc import Envoy

SERVED_STAT = "http.ingress.downstream_rq_completed"


class LoadError(Exception):
    pass


@dataclass
class Measurement:
    requests: int          # served by Envoy (its own counter) during the run
    hey_requests: int      # answered as seen by hey, for cross-checking
    non_200: int
    rps: float
    p50_ms: float
    p99_ms: float
    cpu_us_per_req: float        # utime+stime / requests (the figure)
    sched_us_per_req: float      # scheduler on-CPU ns / requests (finer clock)
    steal_share: float | None = None  # CPU time the hypervisor took during the run

    def as_dict(self) -> dict:
        return asdict(self)


def hey_command(port: int, path: str, seconds: float, connections: int) -> list[str]:
    return ["taskset", "-c", "1", "hey", "-z", f"{seconds}s", "-c", str(connections),
            "-host", policy.HOSTNAME, "-H", f"{policy.REQUEST_REMOVE[0]}: from-client",
            f"http://127.0.0.1:{port}{path}"]


def parse_hey(text: str) -> dict:
    def number(pattern: str) -> float:
        match = re.search(pattern, text)
        if match is None:
            raise LoadError(f"hey output lacks {pattern!r}:\n{text[-800:]}")
        return float(match.group(1))

    codes = {int(c): int(n) for c, n in re.findall(r"\[(\d{3})\]\s+(\d+) responses", text)}
    return {
        "rps": number(r"Requests/sec:\s+([\d.]+)"),
        "p50_ms": number(r"50%+ in ([\d.]+) secs") * 1e3,
        "p99_ms": number(r"99%+ in ([\d.]+) secs") * 1e3,
        "codes": codes,
    }


def run(envoy: Envoy, port: int, path: str, seconds: float, connections: int) -> Measurement:
    before_served = envoy.counters(SERVED_STAT).get(SERVED_STAT, 0)
    before_cpu, before_machine = envoy.cpu(), machine.cpu_times()
    proc = subprocess.run(hey_command(port, path, seconds, connections),
                          capture_output=True, text=True, check=False)
    after_cpu, after_machine = envoy.cpu(), machine.cpu_times()
    after_served = envoy.counters(SERVED_STAT).get(SERVED_STAT, 0)
    if proc.returncode != 0:
        raise LoadError(f"hey failed ({proc.returncode}): {proc.stderr[-500:]}")
    hey = parse_hey(proc.stdout)
    served = after_served - before_served
    if served <= 0:
        raise LoadError(f"Envoy on port {port} served nothing")
    cpu_us, sched_us = after_cpu.micros_since(before_cpu)
    return Measurement(
        requests=served,
        hey_requests=sum(hey["codes"].values()),
        non_200=sum(n for c, n in hey["codes"].items() if c != 200),
        rps=hey["rps"],
        p50_ms=hey["p50_ms"],
        p99_ms=hey["p99_ms"],
        cpu_us_per_req=cpu_us / served,
        sched_us_per_req=sched_us / served,
        steal_share=machine.steal_share(before_machine, after_machine),
    )
