"""Connection, stream and time caps, against real ``jetmcp run`` processes: each attack is made
with the caps lowered by flags (small and quick) and, where it stays quick, once at the default
scale; a good client measured while the attack holds must keep being served.

Every wait is bounded: ``GOOD_CLIENT_TIMEOUT`` is what a good client allows one request
(well under the 30 s Granian's defaults locked clients out for), and every read from an
attacking socket has its own deadline.
"""

from __future__ import annotations

import contextlib
import json
import resource
import signal
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from harness.messages import (
    encode,
    initialize_request,
    json_headers,
    modern_headers,
    modern_request,
    modern_routing,
    notification,
    request,
    tool_call,
)
from harness.servers import ROOT, AppServer, HttpServer, StdioServer

APP = "tests.apps.caps_app:app"
#: What a good client allows one request while an attack holds.
GOOD_CLIENT_TIMEOUT = 10.0
#: The bound on reading a status line or an end of stream from an attacking socket.
SOCKET_TIMEOUT = 5.0
#: The attack size at the default scale: just past Granian's old per-worker default of
#: 1,024 connections.
FLOOD = 1030


# --------------------------------------------------------------------------- helpers


class CapsServer(AppServer):
    def __init__(self, *extra: str) -> None:
        super().__init__(APP, *extra, label="caps server")


def good_client(url: str) -> None:
    """A fresh client is served: a new connection, one tools/call, its right answer."""
    with httpx.Client(timeout=GOOD_CLIENT_TIMEOUT) as client:
        resp = client.post(
            url,
            content=encode(tool_call("echo", {"text": "hi"}, id="good")),
            headers=json_headers(),
        )
    assert resp.status_code == 200, (resp.status_code, resp.text)
    assert resp.json()["result"]["content"][0]["text"] == "hi", resp.text


