"""HTTP edges an attacker reached: one port per server, a body cut short, Host/Origin that fail
closed (HTTP/1.1 and HTTP/2), headers that cannot be read, an array under an unknown revision,
and nothing on stdout."""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from harness.servers import HttpServer, jetmcp_command, server_env

PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'


@pytest.fixture(scope="module")
def server() -> Iterator[HttpServer]:
    srv = HttpServer("--log-level", "info")
    try:
        yield srv
    finally:
        srv.stop()


def raw(port: int, head: bytes, body: bytes = b"", *, half_close: bool = False) -> tuple[int, Any]:
    """Send ``head`` (request line and headers, without the blank line) and ``body`` on a
    fresh connection; the status and the JSON body of the reply."""
    with socket.create_connection(("127.0.0.1", port), timeout=5.0) as sock:
        sock.sendall(head + b"\r\nConnection: close\r\n\r\n" + body)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    status = int(data.split(b" ", 2)[1])
    payload = data.split(b"\r\n\r\n", 1)[1]
    return status, json.loads(payload) if payload else None


def post_head(
    extra: bytes = b"", host: bytes | None = b"127.0.0.1", length: int = len(PING)
) -> bytes:
    head = b"POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json"
    if host is not None:
        head += b"\r\nHost: " + host
    return head + b"\r\nContent-Length: " + str(length).encode() + extra


# --------------------------------------------------------------------------- item 8


def test_a_second_server_on_the_same_port_fails(server: HttpServer) -> None:
    """Seen: a second ``jetmcp run --port P`` started and the kernel split the traffic."""
    proc = subprocess.run(
        [
            *jetmcp_command(),
            "run",
            "--transport",
            "http",
            "--host",
            "127.0.0.1",
            "--port",
            str(server.port),
        ],
        capture_output=True,
        timeout=30,
        env=server_env(),
    )
    assert proc.returncode == 2, proc
    assert b"address in use" in proc.stderr, proc.stderr
    assert b"serving" not in proc.stderr, proc.stderr  # no start-up line for a failed start
    assert proc.stdout == b""
    assert b"Traceback" not in proc.stderr
    status, body = raw(server.port, post_head(), PING)
    assert status == 200 and body["result"] == {}


# --------------------------------------------------------------------------- item 9


def test_a_truncated_body_is_a_400_and_nothing_on_stdout(server: HttpServer) -> None:
    """Seen: Content-Length larger than the bytes sent, then half-close: 500 with an empty
    body and a traceback on stdout per request."""
    for _ in range(50):
        status, body = raw(server.port, post_head(length=100), b'{"jsonrpc":', half_close=True)
        assert status == 400, (status, body)
        assert body["error"]["code"] == -32600
        assert "Incomplete body" in body["error"]["message"]
    assert server.stdout() == b""
    assert "Traceback" not in server.stderr()


# --------------------------------------------------------------------------- item 17


def test_granian_logs_go_to_stderr(server: HttpServer) -> None:
    """Seen: Granian's own log lines (and its tracebacks) went to stdout. (The native
    engine's start line goes to stderr too.)"""
    assert "granian" in server.stderr().lower() or "native engine" in server.stderr()
    assert server.stdout() == b""


# --------------------------------------------------------------------------- item 12


@pytest.mark.parametrize(
    ("head", "status", "why"),
    [
        (post_head(host=None), 400, "Missing Host"),
        (post_head(b"\r\nHost: evil.example", host=b"127.0.0.1"), 400, "More than one Host"),
        (post_head(b"\r\nHost: 127.0.0.1", host=b"evil.example"), 400, "More than one Host"),
        (post_head(host="caf\u00e9.localhost".encode()), 400, "cannot be read"),
        (post_head(host=b"caf\xe9"), 400, "cannot be read"),
        (post_head(b"\r\nOrigin: http://caf\xc3\xa9.example"), 403, "cannot be read"),
        (
            post_head(b"\r\nOrigin: http://localhost\r\nOrigin: http://evil.example"),
            400,
            "More than one Origin",
        ),
        (post_head(b"\r\nOrigin: http://evil.example"), 403, "Origin not allowed"),
        (post_head(host=b"evil.example"), 403, "Host not allowed"),
        (
            b"POST /mcp HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: 40",
            400,
            "Missing Host",
        ),
    ],
)
def test_host_and_origin_fail_closed(
    server: HttpServer, head: bytes, status: int, why: str
) -> None:
    got, body = raw(server.port, head, PING)
    assert got == status, (got, body)
    assert why in body["error"]["message"], body


def test_a_good_host_and_origin_pass(server: HttpServer) -> None:
    for extra in (b"", b"\r\nOrigin: http://localhost:3000"):
        status, body = raw(server.port, post_head(extra), PING)
        assert status == 200, body


@pytest.fixture(scope="module")
def h2_server() -> Iterator[HttpServer]:
    srv = HttpServer("--http", "auto")
    try:
        yield srv
    finally:
        srv.stop()


def test_http2_authority_is_checked(h2_server: HttpServer) -> None:
    """Seen: over ``--http 2``/``auto`` no Host header arrives (HTTP/2 carries
    ``:authority``) and nothing was checked."""
    with httpx.Client(http1=False, http2=True, timeout=5.0) as client:
        headers = {"content-type": "application/json", "accept": "application/json"}
        good = client.post(h2_server.url, content=PING, headers=headers)
        assert good.http_version == "HTTP/2" and good.status_code == 200, good.text
        bad = client.post(h2_server.url, content=PING, headers={**headers, "host": "evil.example"})
        assert bad.http_version == "HTTP/2"
        assert bad.status_code == 403, bad.text
        assert "Host not allowed" in bad.json()["error"]["message"]
        origin = client.post(
            h2_server.url, content=PING, headers={**headers, "origin": "http://evil.example"}
        )
        assert origin.status_code == 403, origin.text


# --------------------------------------------------------------------------- item 13


@pytest.mark.parametrize("name", [b"Mcp-Session-Id", b"MCP-Protocol-Version"])
def test_unreadable_session_and_version_headers_are_400(server: HttpServer, name: bytes) -> None:
    """Seen: a value with a non-ASCII byte was taken as no header at all."""
    for value in (b"caf\xc3\xa9", b"\xff"):
        status, body = raw(server.port, post_head(b"\r\n" + name + b": " + value), PING)
        assert status == 400, (status, body)
        assert "cannot be read" in body["error"]["message"], body
    get = (
        b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n" + name + b": \xff"
    )
    status, body = raw(server.port, get)
    assert status == 400, (status, body)


# --------------------------------------------------------------------------- item 16


@pytest.mark.parametrize("payload", [b"[]", PING.join((b"[", b"]"))])
def test_an_array_under_an_unserved_revision_is_400(server: HttpServer, payload: bytes) -> None:
    """Seen: ``[]`` with ``MCP-Protocol-Version: 1999-01-01`` was a 200 with -32600; the
    header itself names a revision nobody serves."""
    head = post_head(b"\r\nMCP-Protocol-Version: 1999-01-01", length=len(payload))
    status, body = raw(server.port, head, payload)
    assert status == 400, (status, body)
    assert body["error"]["code"] == -32022
    assert body["error"]["data"]["requested"] == "1999-01-01"
    assert "2026-07-28" in body["error"]["data"]["supported"]
