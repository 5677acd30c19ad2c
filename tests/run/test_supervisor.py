"""jetmcp.run.supervisor under real faults: a supervisor process of its own
(tests/apps/supervised.py) with workers that answer ``200 <pid>``, its processes killed
with SIGKILL and stopped with SIGTERM (issue 39's ``--workers N``, issue 40 items 1, 2, 9)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

from harness.procs import can_bind, children_of, listening, refuses, running, wait_for
from harness.servers import ROOT, free_port, server_env

#: What the issue allows for a replacement to serve, and for the port to be free.
WITHIN = 2.0


class Supervised:
    def __init__(self, workers: int = 2, grace: float = 5.0, *extra: str) -> None:
        self.port = free_port()
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the process)
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.apps.supervised",
                str(self.port),
                str(workers),
                str(grace),
                *extra,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
            env=server_env(),
            cwd=ROOT,
            start_new_session=True,
        )
        if "crash" not in extra:
            up = wait_for(
                lambda: len(children_of(self.proc.pid)) == workers and self.serves(), 20.0
            )
            assert up is not None, self.stderr()

    def stderr(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")

    def workers(self) -> set[int]:
        return children_of(self.proc.pid)

    def get(self, target: str = "/", timeout: float = 5.0) -> int:
        """The pid that answered ``GET target``."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as sock:
            sock.sendall(f"GET {target} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            data = b""
            while chunk := sock.recv(4096):
                data += chunk
        assert data.startswith(b"HTTP/1.1 200 "), data
        return int(data.split(b"\r\n\r\n", 1)[1])

    def serves(self) -> bool:
        with contextlib.suppress(OSError, AssertionError, ValueError):
            self.get(timeout=1.0)
            return True
        return False

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5.0)
        self._stderr.close()


@contextlib.contextmanager
def supervised(workers: int = 2, grace: float = 5.0, *extra: str) -> Iterator[Supervised]:
    server = Supervised(workers, grace, *extra)
    try:
        yield server
    finally:
        server.stop()


