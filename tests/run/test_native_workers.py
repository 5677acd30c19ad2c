"""``jetmcp run APP --transport http --server native --workers 2`` (issue 39's ``--workers
N`` for the native engine), its processes killed for real: a worker killed with SIGKILL is
replaced by a new pid within 2 s while the other keeps serving; no worker outlives a killed
main process and the port can be bound again; SIGTERM lets a call in flight finish within
the grace (exit status 0) and kills what runs past it (exit status 1)."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from typing import Any

import httpx

from harness.messages import encode, json_headers, request
from harness.procs import can_bind, children_of, listening, running, wait_for
from harness.servers import AppServer

#: What the issue allows for a replacement to serve, and for the port to be free.
WITHIN = 2.0
APP = "tests.apps.workers_app:app"


def start(*extra: str) -> AppServer:
    return AppServer(
        APP,
        "--server",
        "native",
        "--workers",
        "2",
        "--stateless",
        *extra,
        label="native workers",
    )


def workers(server: AppServer, count: int = 2) -> set[int]:
    """The worker pids of ``server`` once ``count`` of them run."""
    assert wait_for(lambda: len(children_of(server.proc.pid)) == count, 20.0) is not None
    return children_of(server.proc.pid)


def call(server: AppServer, name: str, timeout: float = 5.0, **arguments: Any) -> int:
    """``tools/call name`` on a new connection: the pid the tool answered."""
    body = encode(request("tools/call", {"name": name, "arguments": arguments}, 1))
    reply = httpx.post(server.url, content=body, headers=json_headers(), timeout=timeout)
    assert reply.status_code == 200, reply.text
    result = reply.json()["result"]
    assert not result.get("isError"), result
    return int(result["content"][0]["text"])


def answering_pid(server: AppServer) -> int | None:
    try:
        return call(server, "pid", timeout=1.0)
    except (httpx.HTTPError, AssertionError, KeyError):
        return None


class Caller(threading.Thread):
    """Asks for the pid on a new connection each time until stopped; counts what failed."""

    def __init__(self, server: AppServer) -> None:
        super().__init__(daemon=True)
        self.server = server
        self.pids: list[int] = []
        self.failed: list[str] = []
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            try:
                self.pids.append(call(self.server, "pid"))
            except (httpx.HTTPError, AssertionError, KeyError) as exc:
                self.failed.append(repr(exc))


def raw_call(port: int, name: str, **arguments: Any) -> socket.socket:
    """A ``tools/call`` sent on a socket of its own, its reply left to read."""
    body = encode(request("tools/call", {"name": name, "arguments": arguments}, 1))
    head = "\r\n".join(
        [
            "POST /mcp HTTP/1.1",
            "Host: 127.0.0.1",
            f"Content-Length: {len(body)}",
            *(f"{k}: {v}" for k, v in json_headers().items()),
        ]
    )
    sock = socket.create_connection(("127.0.0.1", port), timeout=60.0)
    sock.sendall(head.encode() + b"\r\n\r\n" + body)
    return sock


def read_all(sock: socket.socket) -> bytes:
    """What comes until the peer closes (b"" when the worker was killed first)."""
    data = b""
    with sock:
        try:
            while chunk := sock.recv(65536):
                data += chunk
        except ConnectionResetError:
            pass
    return data


def test_a_killed_worker_is_replaced_by_a_new_pid_while_the_other_serves() -> None:
    server = start()
    try:
        before = workers(server)
        victim = min(before)
        caller = Caller(server)
        caller.start()
        assert wait_for(lambda: len(caller.pids) > 0, 10.0) is not None
        os.kill(victim, signal.SIGKILL)
        killed_at = len(caller.pids)

        def replaced_and_serving() -> bool:
            new = children_of(server.proc.pid) - before
            return len(new) == 1 and answering_pid(server) is not None

        assert wait_for(replaced_and_serving, WITHIN) is not None, server.stderr()
        (new,) = children_of(server.proc.pid) - before
        # The new worker does serve (the kernel spreads the accepts over both), the
        # killed one never again, and the survivor served all along.
        assert wait_for(lambda: new in caller.pids[killed_at:], 10.0) is not None
        caller.halt.set()
        caller.join(10.0)
        assert victim not in caller.pids[killed_at + 1 :]
        assert (before - {victim}) & set(caller.pids[killed_at:])
        # Every worker accepts from the one socket the main process holds: a connection
        # is never refused; at most the call in flight in the killed worker is lost.
        assert len(caller.failed) <= 1, caller.failed
        assert server.proc.poll() is None, server.stderr()
        assert "died unexpectedly (killed by SIGKILL)" in server.stderr()
        server.proc.send_signal(signal.SIGTERM)
        # It stopped cleanly, but a worker died during the run: the status says so.
        assert server.proc.wait(timeout=30.0) == 1, server.stderr()
        assert not running(victim)
    finally:
        server.stop()


def test_no_worker_outlives_a_killed_main_process() -> None:
    server = start()
    try:
        pids = workers(server)
        os.kill(server.proc.pid, signal.SIGKILL)
        server.proc.wait(timeout=5.0)
        gone = wait_for(
            lambda: not any(running(pid) for pid in pids) and not listening(server.port),
            WITHIN,
        )
        assert gone is not None, ([pid for pid in pids if running(pid)], server.stderr())
        # A new server can take the port (no orphan holds it).
        assert can_bind(server.port)
    finally:
        server.stop()


def test_sigterm_drains_a_call_in_flight_within_the_grace() -> None:
    server = start("--shutdown-grace-seconds", "20")
    try:
        pids = workers(server)
        sock = raw_call(server.port, "sleep", seconds=1.5)
        time.sleep(0.5)  # the call reaches its worker (a settling wait, not a bound)
        server.proc.send_signal(signal.SIGTERM)
        reply = read_all(sock)
        assert reply.startswith(b"HTTP/1.1 200 "), reply
        result = json.loads(reply.split(b"\r\n\r\n", 1)[1])["result"]
        assert int(result["content"][0]["text"]) in pids
        assert server.proc.wait(timeout=30.0) == 0, server.stderr()
        assert "had to be killed" not in server.stderr()
        assert not any(running(pid) for pid in pids)
        assert not listening(server.port)
    finally:
        server.stop()


def test_a_call_past_the_grace_is_killed_and_the_status_says_so() -> None:
    server = start("--shutdown-grace-seconds", "1")
    try:
        pids = workers(server)
        # A thread nothing can cancel: its worker cannot finish within the grace.
        sock = raw_call(server.port, "block", seconds=60.0)
        time.sleep(0.5)  # the call reaches its worker (a settling wait, not a bound)
        started = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        status = server.proc.wait(timeout=30.0)
        assert status == 1, server.stderr()
        assert "had to be killed (SIGKILL)" in server.stderr()
        assert time.monotonic() - started < 30.0
        read_all(sock)
        assert wait_for(lambda: not any(running(pid) for pid in pids), 10.0) is not None
        assert not listening(server.port)
    finally:
        server.stop()
