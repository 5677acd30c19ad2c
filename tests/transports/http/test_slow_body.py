"""Slow or stalled request bodies never keep a new well-formed client out past the header
timeout (issue 40 item 4), on a real ``jetmcp run`` (Granian) process: a bounded attack of
as many stalled-body sockets as the connection cap, then one ordinary client, timed.
Before, it waited the whole body timeout (64 sockets, cap 64, 3 s header timeout, 5 s body
timeout: 4.98 s)."""

from __future__ import annotations

import contextlib
import socket
import time

import httpx

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


def test_stalled_bodies_at_the_cap_delay_a_new_client_at_most_the_header_timeout() -> None:
    server = AppServer(
        APP,
        "--transport",
        "http",
        "--workers",
        "1",
        "--max-connections",
        str(CAP),
        "--header-timeout-seconds",
        str(HEADER_SECONDS),
        "--body-timeout-seconds",
        str(BODY_SECONDS),
        label="server",
    )
    attack: list[socket.socket] = []
    try:
        for _ in range(CAP):
            attack.append(stalled_body(server.port))
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
