"""What the machine itself was doing during a run: the load average when it started and
the share of CPU time the hypervisor took (steal), from /proc/stat.

On a virtual machine a busy host slows every run of some minutes for a reason no variant
caused; a figure next to each run lets a reader tell those rounds apart
(bench/findings.md, "How to read these numbers").
"""

import os
from dataclasses import dataclass
from pathlib import Path

STAT = Path("/proc/stat")


@dataclass(frozen=True)
class CpuTimes:
    """The machine-wide `cpu` line of /proc/stat: all ticks, and the stolen ones."""

    total: int
    steal: int

    def steal_share_since(self, earlier: "CpuTimes") -> float:
        """Stolen ticks over all ticks since `earlier` (0.0 when no time passed)."""
        total = self.total - earlier.total
        return (self.steal - earlier.steal) / total if total > 0 else 0.0


def parse_cpu_line(text: str) -> CpuTimes:
    """/proc/stat's first line: `cpu user nice system idle iowait irq softirq steal ...`
    (proc(5)); guest times are already counted in user and nice, so they are left out."""
    fields = text.split()
    if not fields or fields[0] != "cpu" or len(fields) < 9:
        raise ValueError(f"not a /proc/stat cpu line: {text[:80]!r}")
    ticks = [int(f) for f in fields[1:9]]
    return CpuTimes(total=sum(ticks), steal=ticks[7])


def cpu_times() -> CpuTimes | None:
    """Now, or None where /proc/stat cannot be read (the figure is then not reported)."""
    try:
        return parse_cpu_line(STAT.read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return None


def steal_share(before: CpuTimes | None, after: CpuTimes | None) -> float | None:
    if before is None or after is None:
        return None
    return after.steal_share_since(before)


def load_average() -> float:
    return os.getloadavg()[0]