def slow_request(port: int, seconds: float) -> tuple[socket.socket, bytes]:
    """``GET /slow`` in flight in a worker (its head came back), and that head."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30.0)
    sock.sendall(f"GET /slow?seconds={seconds} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        assert chunk, head
        head += chunk
    return sock, head


def rest_of(sock: socket.socket) -> bytes:
    """What else comes until the worker closes (the body), or b"" when it was killed."""
    data = b""
    with sock:
        try:
            while chunk := sock.recv(4096):
                data += chunk
        except ConnectionResetError:
            return data
    return data


def test_a_killed_worker_is_replaced_by_a_new_pid() -> None:
    with supervised() as server:
        before = server.workers()
        victim = min(before)
        os.kill(victim, signal.SIGKILL)
        replaced = wait_for(lambda: len(server.workers() - before) == 1, WITHIN)
        assert replaced is not None, server.stderr()
        (new,) = server.workers() - before
        # Served again, by the survivor or the new one, and the new one does serve.
        assert wait_for(lambda: new in {server.get() for _ in range(20)}, 10.0) is not None
        assert victim not in {server.get() for _ in range(10)}
        assert server.proc.poll() is None
        assert "died unexpectedly (killed by SIGKILL)" in server.stderr()
        server.proc.send_signal(signal.SIGTERM)
        # It stopped cleanly, but a worker died during the run: the status says so.
        assert server.proc.wait(timeout=20.0) == 1, server.stderr()
        assert not running(victim)


def test_a_killed_worker_never_refuses_a_connection() -> None:
    with supervised(workers=1) as server:
        (only,) = server.workers()
        os.kill(only, signal.SIGKILL)
        # No worker at all for a moment: the main process still holds the listening
        # socket, so the connection waits in its backlog for the replacement.
        assert server.get(timeout=10.0) != only


def test_no_worker_outlives_a_killed_supervisor() -> None:
    with supervised() as server:
        pids = server.workers()
        os.kill(server.proc.pid, signal.SIGKILL)
        server.proc.wait(timeout=5.0)
        gone = wait_for(
            lambda: not any(running(pid) for pid in pids) and not listening(server.port),
            WITHIN,
        )
        assert gone is not None, ([pid for pid in pids if running(pid)], server.stderr())
        assert can_bind(server.port)


def test_sigterm_lets_a_request_finish_within_the_grace() -> None:
    with supervised(grace=10.0) as server:
        server_pids = server.workers()
        sock, head = slow_request(server.port, 1.0)
        assert head.startswith(b"HTTP/1.1 200 ")
        server.proc.send_signal(signal.SIGTERM)
        # Once stopping, a new client is refused at once (not left in the backlog) ...
        assert wait_for(lambda: refuses(server.port), 5.0) is not None
        # ... while the request in flight is answered in full.
        assert int(rest_of(sock)) in server_pids
        assert server.proc.wait(timeout=20.0) == 0, server.stderr()
        assert "had to be killed" not in server.stderr()
        assert not listening(server.port)


def test_a_worker_past_the_grace_is_killed_and_the_status_says_so() -> None:
    with supervised(grace=0.5) as server:
        pids = server.workers()
        sock, _ = slow_request(server.port, 60.0)
        started = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(timeout=20.0) == 1, server.stderr()
        assert time.monotonic() - started < 20.0
        assert "had to be killed (SIGKILL)" in server.stderr()
        assert rest_of(sock) == b""
        assert not any(running(pid) for pid in pids)


def test_a_crash_loop_is_reported_with_a_growing_delay() -> None:
    with supervised(workers=1) as server:
        for _ in range(5):
            (pid,) = server.workers()
            os.kill(pid, signal.SIGKILL)
            # The delays double from 0.1 s: 0.1, 0.2, 0.4, 0.8 (each within 30 s of the
            # last start, so in a row).
            assert wait_for(lambda p=pid: server.workers() - {p} != set(), 20.0) is not None
        assert "crash loop" in server.stderr(), server.stderr()
        delays = replacement_delays(server.stderr())
        assert delays == sorted(delays) and delays[0] < delays[-1], delays


def replacement_delays(stderr: str) -> list[float]:
    return [
        float(line.rsplit(" in ", 1)[1].split()[0])
        for line in stderr.splitlines()
        if "replacing it in" in line
    ]


def test_a_worker_that_served_its_healthy_period_starts_a_new_row() -> None:
    with supervised(1, 5.0, "1.0") as server:
        for _ in range(2):
            (pid,) = server.workers()
            os.kill(pid, signal.SIGKILL)
            assert wait_for(lambda p=pid: server.workers() - {p} != set(), 20.0) is not None
        # Killed within 1 s of its start (load may stretch it; then the row restarts too):
        # second in its row, or first of a new one.
        assert replacement_delays(server.stderr())[1] in (0.1, 0.2)
        (pid,) = server.workers()
        time.sleep(1.5)  # longer than the healthy period: the next death starts a new row
        os.kill(pid, signal.SIGKILL)
        assert wait_for(lambda: len(replacement_delays(server.stderr())) == 3, 20.0) is not None
        assert replacement_delays(server.stderr())[2] == 0.1, server.stderr()


def test_workers_that_cannot_start_are_a_reported_crash_loop() -> None:
    with supervised(2, 5.0, "30", "crash") as server:
        assert wait_for(lambda: "crash loop" in server.stderr(), 30.0) is not None
        assert "died unexpectedly (status 3)" in server.stderr()
        # The supervisor itself goes on (replacing at the capped delay) until told to stop.
        assert server.proc.poll() is None
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(timeout=20.0) == 1, server.stderr()
        assert not server.workers()


def test_a_second_sigterm_kills_at_once() -> None:
    with supervised(grace=120.0) as server:
        pids = server.workers()
        sock, _ = slow_request(server.port, 120.0)
        server.proc.send_signal(signal.SIGTERM)
        assert wait_for(lambda: "stopping 2 workers" in server.stderr(), 20.0) is not None
        server.proc.send_signal(signal.SIGTERM)
        # Well before the 120 s grace.
        assert server.proc.wait(timeout=30.0) == 1, server.stderr()
        assert "had to be killed (SIGKILL)" in server.stderr()
        assert rest_of(sock) == b""
        assert not any(running(pid) for pid in pids)


def test_sigint_is_forwarded_as_sigint() -> None:
    with supervised() as server:
        pids = server.workers()
        server.proc.send_signal(signal.SIGINT)
        assert server.proc.wait(timeout=20.0) == 0, server.stderr()
        assert "SIGINT: stopping 2 workers" in server.stderr()
        assert not any(running(pid) for pid in pids)
