"""Start, query and stop Envoy processes; read their CPU and memory from /proc."""

import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class EnvoyError(Exception):
    pass


@dataclass
class CpuSample:
    """CPU time of a process: utime+stime (clock ticks, as the issue asks) and the
    nanosecond on-CPU time the scheduler keeps per thread (finer, for cross-checking)."""

    ticks: int
    sched_ns: int

    def micros_since(self, earlier: "CpuSample") -> tuple[float, float]:
        return ((self.ticks - earlier.ticks) * 1e6 / CLOCK_TICKS,
                (self.sched_ns - earlier.sched_ns) / 1e3)


class Envoy:
    def __init__(self, binary: Path, config: Path, admin_port: int, cpu: str,
                 log: Path, base_id: int, extra_args: list[str] | None = None,
                 admin_host: str = "127.0.0.1"):
        # Replicas share one admin port on distinct loopback addresses, as pods share
        # one stats port on distinct pod IPs (bench/edit_to_programmed.py).
        self.admin_port, self.admin_host = admin_port, admin_host
        self.log = log
        # Envoy appends to --log-path: an earlier run's lines would be read as
        # this run's (the filter's load figures are read from this log).
        log.unlink(missing_ok=True)
        cmd = ["taskset", "-c", cpu, str(binary), "-c", str(config), "--concurrency", "1",
               "--base-id", str(base_id), "--disable-hot-restart", "--log-level", "warn",
               "--log-path", str(log)] + (extra_args or [])
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)

    @property
    def pid(self) -> int:
        # taskset execs Envoy in place, so the pid is Envoy's own.
        return self.proc.pid

    def admin(self, path: str, method: str = "GET", timeout: float = 5.0) -> str:
        req = urllib.request.Request(f"http://{self.admin_host}:{self.admin_port}{path}", method=method)
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.read().decode()

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise EnvoyError(f"Envoy exited with {self.proc.returncode}; log: {self.log}\n"
                                 + self.tail_log())
            try:
                if self.admin("/ready", timeout=1.0).strip() == "LIVE":
                    return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.05)
        raise EnvoyError(f"Envoy not ready after {timeout}s; log: {self.log}\n" + self.tail_log())

    def tail_log(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def counters(self, prefix: str = "") -> dict[str, int]:
        out = {}
        for line in self.admin(f"/stats?filter={prefix}").splitlines():
            name, _, value = line.partition(": ")
            if value.strip().lstrip("-").isdigit():
                out[name] = int(value)
        return out

    def cpu(self) -> CpuSample:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        # After the command name: state is field 3, utime 14, stime 15 (1-based).
        ticks = int(fields[11]) + int(fields[12])
        sched = 0
        for task in Path(f"/proc/{self.pid}/task").iterdir():
            try:
                sched += int((task / "schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):
                pass  # a thread that ended between listing and reading
        return CpuSample(ticks, sched)

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def version(binary: Path) -> str:
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, check=False)
    return out.stdout.strip().split("version:")[-1].strip()
