"""Speaking to an HTTP server under test: a POST with the MCP headers, a session opened at a
revision, a POST on a raw socket of our own, and seed 000's refused batch."""

from __future__ import annotations

import socket
from typing import Any
from urllib.parse import urlsplit

import httpx

from harness.messages import encode, initialize_request, json_headers, notification
from harness.servers import READ_TIMEOUT


def post(
    client: httpx.Client,
    url: str,
    body: Any,
    *,
    version: str | None = None,
    session: str | None = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    """POST raw bytes (or JSON-encoded ``body``) with the MCP headers."""
    h = json_headers(version, session)
    if headers:
        h.update(headers)
    return client.post(url, content=encode(body), headers=h)


def open_session(client: httpx.Client, url: str, version: str) -> str:
    """``initialize`` at ``version`` then ``notifications/initialized``; the session id."""
    resp = post(client, url, initialize_request(version))
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["result"]["protocolVersion"] == version, body
    session = resp.headers.get("mcp-session-id")
    assert session, f"initialize opened no session: {resp.headers}"
    done = post(client, url, notification("notifications/initialized"), session=session)
    assert done.status_code == 202, done.text
    return session


def assert_refused_batch(resp: httpx.Response) -> None:
    """Seed 000: a refused (or empty) array is one -32600 with id null, at HTTP 200."""
    assert resp.status_code == 200, (resp.status_code, resp.text)
    body = resp.json()
    assert isinstance(body, dict), body
    assert body["jsonrpc"] == "2.0"
    assert body["id"] is None
    assert body["error"]["code"] == -32600, body
    assert "result" not in body


def raw_http_post(url: str, body: Any, headers: dict[str, str]) -> socket.socket:
    """Send one POST to ``url`` on a socket of our own, headers byte for byte (httpx refuses
    padded values), so the caller decides when the client leaves."""
    data = encode(body)
    split = urlsplit(url)
    head = [
        f"POST {split.path} HTTP/1.1",
        f"Host: {split.netloc}",
        f"Content-Length: {len(data)}",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    sock = socket.create_connection((split.hostname, split.port), timeout=READ_TIMEOUT)
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + data)
    return sock
