"""The native HTTP engine's connection handling, on a real ``jetmcp run --server native``
process over raw sockets: pipelining (inline answers and task answers in order, each once),
``Expect: 100-continue``, HTTP/1.0, ``Connection: close``, an HTTP/2 preface, framing
refusals (400/413/431, then closed), header and body timeouts, the connection cap making
room for a new client, backpressure from a client that never reads, the drain on SIGTERM,
and TLS through uvloop's SSL."""

from __future__ import annotations

import datetime
import ipaddress
import json
import signal
import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.messages import encode, json_headers, request
from harness.servers import HttpServer

READ_TIMEOUT = 10.0


@pytest.fixture(scope="module")
def native() -> Iterator[HttpServer]:
    server = HttpServer(
        "--server",
        "native",
        "--max-body-bytes",
        "4096",
        "--header-timeout-seconds",
        "1",
        "--body-timeout-seconds",
        "1",
    )
    try:
        yield server
    finally:
        server.stop()


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=READ_TIMEOUT)


def post_bytes(
    body: Any,
    *extra: str,
    version: str = "2025-06-18",
    http: str = "1.1",
    accept: str = "application/json, text/event-stream",
) -> bytes:
    data = encode(body)
    head = [
        f"POST /mcp HTTP/{http}",
        "Host: 127.0.0.1",
        "Content-Type: application/json",
        f"Accept: {accept}",
        f"MCP-Protocol-Version: {version}",
        f"Content-Length: {len(data)}",
        *extra,
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + data


class Reader:
    """Reads whole responses (Content-Length framed) off a socket, in order."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""

    def _fill(self) -> bool:
        chunk = self.sock.recv(65536)
        self.buf += chunk
        return bool(chunk)

    def response(self) -> tuple[int, dict[str, str], bytes]:
        while b"\r\n\r\n" not in self.buf:
            if not self._fill():
                raise EOFError(self.buf)
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        while len(self.buf) < length:
            if not self._fill():
                raise EOFError(self.buf)
        body, self.buf = self.buf[:length], self.buf[length:]
        return status, headers, body

    def closed(self) -> bool:
        """Whether the server closes the connection (nothing more is sent)."""
        try:
            return not self.buf and not self._fill()
        except ConnectionResetError:
            return True


def result_of(body: bytes) -> Any:
    return json.loads(body)["result"]


def test_pipelined_requests_are_answered_in_order_each_once(native: HttpServer) -> None:
    """Inline answers (ping, a plain tool) and task answers (initialize, an async tool)
    interleaved on one connection, all sent at once."""
    init = request(
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
        id="i",
    )
    bodies = [
        request("ping", id=1),
        request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}, id=2),
        init,
        request("tools/call", {"name": "sleep", "arguments": {"ms": 50}}, id=3),
        request("tools/call", {"name": "echo", "arguments": {"text": "last"}}, id=4),
    ]
    with connect(native.port) as sock:
        sock.sendall(b"".join(post_bytes(b) for b in bodies))
        reader = Reader(sock)
        ids = []
        for _ in bodies:
            status, _, body = reader.response()
            assert status == 200, body
            ids.append(json.loads(body)["id"])
        assert ids == [1, 2, "i", 3, 4]
        sock.settimeout(0.5)
        with pytest.raises(TimeoutError):
            sock.recv(1)  # nothing more: each answered once


def test_expect_100_continue(native: HttpServer) -> None:
    data = encode(request("ping", id=1))
    with connect(native.port) as sock:
        head = post_bytes(request("ping", id=1), "Expect: 100-continue")
        sock.sendall(head[: len(head) - len(data)])
        interim = sock.recv(64)
        assert interim.startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
        sock.sendall(data)
        status, _, body = Reader(sock).response()
        assert status == 200
        assert json.loads(body)["id"] == 1


def test_http_1_0_closes_unless_kept_alive(native: HttpServer) -> None:
    with connect(native.port) as sock:
        sock.sendall(post_bytes(request("ping", id=1), http="1.0"))
        reader = Reader(sock)
        status, _, _ = reader.response()
        assert status == 200
        assert reader.closed()
    with connect(native.port) as sock:
        reader = Reader(sock)
        for n in range(2):
            sock.sendall(post_bytes(request("ping", id=n), "Connection: keep-alive", http="1.0"))
            status, headers, _ = reader.response()
            assert status == 200
            assert headers.get("connection", "").lower() == "keep-alive"


def test_connection_close_is_honoured(native: HttpServer) -> None:
    with connect(native.port) as sock:
        sock.sendall(
            post_bytes(request("ping", id=1), "Connection: close")
            + post_bytes(request("ping", id=2))
        )
        reader = Reader(sock)
        status, headers, _ = reader.response()
        assert status == 200
        assert headers["connection"] == "close"
        assert reader.closed()  # the second request is never read


def test_an_http2_preface_is_closed(native: HttpServer) -> None:
    with connect(native.port) as sock:
        sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        assert Reader(sock).closed()


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (
            b"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            400,
        ),
        (b"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 99999\r\n\r\n", 413),
        (b"GET /mcp HTTP/1.1\r\nHost: a\r\nX-Big: " + b"x" * 40000 + b"\r\n\r\n", 431),
        (b"GET /mcp HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 400),
    ],
    ids=["cl-and-te", "body-over-limit", "header-too-large", "no-host"],
)
def test_bad_framing_is_refused_then_closed(native: HttpServer, raw: bytes, status: int) -> None:
    with connect(native.port) as sock:
        # A well-formed request after the bad one is never read.
        sock.sendall(raw + post_bytes(request("ping", id=1)))
        reader = Reader(sock)
        got, headers, body = reader.response()
        assert got == status, body
        assert headers["connection"] == "close"
        assert json.loads(body)["error"]["code"] == -32600
        assert reader.closed()


def test_a_stalled_head_or_body_times_out_408(native: HttpServer) -> None:
    head_only = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Len"
    body_part = post_bytes(request("ping", id=1))[:-5]
    for partial in (head_only, body_part):
        with connect(native.port) as sock:
            sock.sendall(partial)
            reader = Reader(sock)
            status, _, body = reader.response()
            assert status == 408, body
            assert "not received within 1 seconds" in json.loads(body)["error"]["message"]
            assert reader.closed()


def test_a_full_server_makes_room_for_a_new_client() -> None:
    """Every slot held by clients stalled in their bodies: a new client is served, and
    the one stalled longest is told 408."""
    server = HttpServer(
        "--server", "native", "--max-connections", "4", "--body-timeout-seconds", "120"
    )
    try:
        stalled = []
        for _ in range(4):
            sock = connect(server.port)
            sock.sendall(post_bytes(request("ping", id=1))[:-3])
            stalled.append(sock)
            time.sleep(0.3)  # so the first is the oldest
        with httpx.Client(timeout=READ_TIMEOUT) as client:
            resp = client.post(
                server.url, content=encode(request("ping", id=9)), headers=json_headers()
            )
        assert resp.status_code == 200
        status, _, _ = Reader(stalled[0]).response()
        assert status == 408
        for sock in stalled:
            sock.close()
    finally:
        server.stop()


def test_a_client_that_never_reads_stops_being_read(native: HttpServer) -> None:
    """Pipelined requests with 2 KiB replies, never read: the server stops reading once
    its write buffer is full, so the bytes it takes stay bounded; others are still served."""
    one = post_bytes(request("tools/call", {"name": "echo", "arguments": {"text": "x" * 2000}}))
    burst = one * 256
    with connect(native.port) as sock:
        sock.setblocking(False)
        sent = 0
        quiet_since = time.monotonic()
        # Far more than the socket buffers and the write-buffer mark together hold.
        while sent < 400 * len(burst) and time.monotonic() - quiet_since < 2.0:
            try:
                sent += sock.send(burst)
                quiet_since = time.monotonic()
            except BlockingIOError:
                time.sleep(0.05)
        assert sent < 400 * len(burst), "the server read everything a non-reader sent"
        with httpx.Client(timeout=READ_TIMEOUT) as client:
            resp = client.post(
                native.url, content=encode(request("ping", id=1)), headers=json_headers()
            )
        assert resp.status_code == 200


def test_sigterm_drains_what_runs_then_exits() -> None:
    server = HttpServer("--server", "native", "--shutdown-grace-seconds", "10")
    try:
        sock = connect(server.port)
        sock.sendall(post_bytes(request("tools/call", {"name": "sleep", "arguments": {"ms": 800}})))
        time.sleep(0.3)
        server.proc.send_signal(signal.SIGTERM)
        status, headers, body = Reader(sock).response()
        assert status == 200, body
        assert headers["connection"] == "close"
        assert server.proc.wait(timeout=10.0) == 0
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", server.port), timeout=1.0)
        sock.close()
    finally:
        server.stop()


def _self_signed(directory: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    certfile = directory / "cert.pem"
    keyfile = directory / "key.pem"
    certfile.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    keyfile.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return certfile, keyfile


class TlsServer(HttpServer):
    """The readiness probe of :class:`HttpServer` speaks plain HTTP: this one, HTTPS."""

    def __init__(self, certfile: Path, *extra: str) -> None:
        self.context = ssl.create_default_context(cafile=str(certfile))
        super().__init__(*extra)
        self.url = self.url.replace("http://", "https://")

    def _wait_ready(self, ready: str = "ping") -> None:
        deadline = time.monotonic() + 30.0
        url = f"https://127.0.0.1:{self.port}/mcp"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(self.stderr())
            try:
                httpx.post(
                    url,
                    content=encode(request("ping", id=0)),
                    headers=json_headers(),
                    verify=self.context,
                    timeout=2.0,
                )
                return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError(f"no HTTPS answer:\n{self.stderr()}")


def test_tls_with_a_self_signed_certificate(tmp_path: Path) -> None:
    certfile, keyfile = _self_signed(tmp_path)
    server = TlsServer(
        certfile,
        "--server",
        "native",
        "--ssl-certfile",
        str(certfile),
        "--ssl-keyfile",
        str(keyfile),
    )
    try:
        with httpx.Client(verify=server.context, timeout=READ_TIMEOUT) as client:
            body = request("tools/call", {"name": "add", "arguments": {"a": 40, "b": 2}}, id=1)
            resp = client.post(server.url, content=encode(body), headers=json_headers())
            assert resp.status_code == 200
            assert result_of(resp.content)["content"][0]["text"] == "42"
        # Plain HTTP on the TLS port is not served.
        with connect(server.port) as sock:
            sock.sendall(post_bytes(request("ping", id=1)))
            try:
                data = sock.recv(65536)
            except ConnectionResetError:
                data = b""
            assert not data.startswith(b"HTTP/1.1 200")
    finally:
        server.stop()


@pytest.mark.parametrize("stateless", [True, False])
def test_async_tools_on_the_usual_lane_run_inside_a_task(stateless: bool) -> None:
    """Seen: the native engine's callback ran an async tool's first step outside any task
    (asyncio.timeout raised, and Redis calls with it)."""
    extra = ("--stateless",) if stateless else ()
    server = HttpServer("--server", "native", *extra, app="tests/apps/native_app.py:app")
    try:
        with connect(server.port) as sock:
            reader = Reader(sock)
            for n, tool in enumerate(("in_task", "in_task_ctx", "add")):
                arguments = {"a": 1, "b": 1} if tool == "add" else {}
                call = request("tools/call", {"name": tool, "arguments": arguments}, id=n)
                # JSON only: the Context tool's log line is dropped, not streamed.
                sock.sendall(post_bytes(call, accept="application/json"))
                status, _, body = reader.response()
                assert status == 200, body
                result = result_of(body)
                assert not result["isError"], result
                assert result["content"][0]["text"] == ("2" if tool == "add" else "True")
    finally:
        server.stop()