def fd_room(needed: int) -> None:
    """Make room for ``needed`` sockets in this process (skip when the hard limit has none)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= needed:
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        pytest.skip(f"the open files hard limit ({hard}) is below {needed}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/", 1)[0])


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=SOCKET_TIMEOUT)
    return sock


def send_get(port: int, path: str, headers: dict[str, str]) -> socket.socket:
    sock = connect(port)
    head = [f"GET {path} HTTP/1.1", "Host: 127.0.0.1", *(f"{k}: {v}" for k, v in headers.items())]
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
    return sock


def status_of(sock: socket.socket) -> int:
    """The status of the response on ``sock`` (0: none within ``SOCKET_TIMEOUT``)."""
    data = b""
    deadline = time.monotonic() + SOCKET_TIMEOUT
    while b"\r\n" not in data and time.monotonic() < deadline:
        try:
            chunk = sock.recv(4096)
        except TimeoutError:
            return 0
        if not chunk:
            break
        data += chunk
    if not data.startswith(b"HTTP/1.1 "):
        return 0
    return int(data[9:12])


def response_of(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body of a complete (Content-Length) response on ``sock``."""
    data = b""
    deadline = time.monotonic() + SOCKET_TIMEOUT
    while time.monotonic() < deadline:
        if b"\r\n\r\n" in data:
            head, _, body = data.partition(b"\r\n\r\n")
            lines = head.decode().split("\r\n")
            headers = {
                k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:])
            }
            if len(body) >= int(headers.get("content-length", "0")):
                return int(lines[0][9:12]), headers, body
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    raise AssertionError(f"no complete response within {SOCKET_TIMEOUT}s: {data!r}")


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the server closes ``sock`` (reads end) within ``SOCKET_TIMEOUT``."""
    deadline = time.monotonic() + SOCKET_TIMEOUT
    while time.monotonic() < deadline:
        try:
            if not sock.recv(65536):
                return True
        except TimeoutError:
            return False
        except ConnectionResetError:
            return True
    return False


def read_until(sock: socket.socket, marker: bytes) -> bytes:
    data = b""
    deadline = time.monotonic() + SOCKET_TIMEOUT
    while marker not in data:
        assert time.monotonic() < deadline, data
        chunk = sock.recv(4096)
        assert chunk, data
        data += chunk
    return data


def stream_ended(sock: socket.socket) -> bool:
    """Whether the chunked response on ``sock`` ends (or its connection closes) within
    ``SOCKET_TIMEOUT``."""
    data = b""
    deadline = time.monotonic() + SOCKET_TIMEOUT
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            return False
        except ConnectionResetError:
            return True
        if not chunk:
            return True
        data += chunk
        if b"\r\n0\r\n\r\n" in data or data.startswith(b"0\r\n\r\n"):
            return True
    return False


@contextlib.contextmanager
def sockets() -> Iterator[list[socket.socket]]:
    opened: list[socket.socket] = []
    try:
        yield opened
    finally:
        for sock in opened:
            sock.close()


def open_session(url: str, version: str = "2025-11-25") -> str:
    with httpx.Client(timeout=GOOD_CLIENT_TIMEOUT) as client:
        resp = client.post(url, content=encode(initialize_request(version)), headers=json_headers())
        assert resp.status_code == 200, resp.text
        session = resp.headers["mcp-session-id"]
        done = client.post(
            url,
            content=encode(notification("notifications/initialized")),
            headers=json_headers(version, session),
        )
        assert done.status_code == 202, done.text
    return session


def get_headers(session: str, **extra: str) -> dict[str, str]:
    return {
        "Accept": "text/event-stream",
        "Mcp-Session-Id": session,
        "MCP-Protocol-Version": "2025-11-25",
        **extra,
    }


def error_body(body: bytes, code: int) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(body)
    assert message["jsonrpc"] == "2.0", message
    assert message["error"]["code"] == code, message
    return message


# --------------------------------------------------------------------------- connections


def test_idle_sockets_at_the_default_scale_lock_no_client_out() -> None:
    """1,030 idle sockets used to fill Granian's 1,024 connections per worker and keep
    every new client waiting 30 s for its header timeout."""
    fd_room(FLOOD + 256)
    server = HttpServer()
    try:
        with sockets() as idle:
            idle.extend(connect(server.port) for _ in range(FLOOD))
            good_client(server.url)
    finally:
        server.stop()


@pytest.fixture(scope="module")
def tight() -> Iterator[CapsServer]:
    """Connection and body caps lowered so the attacks stay small."""
    server = CapsServer(
        "--max-connections",
        "16",
        "--header-timeout-seconds",
        "0.5",
        "--body-timeout-seconds",
        "0.5",
    )
    try:
        yield server
    finally:
        server.stop()


def test_idle_connections_end_at_the_header_timeout(tight: CapsServer) -> None:
    with sockets() as idle:
        idle.extend(connect(tight.port) for _ in range(24))
        # More idle sockets than the worker serves: the good client waits at most for the
        # header timeout to free a connection.
        good_client(tight.url)
        for sock in idle[:16]:
            assert closed_by_server(sock)
    # An idle keep-alive connection is let go of the same way.
    with sockets() as kept:
        sock = connect(tight.port)
        kept.append(sock)
        body = encode(request("ping", id=1))
        sock.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        status, _, _ = response_of(sock)
        assert status == 200
        assert closed_by_server(sock)


def slow_post(port: int, path: str, headers: dict[str, str], body: bytes) -> socket.socket:
    sock = connect(port)
    head = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", *(f"{k}: {v}" for k, v in headers.items())]
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)
    return sock


def drip(sock: socket.socket, stop: threading.Event) -> threading.Thread:
    """Send one byte every 0.2 s until ``stop`` (or the server closes)."""

    def run() -> None:
        while not stop.wait(0.2):
            try:
                sock.sendall(b" ")
            except OSError:
                return

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_a_slow_body_is_answered_408(tight: CapsServer, framing: str) -> None:
    """Headers, then a byte now and then: the body timeout answers 408 and closes."""
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if framing == "chunked":
        headers["Transfer-Encoding"] = "chunked"
        first = b"1\r\n{\r\n"
    else:
        headers["Content-Length"] = "1000"
        first = b"{"
    stop = threading.Event()
    with sockets() as held:
        slow = slow_post(tight.port, "/mcp", headers, first)
        held.append(slow)
        dripping = drip(slow, stop) if framing == "content-length" else None
        try:
            good_client(tight.url)
            status, _, body = response_of(slow)
        finally:
            stop.set()
            if dripping is not None:
                dripping.join(SOCKET_TIMEOUT)
        assert status == 408, body
        error_body(body, -32600)
        assert closed_by_server(slow)


def test_a_slow_legacy_sse_message_is_answered_408(tight: CapsServer) -> None:
    with sockets() as held:
        stream = send_get(tight.port, "/sse", {"Accept": "text/event-stream"})
        held.append(stream)
        data = read_until(stream, b"\n\n")
        endpoint = data.split(b"data: ", 1)[1].split(b"\n", 1)[0].decode()
        slow = slow_post(
            tight.port,
            endpoint,
            {"Content-Type": "application/json", "Content-Length": "1000"},
            b"{",
        )
        held.append(slow)
        status, _, body = response_of(slow)
        assert status == 408, body
        error_body(body, -32600)


# --------------------------------------------------------------------------- streams


@pytest.fixture(scope="module")
def streams() -> Iterator[CapsServer]:
    server = CapsServer(
        "--max-streams",
        "3",
        "--max-session-streams",
        "2",
        "--max-sse-streams",
        "3",
        "--sse-handshake-seconds",
        "0.5",
    )
    try:
        yield server
    finally:
        server.stop()


def test_get_streams_of_one_session_are_capped(streams: CapsServer) -> None:
    session = open_session(streams.url)
    other = open_session(streams.url)
    with sockets() as held:
        first = send_get(streams.port, "/mcp", get_headers(session))
        second = send_get(streams.port, "/mcp", get_headers(session))
        held += [first, second]
        assert status_of(first) == 200
        assert status_of(second) == 200
        third = send_get(streams.port, "/mcp", get_headers(session))
        held.append(third)
        status, _, body = response_of(third)
        assert status == 409, body
        error_body(body, -32600)
        # Another session and plain requests are served meanwhile.
        mine = send_get(streams.port, "/mcp", get_headers(other))
        held.append(mine)
        assert status_of(mine) == 200
        good_client(streams.url)
    # The streams are gone with their connections: the session may open one again.
    deadline = time.monotonic() + SOCKET_TIMEOUT
    while True:
        with sockets() as again:
            sock = send_get(streams.port, "/mcp", get_headers(session))
            again.append(sock)
            if status_of(sock) == 200:
                break
        assert time.monotonic() < deadline, "the closed streams were never let go of"
        time.sleep(0.05)


def test_a_resumption_replaces_its_stream_past_the_session_cap(streams: CapsServer) -> None:
    session = open_session(streams.url)
    with sockets() as held:
        first = send_get(streams.port, "/mcp", get_headers(session))
        second = send_get(streams.port, "/mcp", get_headers(session))
        held += [first, second]
        data = b""
        while b"id: " not in data:
            chunk = first.recv(4096)
            assert chunk
            data += chunk
        event_id = data.split(b"id: ", 1)[1].split(b"\n", 1)[0].decode()
        assert status_of(second) == 200
        resumed = send_get(
            streams.port, "/mcp", get_headers(session, **{"Last-Event-ID": event_id})
        )
        held.append(resumed)
        assert status_of(resumed) == 200
        # The stream it replaced ends.
        assert stream_ended(first)


def test_get_streams_of_the_server_are_capped(streams: CapsServer) -> None:
    sessions = [open_session(streams.url) for _ in range(4)]
    with sockets() as held:
        for session in sessions[:3]:
            sock = send_get(streams.port, "/mcp", get_headers(session))
            held.append(sock)
            assert status_of(sock) == 200
        over = send_get(streams.port, "/mcp", get_headers(sessions[3]))
        held.append(over)
        status, headers, body = response_of(over)
        assert status == 503, body
        assert headers.get("retry-after") == "1", headers
        error_body(body, -32000)
        good_client(streams.url)


def test_legacy_sse_streams_are_capped_and_closed_without_initialize(
    streams: CapsServer,
) -> None:
    with sockets() as held:
        opened = []
        for _ in range(3):
            sock = send_get(streams.port, "/sse", {"Accept": "text/event-stream"})
            held.append(sock)
            opened.append(sock)
            read_until(sock, b"session_id=")
        over = send_get(streams.port, "/sse", {"Accept": "text/event-stream"})
        held.append(over)
        status, headers, body = response_of(over)
        assert status == 503, body
        assert headers.get("retry-after") == "1", headers
        error_body(body, -32000)
        good_client(streams.url)
        # Nobody initialized them: each ends after the handshake time.
        for sock in opened:
            assert stream_ended(sock)
    # A stream whose client initializes is kept past it.
    with sockets() as held:
        sock = send_get(streams.port, "/sse", {"Accept": "text/event-stream"})
        held.append(sock)
        data = read_until(sock, b"\n\n")
        endpoint = data.split(b"data: ", 1)[1].split(b"\n", 1)[0].decode()
        with httpx.Client(timeout=GOOD_CLIENT_TIMEOUT) as client:
            resp = client.post(
                streams.base + endpoint,
                content=encode(initialize_request("2024-11-05", id="init")),
                headers=json_headers(),
            )
            assert resp.status_code == 202
        read_until(sock, b'"id":"init"')
        sock.settimeout(1.0)
        with pytest.raises(TimeoutError):
            sock.recv(4096)  # still open, silent, a second after the handshake time


@pytest.fixture(scope="module")
def default_server() -> Iterator[CapsServer]:
    """Default caps, for the floods at the scale that used to lock clients out."""
    fd_room(2 * FLOOD + 256)
    server = CapsServer()
    try:
        yield server
    finally:
        server.stop()


def test_a_get_stream_flood_on_one_session_locks_no_client_out(
    default_server: CapsServer,
) -> None:
    session = open_session(default_server.url)
    with sockets() as flood:
        flood.extend(
            send_get(default_server.port, "/mcp", get_headers(session)) for _ in range(FLOOD)
        )
        good_client(default_server.url)
        statuses = [status_of(sock) for sock in flood]
        assert statuses.count(200) == 4, sorted(set(statuses))
        assert statuses.count(409) == FLOOD - 4, sorted(set(statuses))


def test_an_sse_flood_locks_no_client_out(default_server: CapsServer) -> None:
    with sockets() as flood:
        flood.extend(
            send_get(default_server.port, "/sse", {"Accept": "text/event-stream"})
            for _ in range(FLOOD)
        )
        good_client(default_server.url)
        statuses = [status_of(sock) for sock in flood]
        assert statuses.count(200) == 1000, sorted(set(statuses))
        assert statuses.count(503) == FLOOD - 1000, sorted(set(statuses))


# --------------------------------------------------------------------------- deadlines


@pytest.fixture(scope="module")
def timed() -> Iterator[CapsServer]:
    server = CapsServer("--request-timeout-seconds", "0.5")
    try:
        yield server
    finally:
        server.stop()


def post_json(url: str, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    with httpx.Client(timeout=GOOD_CLIENT_TIMEOUT) as client:
        return client.post(url, content=encode(body), headers=headers or json_headers())


def test_a_request_past_its_deadline_is_answered_32001(timed: CapsServer) -> None:
    resp = post_json(timed.url, tool_call("sleep", {"ms": 60_000}, id="late"))
    assert resp.status_code == 200
    reply = resp.json()
    assert reply["id"] == "late"
    assert reply["error"]["code"] == -32001, reply
    # Requests that need no waiting, and ones that finish in time, are untouched.
    assert post_json(timed.url, tool_call("sleep", {"ms": 10}, id=1)).json()["result"]


def test_batch_entries_have_each_their_deadline(timed: CapsServer) -> None:
    batch = [tool_call("sleep", {"ms": 60_000}, id=1), tool_call("echo", {"text": "x"}, id=2)]
    batch.append(tool_call("sleep", {"ms": 10}, id=3))
    resp = post_json(timed.url, batch, json_headers("2025-03-26"))
    assert resp.status_code == 200
    replies = {r["id"]: r for r in resp.json()}
    assert replies[1]["error"]["code"] == -32001, replies
    assert replies[2]["result"]["content"][0]["text"] == "x"
    assert replies[3]["result"]["content"][0]["text"] == "slept 10 ms"


def test_2026_07_28_requests_have_deadlines(timed: CapsServer) -> None:
    body = modern_request("tools/call", {"name": "sleep", "arguments": {"ms": 60_000}}, id="m")
    resp = post_json(timed.url, body, modern_headers() | modern_routing(body))
    assert resp.status_code == 200, resp.text
    assert resp.json()["error"]["code"] == -32001, resp.text
    batch = [body, modern_request("tools/call", {"name": "echo", "arguments": {"text": "y"}})]
    resp = post_json(timed.url, batch, modern_headers())
    assert resp.status_code == 200, resp.text
    first, second = resp.json()
    assert first["error"]["code"] == -32001, first
    assert second["result"]["content"][0]["text"] == "y", second


def test_a_tool_timeout_overrides_the_server_deadline(timed: CapsServer) -> None:
    # hasty's own 0.3 s comes first; patient has none and outlives the server's 0.5 s.
    hasty = post_json(timed.url, tool_call("hasty", {"ms": 60_000})).json()
    assert hasty["error"]["code"] == -32001, hasty
    assert "0.3 seconds" in hasty["error"]["message"], hasty
    patient = post_json(timed.url, tool_call("patient", {"ms": 900})).json()
    assert patient["result"]["content"][0]["text"] == "slept 900 ms", patient


def test_stdio_requests_have_deadlines() -> None:
    io = StdioServer("--request-timeout-seconds", "0.5", app=APP)
    try:
        reply = io.call(tool_call("sleep", {"ms": 60_000}, id="s"))
        assert reply["id"] == "s"
        assert reply["error"]["code"] == -32001, reply
    finally:
        io.stop()


# --------------------------------------------------------------------------- in flight


@pytest.fixture(scope="module")
def crowded() -> Iterator[CapsServer]:
    server = CapsServer("--max-inflight", "4", "--max-session-inflight", "2")
    try:
        yield server
    finally:
        server.stop()


def in_background(url: str, body: Any, headers: dict[str, str]) -> socket.socket:
    """POST ``body`` on a socket of our own and leave it there (the request stays open)."""
    data = encode(body)
    head = [
        "POST /mcp HTTP/1.1",
        "Host: 127.0.0.1",
        f"Content-Length: {len(data)}",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    sock = connect(port_of(url))
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + data)
    return sock


def wait_until_refused(url: str, body: Any, headers: dict[str, str], status: int) -> httpx.Response:
    """POST ``body`` until it is refused with ``status`` (the requests sent before it are
    being taken in meanwhile); the refusal."""
    deadline = time.monotonic() + SOCKET_TIMEOUT
    while True:
        resp = post_json(url, body, headers)
        if resp.status_code == status:
            return resp
        assert time.monotonic() < deadline, (resp.status_code, resp.text)
        time.sleep(0.05)


def open_gate(url: str, name: str) -> None:
    resp = post_json(url, tool_call("open_gate", {"name": name}))
    assert resp.status_code == 200, resp.text


def test_requests_past_the_server_cap_are_refused_at_once(crowded: CapsServer) -> None:
    gate = tool_call("wait_gate", {"name": "server-cap"})
    with sockets() as held:
        held.extend(in_background(crowded.url, gate, json_headers()) for _ in range(4))
        resp = wait_until_refused(crowded.url, tool_call("sleep", {"ms": 10}, id="x"), {}, 503)
        assert resp.headers["retry-after"] == "1"
        assert resp.json()["id"] == "x"
        assert resp.json()["error"]["code"] == -32000, resp.text
        # What needs no waiting is still answered.
        good_client(crowded.url)
        # In a batch the entries past the cap are refused in their slots; the batch is 200.
        batch = [tool_call("sleep", {"ms": 10}, id=1), tool_call("echo", {"text": "e"}, id=2)]
        resp = post_json(crowded.url, batch, json_headers("2025-03-26"))
        assert resp.status_code == 200
        replies = {r["id"]: r for r in resp.json()}
        assert replies[1]["error"]["code"] == -32000, replies
        assert replies[2]["result"]["content"][0]["text"] == "e"
        # The ones taken in are answered in full (and free their places).
        open_gate(crowded.url, "server-cap")
        assert [response_of(sock)[0] for sock in held] == [200] * 4


def test_requests_past_the_session_cap_are_refused_with_429(crowded: CapsServer) -> None:
    session = open_session(crowded.url)
    mine = json_headers("2025-11-25", session)
    with sockets() as held:
        gate = tool_call("wait_gate", {"name": "session-cap"})
        held.extend(in_background(crowded.url, gate, mine) for _ in range(2))
        resp = wait_until_refused(crowded.url, tool_call("sleep", {"ms": 10}, id="y"), mine, 429)
        assert resp.headers["retry-after"] == "1"
        assert resp.json()["error"]["code"] == -32000, resp.text
        # Other clients are not held to this session's cap.
        other = post_json(crowded.url, tool_call("sleep", {"ms": 10}, id="z"))
        assert other.status_code == 200, other.text
        assert other.json()["result"], other.text
        open_gate(crowded.url, "session-cap")
        assert [response_of(sock)[0] for sock in held] == [200] * 2


def test_batches_of_a_client_that_left_stay_bounded(crowded: CapsServer) -> None:
    """Legacy requests run on after their client leaves (by design), within the caps: 40
    batches of calls that wait, from a client that hangs up, start no more than the server
    cap (their deadline ends them too: see the deadline tests)."""
    batch = [tool_call("wait_gate", {"name": "left"}, id=i) for i in range(8)]
    for _ in range(40):
        in_background(crowded.url, batch, json_headers("2025-03-26")).close()
    resp = wait_until_refused(crowded.url, tool_call("sleep", {"ms": 10}, id="w"), {}, 503)
    assert resp.json()["error"]["code"] == -32000
    # Once they end, the server takes requests again.
    open_gate(crowded.url, "left")
    deadline = time.monotonic() + 10.0
    while True:
        resp = post_json(crowded.url, tool_call("sleep", {"ms": 10}, id="v"))
        if resp.status_code == 200:
            break
        assert time.monotonic() < deadline, resp.text
        time.sleep(0.2)
    assert resp.json()["result"]["content"][0]["text"] == "slept 10 ms"


def test_stdio_requests_past_the_cap_get_an_error_line() -> None:
    io = StdioServer("--max-inflight", "2", app=APP)
    try:
        io.send(tool_call("wait_gate", {"name": "stdio"}, id=1))
        io.send(tool_call("wait_gate", {"name": "stdio"}, id=2))
        reply = io.call(tool_call("sleep", {"ms": 10}, id=3))
        assert reply["id"] == 3
        assert reply["error"]["code"] == -32000, reply
        assert io.call(tool_call("open_gate", {"name": "stdio"}, id=4))["id"] == 4
        assert {io.read()["id"], io.read()["id"]} == {1, 2}
    finally:
        io.stop()


# --------------------------------------------------------------------------- shutdown


def test_sigterm_answers_what_still_runs_after_the_grace_period() -> None:
    server = CapsServer("--shutdown-grace-seconds", "1", "--max-inflight", "1")
    try:
        sock = in_background(
            server.url, tool_call("sleep", {"ms": 60_000}, id="held"), json_headers()
        )
        with sockets() as held:
            held.append(sock)
            # Running once it fills the one place for a request that waits.
            wait_until_refused(server.url, tool_call("sleep", {"ms": 1}), {}, 503)
            server.proc.send_signal(signal.SIGTERM)
            status, headers, body = response_of(sock)
            assert status == 503, body
            assert headers.get("retry-after") == "1"
            reply = error_body(body, -32000)
            assert reply["id"] == "held"
        assert server.proc.wait(timeout=SOCKET_TIMEOUT) == 0
    finally:
        server.stop()


def wait_until_stuck(url: str) -> None:
    """Return once the server stops answering (its event loop is blocked)."""
    deadline = time.monotonic() + SOCKET_TIMEOUT
    with httpx.Client(timeout=0.3) as client:
        while True:
            try:
                client.post(url, content=encode(request("ping")), headers=json_headers())
            except httpx.TimeoutException:
                return
            assert time.monotonic() < deadline, "the server kept answering"
            time.sleep(0.05)


def test_a_stuck_worker_is_killed_after_the_grace_period() -> None:
    server = CapsServer("--shutdown-grace-seconds", "0.5")
    try:
        sock = in_background(server.url, tool_call("block", {"seconds": 120}), json_headers())
        with sockets() as held:
            held.append(sock)
            wait_until_stuck(server.url)
            server.proc.send_signal(signal.SIGTERM)
            # Grace (0.5 s, rounded up to 1) and Granian's kill 5 s after it: a worker
            # that had to be killed makes the exit status 1 (issue 40 item 9).
            assert server.proc.wait(timeout=15.0) == 1, server.stderr()
        assert "had to be killed (SIGKILL)" in server.stderr()
    finally:
        server.stop()


def test_stdio_end_of_input_answers_what_still_runs_after_the_grace_period() -> None:
    io = StdioServer("--shutdown-grace-seconds", "0.5", app=APP)
    try:
        io.send(tool_call("sleep", {"ms": 60_000}, id="eof"))
        time.sleep(0.2)
        io.close_stdin()
        reply = io.read()
        assert reply["id"] == "eof"
        assert reply["error"]["code"] == -32000, reply
        assert io.wait() == 0
    finally:
        io.stop()


def test_max_connections_is_fitted_to_the_open_files_limit() -> None:
    """More connections than the process may open files would have Granian fail its
    accepts (EMFILE) instead of leaving clients in the backlog: the cap is lowered to fit,
    with a warning. (The soft limit itself is already raised to the hard one: jetmcp does
    it, and Granian's extension does it as it loads.)"""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        pytest.skip("no hard limit on open files")
    server = CapsServer("--max-connections", str(hard + 1000))
    try:
        good_client(server.url)
        assert "exceeds the open files limit" in server.stderr(), server.stderr()
    finally:
        server.stop()


def test_caps_are_flags_with_their_defaults() -> None:
    from jetmcp.run.cli import _parser, _settings
    from jetmcp.settings import Settings

    ns = _parser().parse_args(["run"])
    got = _settings(ns)
    want = Settings()
    for name in (
        "backlog",
        "max_connections",
        "header_timeout_seconds",
        "body_timeout_seconds",
        "max_streams",
        "max_session_streams",
        "max_sse_streams",
        "sse_handshake_seconds",
        "request_timeout_seconds",
        "max_inflight",
        "max_session_inflight",
        "shutdown_grace_seconds",
    ):
        assert getattr(got, name) == getattr(want, name), name
        flag = "--" + name.replace("_", "-")
        assert f"| `{flag}` | {_documented_default(getattr(want, name))} |" in FLAGS_PAGE, flag


#: The page with the table of ``jetmcp run`` flags and their defaults.
FLAGS_PAGE = (ROOT / "docs" / "configuration.md").read_text()


def _documented_default(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


# --------------------------------------------------------------------------- in process


def test_a_shorter_deadline_added_later_fires_first() -> None:
    """One timer serves every deadline: a request with a shorter one, added while a
    longer one is armed, is still stopped on time (and the longer one is left running)."""
    import asyncio

    from jetmcp.core.deadlines import STOP_SHUTDOWN, STOP_TIMEOUT, Deadlines

    async def main() -> None:
        deadlines = Deadlines()
        stopped: list[tuple[str, int]] = []

        async def waiter(name: str, seconds: float) -> None:
            task = asyncio.current_task()
            assert task is not None
            deadlines.add(task, seconds)
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                stopped.append((name, deadlines.take_stop(task)))
            finally:
                deadlines.remove(task, seconds)

        slow = asyncio.create_task(waiter("slow", 20.0))
        await asyncio.sleep(0)
        fast = asyncio.create_task(waiter("fast", 0.05))
        async with asyncio.timeout(5.0):
            await fast
        assert stopped == [("fast", STOP_TIMEOUT)]
        assert not slow.done()
        assert deadlines.count == 1
        assert deadlines.stop_all() == 1
        await slow
        assert stopped == [("fast", STOP_TIMEOUT), ("slow", STOP_SHUTDOWN)]
        assert deadlines.count == 0

    asyncio.run(main())


def test_a_tool_timeout_must_be_positive() -> None:
    from jetmcp.server import Server

    app = Server("t")
    for bad in (0, -1, "5", True):
        with pytest.raises(ValueError, match="timeout"):
            app.add_tool(lambda: "x", name="t", timeout=bad)
