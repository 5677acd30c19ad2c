"""Processes as /proc shows them: the children of a pid, and whether a pid still runs
(a zombie does not), for the tests that kill workers and supervisors for real."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of ``pid``, or None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return fields[0], int(fields[1])


def children_of(pid: int) -> set[int]:
    """The running (not zombie) children of ``pid``."""
    found: set[int] = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat is not None and stat[1] == pid and stat[0] != "Z":
                found.add(int(entry))
    return found


def running(pid: int) -> bool:
    """``pid`` exists and is not a zombie: some thread of it still runs. (A process whose
    main thread exited first shows as a zombie while its other threads, which still hold
    its files and sockets, tear down.)"""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for task in tasks:
        try:
            text = Path(f"/proc/{pid}/task/{task}/stat").read_text()
        except OSError:
            continue
        if text.rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
            return True
    return False


def refuses(port: int) -> bool:
    """Nothing listens on 127.0.0.1:``port`` (a connection is refused)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return False
    except ConnectionRefusedError:
        return True


def listening(port: int) -> bool:
    """Some socket of this host listens on TCP ``port`` (IPv4 or IPv6), as the kernel's
    tables say: unlike a connection attempt, this cannot be fooled by a client that
    happens to connect from the same port to itself."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                return True
    return False


def can_bind(port: int) -> bool:
    """A new server could listen on 127.0.0.1:``port`` (no SO_REUSEPORT to share it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
            probe.listen(1)
        except OSError:
            return False
    return True


def wait_for(condition: object, seconds: float, step: float = 0.02) -> float | None:
    """Seconds until ``condition()`` held, or None when it did not within ``seconds``."""
    assert callable(condition)
    start = time.monotonic()
    while True:
        if condition():
            return time.monotonic() - start
        if time.monotonic() - start > seconds:
            return None
        time.sleep(step)
