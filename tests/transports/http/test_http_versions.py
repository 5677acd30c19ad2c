"""``jetmcp run --http``: which HTTP versions Granian speaks, and WebSocket upgrades served
as plain HTTP (MCP has no WebSocket transport)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from harness.servers import HttpServer

#: The HTTP/2 connection preface followed by an empty SETTINGS frame (prior knowledge, h2c).
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def _exchange(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(data)
        try:
            return sock.recv(4096)
        except TimeoutError:
            return b""


@pytest.fixture(scope="module")
def auto_server() -> Iterator[HttpServer]:
    server = HttpServer("--http", "auto")
    try:
        yield server
    finally:
        server.stop()


def test_http2_prior_knowledge_only_when_asked(
    auto_server: HttpServer, http_server: HttpServer
) -> None:
    reply = _exchange(auto_server.port, H2_PREFACE)
    # A SETTINGS frame back: 9-byte header, type 0x4.
    assert len(reply) >= 9 and reply[3] == 0x4, reply[:32]
    # The default (--http 1) does not speak HTTP/2: no SETTINGS frame comes back.
    reply = _exchange(http_server.port, H2_PREFACE)
    assert reply == b"" or reply.startswith(b"HTTP/1.1 4"), reply[:32]


def test_websocket_upgrade_is_plain_http(http_server: HttpServer) -> None:
    request = (
        b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
        b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    )
    reply = _exchange(http_server.port, request)
    status = reply.split(b"\r\n", 1)[0]
    assert status.startswith(b"HTTP/1.1 4"), reply[:200]  # answered by the MCP endpoint
    assert b"101" not in status
