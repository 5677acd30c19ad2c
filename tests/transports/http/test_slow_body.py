"""Slow or stalled request bodies never keep a new well-formed client out past the header
timeout (issue 40 item 4), on a real ``jetmcp run`` process of either HTTP engine: a
bounded attack of as many stalled-body sockets as the connection cap, then one ordinary
client, timed.
Before, it waited the whole body timeout (64 sockets, cap 64, 3 s header timeout, 5 s body
timeout: 4.98 s)."""

from __future__ import annotations

import contextlib
import resource
import socket
import time
from collections.abc import Callable

import httpx
import pytest

from harness import servers
from harness.servers import AppServer

APP = "tests.apps.caps_app:app"
CAP = 64
HEADER_SECONDS = 2.0
BODY_SECONDS = 10.0


def stalled_body(port: int) -> socket.socket:
    """A POST whose headers are complete and whose body never comes."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(
        b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:%d\r\ncontent-type: application/json\r\n"
        b"accept: application/json, text/event-stream\r\ncontent-length: 1000\r\n\r\n{" % port
    )
    return sock


def stalled_chunked_body(port: int) -> socket.socket:
    """A POST sent chunked (no ``Content-Length``) whose first chunk comes, then nothing."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(
        b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:%d\r\ncontent-type: application/json\r\n"
        b"accept: application/json, text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        b"1\r\n{\r\n" % port
    )
    return sock


#: Both HTTP engines: Granian's reads are watched by transports/body_watch.py, the native
#: engine evicts the connection stalled longest when a new client finds every slot taken.
ENGINES = pytest.mark.parametrize("engine", ["granian", "native"])


def slow_body_server(engine: str, *extra: str) -> AppServer:
    return AppServer(
        APP,
        "--transport",
        "http",
        "--workers",
        "1",
        "--header-timeout-seconds",
        str(HEADER_SECONDS),
        "--body-timeout-seconds",
        str(BODY_SECONDS),
        *extra,
        label="server",
        engine=engine,
    )


@ENGINES
@pytest.mark.parametrize(
    "opener", [stalled_body, stalled_chunked_body], ids=["content-length", "chunked"]
)
def test_stalled_bodies_at_the_cap_delay_a_new_client_at_most_the_header_timeout(
    engine: str, opener: Callable[[int], socket.socket]
) -> None:
    """Chunked bodies too: before, on Granian their read had only its own body timeout and
    counted in no pressure, so CAP of them made a new client wait the whole body timeout."""
    attack_at_the_cap(slow_body_server(engine, "--max-connections", str(CAP)), CAP, opener)


@ENGINES
def test_the_pressure_is_measured_against_the_cap_in_force(
    engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--max-connections`` above what the open files limit allows is lowered to fit
    (run/cli.py); the body watch must count against that lowered cap. Before, it counted
    against the flag's 4096, so a full (lowered) cap of stalled bodies never made pressure
    and a new client waited the whole body timeout."""
    files = 160  # the cap becomes 160 minus the spare descriptors jetmcp keeps (64)
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < files:
        pytest.skip("the hard open files limit is below the test's")
    command = servers.jetmcp_command
    monkeypatch.setattr(
        servers, "jetmcp_command", lambda: ["prlimit", f"--nofile={files}", *command()]
    )
    server = slow_body_server(engine, "--max-connections", "4096")
    assert "exceeds the open files limit (160): using 96" in server.stderr(), server.stderr()
    attack_at_the_cap(server, 96, stalled_body)


def attack_at_the_cap(server: AppServer, cap: int, opener: Callable[[int], socket.socket]) -> None:
    attack: list[socket.socket] = []
    try:
        for _ in range(cap):
            attack.append(opener(server.port))
        time.sleep(0.5)  # every attacking request is in, reading its body
        began = time.monotonic()
        answer = httpx.post(
            server.url,
            content=b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
            headers={
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
            },
            timeout=3 * BODY_SECONDS,
        )
        waited = time.monotonic() - began
        assert answer.status_code == 200, answer.text
        # The bound is the header timeout; the margin is for a loaded machine, and
        # stays far below the body timeout the client waited before.
        assert waited < HEADER_SECONDS + 2.5, waited
        # The evicted readers were told why: 408, not a dropped connection.
        attack[0].settimeout(10)
        assert attack[0].recv(100).startswith(b"HTTP/1.1 408"), "no 408 for a stalled body"
        assert server.proc.poll() is None
    finally:
        for sock in attack:
            with contextlib.suppress(OSError):
                sock.close()
        server.stop()
