"""Peak resident memory of a process and all its descendants, from /proc (Linux only)."""

from __future__ import annotations

from pathlib import Path


def descendants(pid: int) -> list[int]:
    """``pid`` and every live process below it (granian workers, node's helpers ...)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name is in parentheses and may hold spaces: split after the last ')'.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: list[int] = []
    stack = [pid]
    while stack:
        current = stack.pop()
        found.append(current)
        stack.extend(children.get(current, []))
    return found


def peak_rss_kib(pid: int) -> int:
    """VmHWM (peak resident set) of one process in KiB; 0 when it is gone or a zombie."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def rss_kib(pid: int) -> int:
    """VmRSS (resident set now) of one process in KiB; 0 when it is gone or a zombie."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_rss_kib(pid: int) -> int:
    """Sum of VmRSS (now) over ``pid`` and its descendants."""
    return sum(rss_kib(p) for p in descendants(pid))


def largest_peak_rss_kib(pid: int) -> int:
    """The largest VmHWM of one process of the tree (granian's worker, say)."""
    return max((peak_rss_kib(p) for p in descendants(pid)), default=0)


def tree_peak_rss_kib(pid: int) -> int:
    """Sum of VmHWM over ``pid`` and its descendants (shared pages count once per process)."""
    return sum(peak_rss_kib(p) for p in descendants(pid))


def session_members(sid: int) -> list[int]:
    """Live processes in session ``sid`` (a server started with start_new_session=True)."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        # fields: state ppid pgrp session ...; a zombie is already dead.
        if len(fields) > 3 and int(fields[3]) == sid and fields[0] != "Z":
            found.append(int(entry.name))
    return found
