"""How much CPU *other* processes burned while we measured (the machine may be shared).

A sample is taken before and after a measured run: the machine's busy time from
/proc/stat minus what our own processes used (the server's process tree, read from
/proc/PID/stat, plus this process and its waited-for children such as wrk, from
getrusage). The rest is foreign load, reported in cores (1.0 = one core fully busy).
"""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path

from proctree import descendants

_HZ = os.sysconf("SC_CLK_TCK")
#: Foreign load (cores) above which a measurement counts as disturbed: the runner measures
#: it again (``--retries``) and the report flags it.
BUSY_CORES = 0.25


def _machine_busy_s() -> float:
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    values = [int(v) for v in fields[:8]]  # user nice system idle iowait irq softirq steal
    idle = values[3] + values[4]
    return (sum(values) - idle) / _HZ


def tree_cpu_s(pid: int | None) -> float:
    """CPU seconds (user + system) used so far by ``pid`` and its live descendants."""
    return _tree_cpu_s(pid)


def _tree_cpu_s(pid: int | None) -> float:
    if pid is None:
        return 0.0
    total = 0
    for p in descendants(pid):
        try:
            stat = Path(f"/proc/{p}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / _HZ


def _own_cpu_s() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


@dataclass
class Sample:
    wall: float
    busy: float
    ours: float
    #: CPU seconds of the server's process tree alone.
    server: float = 0.0


def sample(server_pid: int | None = None) -> Sample:
    server = _tree_cpu_s(server_pid)
    return Sample(time.monotonic(), _machine_busy_s(), _own_cpu_s() + server, server)


def foreign_cores(before: Sample, after: Sample) -> float:
    """Cores' worth of CPU used by processes that are not part of the benchmark."""
    wall = after.wall - before.wall
    if wall <= 0:
        return 0.0
    foreign = (after.busy - before.busy) - (after.ours - before.ours)
    return max(0.0, foreign / wall)
