"""Fuzzing live servers: a ``jetmcp run`` process over HTTP, and one over stdio.

Hypothesis writes requests and batches of every kind (valid ones, then the same with bytes
edited, and random bytes), with random headers (``Content-Type``, ``Accept``, every served
``MCP-Protocol-Version`` and junk ones, real, unknown and junk ``Mcp-Session-Id``,
``Mcp-Method``/``Mcp-Name``, ``Origin``), and sends them to one server process. Every answer
must be JSON-RPC of the right shape whose ids are the request's own (or null), under a status
docs/protocol.md documents, with a JSON-RPC error body for every 4xx; never a 5xx; every request
answered within a bounded time. After the run the process is alive and answers a ping. The
stdio server must survive every line and answer every request line.

Bounded for CI: ``JETMCP_FUZZ_EXAMPLES`` (default below) sets the examples of each fuzzer;
raise it for a longer run, e.g. ``JETMCP_FUZZ_EXAMPLES=20000 pytest tests/test_fuzz_live.py``.
"""

from __future__ import annotations

import itertools
import json
import os
import socket
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from harness.http import open_session
from harness.messages import (
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    initialize_request,
    modern_routing,
    notification,
    request,
)
from harness.servers import READ_TIMEOUT, AppServer, StdioServer
from jetmcp import _wire
from jetmcp.protocol import revisions

EXAMPLES = int(os.environ.get("JETMCP_FUZZ_EXAMPLES", "300"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
)
#: Every revision served, oldest first.
LEGACY = [r.version for r in revisions.LEGACY]
VERSIONS = [*LEGACY, *(r.version for r in revisions.MODERN)]
MODERN = VERSIONS[-1]
MAX_BODY = 4096
#: Every status docs/protocol.md's table lists for a POST; a 4xx carries a JSON-RPC error.
DOCUMENTED = {200, 202, 400, 403, 404, 406, 413, 415}

# --------------------------------------------------------------------------- what is sent

ids = st.one_of(
    st.integers(-(2**53) + 1, 2**53 - 1),
    st.text(max_size=6),
    st.sampled_from([0, "", "\u00e9\U0001f600", 2**53 - 1]),
)
#: Ids nobody should send: each must be refused on its own, never crash anything.
odd_ids = st.sampled_from([None, 1.5, 2**53, -(2**60), True, [1], {"a": 1}, 1e300])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=5,
)


def meta(version: str) -> dict[str, Any]:
    return {META_PROTOCOL_VERSION: version, META_CLIENT_CAPABILITIES: {}}


#: (method, params) of requests the demo app serves or refuses quickly. `sleep` and
#: `subscriptions/listen` are left out: they hold a request open by design.
CALLS = st.sampled_from(
    [
        ("ping", None),
        ("tools/list", {}),
        ("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}),
        ("tools/call", {"name": "add", "arguments": {"a": "x"}}),
        ("tools/call", {"name": "echo", "arguments": {"text": "hi \u00e9"}}),
        ("tools/call", {"name": "fail", "arguments": {}}),
        ("tools/call", {"name": "nope", "arguments": {}}),
        ("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}, "task": {"ttl": 1000}}),
        ("resources/list", {}),
        ("resources/templates/list", {}),
        ("resources/read", {"uri": "demo://readme"}),
        ("resources/read", {"uri": "demo://items/7"}),
        ("resources/read", {"uri": "nope://x"}),
        ("resources/subscribe", {"uri": "demo://readme"}),
        ("prompts/list", {}),
        ("prompts/get", {"name": "greet", "arguments": {"name": "z"}}),
        ("prompts/get", {"name": "greet"}),
        (
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "greet"},
                "argument": {"name": "name", "value": "a"},
            },
        ),
        ("logging/setLevel", {"level": "debug"}),
        ("tasks/list", {}),
        ("tasks/get", {"taskId": "nope"}),
        ("server/discover", {}),
        ("initialize", None),
        ("no/such/method", {}),
    ]
)
NOTIFICATIONS = st.sampled_from(
    ["notifications/initialized", "notifications/progress", "notifications/roots/list_changed"]
)


@st.composite
def message(draw: st.DrawFn) -> Any:
    """One JSON-RPC message: a request (legacy or 2026-07-28), a notification, a cancel, a
    response to a server request, or a message that is not quite one."""
    kind = draw(st.sampled_from(["request"] * 6 + ["notification", "cancel", "response", "odd"]))
    if kind == "request":
        method, params = draw(CALLS)
        if method == "initialize":
            version = draw(st.sampled_from([*VERSIONS, "1999-01-01"]))
            return initialize_request(version, id=draw(ids))
        if params is not None and draw(st.booleans()):
            version = draw(st.sampled_from([MODERN, MODERN, MODERN, *VERSIONS, "2099-01-01"]))
            params = {**params, "_meta": meta(version)}
        return request(method, params, id=draw(ids))
    if kind == "notification":
        return notification(
            draw(NOTIFICATIONS), draw(st.none() | st.just({"progressToken": 1, "progress": 1}))
        )
    if kind == "cancel":
        return notification(
            "notifications/cancelled",
            {"requestId": draw(ids | odd_ids | json_values), "reason": "fuzz"},
        )
    if kind == "response":
        return {
            "jsonrpc": "2.0",
            "id": draw(ids),
            draw(st.sampled_from(["result", "error"])): draw(json_values),
        }
    msg = draw(
        st.dictionaries(
            st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error"]),
            json_values | odd_ids,
            max_size=5,
        )
    )
    return msg if draw(st.booleans()) else draw(json_values)


bodies_of_json = st.one_of(message(), message(), st.lists(message(), max_size=5))
EDIT_BYTES = st.sampled_from(
    [b"", b",", b"}", b"]", b"{", b"[", b'"', b"\\", b":", b" ", b"\n", b"\x00", b"\xff"]
) | st.binary(max_size=3)
edits = st.lists(st.tuples(st.floats(0, 1), EDIT_BYTES, st.integers(0, 2)), max_size=3)


def edit(body: bytes, changes: list[tuple[float, bytes, int]]) -> bytes:
    out = bytearray(body)
    for where, new, n in changes:
        at = int(where * len(out))
        out[at : at + n] = new
    return bytes(out)


@st.composite
def body(draw: st.DrawFn) -> bytes:
    """A message or a batch, as sent or with bytes edited; or random bytes."""
    if draw(st.integers(0, 9)) == 9:
        return draw(st.binary(max_size=64))
    data = json.dumps(draw(bodies_of_json), separators=(",", ":")).encode()
    return edit(data, draw(edits)) if draw(st.booleans()) else data


# --------------------------------------------------------------------------- what comes back


def request_ids(data: bytes) -> tuple[Counter[Any], set[Any]]:
    """The ids the server owes a reply to, by its own parser: each request's, and each id of
    an entry refused on its own (those echo the id when it can be read); and every id a reply
    may carry (those, and null)."""
    frame = _wire.decode(data)
    owed: Counter[Any] = Counter()
    for entry in frame.entries:
        if entry.raw_id is not None and entry.kind in (_wire.REQUEST, _wire.INVALID):
            owed[json.loads(entry.raw_id)] += 1
    return owed, {None, *owed}


def check_message(msg: Any, echoable: set[Any]) -> Any:
    """A JSON-RPC message of the right shape; a response's id is one of ``echoable``. The
    response's id, or a marker for a message that is not a response."""
    assert isinstance(msg, dict), msg
    assert msg.get("jsonrpc") == "2.0", msg
    if "method" in msg:  # a notification or request from the server (streams only)
        assert isinstance(msg["method"], str), msg
        return NOT_A_RESPONSE
    assert "id" in msg, msg
    assert msg["id"] in echoable, (msg["id"], echoable)
    assert ("result" in msg) != ("error" in msg), msg
    if "error" in msg:
        error = msg["error"]
        assert isinstance(error, dict) and type(error.get("code")) is int, msg
        assert isinstance(error.get("message"), str), msg
    else:
        assert isinstance(msg["result"], dict), msg
    return msg["id"]


NOT_A_RESPONSE = object()


def sse_messages(text: str) -> list[Any]:
    out = []
    for block in text.split("\n\n"):
        data = [line[5:].lstrip(" ") for line in block.split("\n") if line.startswith("data:")]
        if data and "".join(data):
            out.append(json.loads("\n".join(data)))
    return out


def check_reply(data: bytes, status: int, content_type: str, content: bytes) -> None:
    """Hold one HTTP answer to the rules above."""
    assert status < 500, (status, content[:300])
    assert status in DOCUMENTED, (status, content[:300])
    if status == 202:
        assert content == b"", content[:300]
        return
    owed, echoable = request_ids(data)
    if content_type.startswith("text/event-stream"):
        assert status == 200
        messages = sse_messages(content.decode())
    else:
        assert content_type.startswith("application/json"), content_type
        decoded = json.loads(content)
        messages = decoded if isinstance(decoded, list) else [decoded]
        if status >= 400:
            assert isinstance(decoded, dict) and "error" in decoded, decoded
    replied = Counter(check_message(m, echoable) for m in messages)
    replied.pop(NOT_A_RESPONSE, None)
    if status == 200 and not (len(messages) == 1 and messages[0].get("id") is None):
        # The body was served (not refused whole): one reply per request, by id.
        assert replied - Counter({None: replied[None]}) == owed, (replied, owed)


# --------------------------------------------------------------------------- HTTP


class Answer:
    """One HTTP answer, read off the socket."""

    def __init__(self, status: int, headers: dict[str, str], content: bytes) -> None:
        self.status = status
        self.headers = headers
        self.content = content


def _dechunk(data: bytes) -> bytes:
    out = bytearray()
    while True:
        size_line, _, rest = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            return bytes(out)
        out += rest[:size]
        data = rest[size + 2 :]


#: How a body is framed: by its ``Content-Length`` (the usual), in chunks, or cut short
#: (``Content-Length`` ten bytes past what is sent, then our side shut).
FRAMINGS = ["length"] * 18 + ["chunked", "truncated"]


def http_exchange(
    port: int, body: bytes, headers: list[tuple[str, bytes]], framing: str = "length"
) -> Answer:
    """POST ``body`` on a connection of its own, headers byte for byte (httpx refuses odd
    ones), framed as ``framing`` says, and read the whole answer. Fails if no answer comes
    in time."""
    head = [b"POST /mcp HTTP/1.1", b"Host: 127.0.0.1:%d" % port, b"Connection: close"]
    if framing == "chunked":
        head.append(b"Transfer-Encoding: chunked")
        cuts = sorted({0, len(body) // 3, len(body) // 2, len(body)})
        pieces = [body[a:b] for a, b in itertools.pairwise(cuts) if b > a]
        payload = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"
    else:
        extra = 10 if framing == "truncated" else 0
        head.append(b"Content-Length: %d" % (len(body) + extra))
        payload = body
    head += [name.encode() + b": " + value for name, value in headers]
    deadline = time.monotonic() + READ_TIMEOUT
    with socket.create_connection(("127.0.0.1", port), timeout=READ_TIMEOUT) as sock:
        sock.sendall(b"\r\n".join(head) + b"\r\n\r\n" + payload)
        if framing == "truncated":
            sock.shutdown(socket.SHUT_WR)
        received = bytearray()
        while True:
            if time.monotonic() > deadline:
                raise AssertionError(f"no whole answer in {READ_TIMEOUT}s to {body!r}, {headers}")
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                raise AssertionError(
                    f"no answer in {READ_TIMEOUT}s to {body!r}, {headers}"
                ) from None
            if not chunk:
                break
            received += chunk
    assert received, f"connection closed without an answer to {body!r}, {headers}"
    raw_head, _, content = bytes(received).partition(b"\r\n\r\n")
    lines = raw_head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    answer_headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        answer_headers[name.strip().lower()] = value.strip()
    if answer_headers.get("transfer-encoding", "").lower() == "chunked":
        content = _dechunk(content)
    elif "content-length" in answer_headers:
        assert len(content) == int(answer_headers["content-length"]), (answer_headers, content)
    return Answer(status, answer_headers, content)


class Target:
    """The HTTP server under fuzz, and a session of each legacy revision."""

    def __init__(self) -> None:
        self.server = AppServer(
            "jetmcp.demo:app", "--max-body-bytes", str(MAX_BODY), label="fuzzed http server"
        )
        with httpx.Client(timeout=READ_TIMEOUT) as client:
            self.sessions = {v: open_session(client, self.server.url, v) for v in LEGACY}

    def post(
        self, data: bytes, headers: list[tuple[str, bytes]], framing: str = "length"
    ) -> Answer:
        return http_exchange(self.server.port, data, headers, framing)

    def alive(self) -> None:
        assert self.server.proc.poll() is None, self.server.stderr()
        ping = b'{"jsonrpc":"2.0","id":"alive","method":"ping"}'
        reply = self.post(ping, [("Content-Type", b"application/json")])
        assert json.loads(reply.content) == {"jsonrpc": "2.0", "id": "alive", "result": {}}


@pytest.fixture(scope="module")
def target() -> Iterator[Target]:
    t = Target()
    try:
        yield t
        t.alive()
        assert "Traceback" not in t.server.stderr(), t.server.stderr()
    finally:
        t.server.stop()


SESSION = st.sampled_from(["none", "none", "real", "real", "unknown", "junk", "empty"])


#: Bytes a header value may hold (RFC 9110: visible ASCII, and obs-text); a control byte
#: makes the message malformed, which Granian refuses before the app sees it.
FIELD_BYTES = st.lists(st.integers(0x21, 0xFF).filter(lambda b: b != 0x7F), max_size=12).map(bytes)


@st.composite
def header_value(draw: st.DrawFn, usual: str | None, *others: str | None) -> bytes | None:
    """``usual`` three times in four, else one of ``others`` (None: the header is absent);
    now and then padded with spaces or carrying a byte that is not ASCII."""
    value = usual if draw(st.integers(0, 3)) < 3 or not others else draw(st.sampled_from(others))
    if value is None:
        return None
    variant = draw(st.integers(0, 19))
    if variant == 18:
        return b" " + value.encode() + b" "
    if variant == 19:
        return value.encode() + b"\xe9"
    return value.encode()


@st.composite
def headers(draw: st.DrawFn, target: Target, data: bytes) -> list[tuple[str, bytes]]:
    h: list[tuple[str, bytes | None]] = []
    h.append(
        (
            "Content-Type",
            draw(
                header_value(
                    "application/json",
                    "application/json; charset=utf-8",
                    "APPLICATION/JSON",
                    "text/plain",
                    "application/jsonx",
                    "",
                    None,
                )
            ),
        )
    )
    h.append(
        (
            "Accept",
            draw(
                header_value(
                    "application/json, text/event-stream",
                    "application/json",
                    "text/event-stream",
                    "*/*",
                    "application/*;q=0.5",
                    "text/html",
                    "application/json;q=0",
                    "",
                    None,
                )
            ),
        )
    )
    try:
        sent = json.loads(data)
    except ValueError:
        sent = None
    params = sent.get("params") if isinstance(sent, dict) else None
    meta_version = (
        (params.get("_meta") or {}).get(META_PROTOCOL_VERSION) if isinstance(params, dict) else None
    )
    if isinstance(meta_version, str) and draw(st.integers(0, 3)) < 3:
        # As a 2026-07-28 client sends it: the version and routing headers of its body.
        h.append(("MCP-Protocol-Version", meta_version.encode()))
        h += [(k, v.encode()) for k, v in modern_routing(sent).items()]
        return [(k, v) for k, v in h if v is not None]
    version = draw(header_value(None, MODERN, *VERSIONS, "1999-01-01", "2099-12-31", "junk", ""))
    h.append(("MCP-Protocol-Version", version))
    session = draw(st.sampled_from(["none"] * 5 + ["real"] * 3 + ["unknown", "junk", "twice"]))
    real = target.sessions[draw(st.sampled_from(list(target.sessions)))].encode()
    if session == "real":
        h.append(("Mcp-Session-Id", real))
    elif session == "unknown":
        h.append(("Mcp-Session-Id", b"0123456789abcdef0123456789abcdef"))
    elif session == "junk":
        h.append(("Mcp-Session-Id", draw(FIELD_BYTES)))
    elif session == "twice":
        h += [("Mcp-Session-Id", real), ("Mcp-Session-Id", b"other")]
    method = sent.get("method") if isinstance(sent, dict) else None
    h.append(
        (
            "Mcp-Method",
            draw(
                header_value(
                    None,
                    method if isinstance(method, str) else "ping",
                    "tools/call",
                    "x",
                    "=?base64?dG9vbHMvY2FsbA==?=",
                )
            ),
        )
    )
    h.append(
        (
            "Mcp-Name",
            draw(
                header_value(
                    None, "add", "greet", "demo://readme", "=?base64?YWRk?=", "=?base64?!!?="
                )
            ),
        )
    )
    if draw(st.integers(0, 9)) == 9:
        origin = draw(header_value("http://localhost:1", "https://evil.example", "null"))
        h.append(("Origin", origin))
    return [(k, v) for k, v in h if v is not None]


# Defects these fuzzers found, each kept as an explicit example so every run meets it again.
#: A non-hashable ``requestId`` in ``notifications/cancelled`` (it was a 500 with a session).
CANCEL_LIST_ID = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":[1]}}'
PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'


@FUZZ
@given(data=st.data(), sent=body(), framing=st.sampled_from(FRAMINGS))
@example(data=None, sent=CANCEL_LIST_ID, framing="length").via(
    "a cancel naming a list as its requestId"
)
@example(data=None, sent=PING, framing="truncated").via("a truncated body (it was a 500)")
def test_http_answers_every_body(
    target: Target, data: st.DataObject | None, sent: bytes, framing: str
) -> None:
    if data is None:  # an explicit example: JSON, with a session of a batching revision
        h = [
            ("Content-Type", b"application/json"),
            ("Mcp-Session-Id", target.sessions["2025-03-26"].encode()),
        ]
    else:
        h = data.draw(headers(target, sent))
    reply = target.post(sent, h, framing)
    version = dict(h).get("MCP-Protocol-Version", b"")
    event(f"HTTP {reply.status}" + (f" at {MODERN}" if version == MODERN.encode() else ""))
    if framing == "truncated":
        # The body never came whole: refused (400 unless the headers were refused first).
        assert 400 <= reply.status < 500, (reply.status, reply.content)
    check_reply(sent, reply.status, reply.headers.get("content-type", ""), reply.content)


def test_http_server_lives_on(target: Target) -> None:
    target.alive()


# --------------------------------------------------------------------------- stdio


class StdioTarget:
    """The stdio server under fuzz: one process for the run, replaced only after an example
    killed it (that example has failed)."""

    def __init__(self) -> None:
        self.server = StdioServer("--max-body-bytes", str(MAX_BODY))
        self.broken = False
        self.syncs = 0
        #: Every id a reply may carry: those of every line sent so far, and null.
        self.echoable: set[Any] = {None}

    def ready(self) -> StdioServer:
        if self.broken or self.server.proc.poll() is not None:
            self.server.stop()
            self.server = StdioServer("--max-body-bytes", str(MAX_BODY))
            self.broken = False
        return self.server

    def sync(self) -> list[bytes]:
        """Every line written before the answer to a ping sent now (that answer excluded)."""
        self.syncs += 1
        ping_id = f"sync-{self.syncs}"
        lines = []
        self.broken = True  # until the ping is answered
        self.server.send(request("ping", id=ping_id))
        while True:
            line = self.server.read_line()
            try:
                if json.loads(line) == {"jsonrpc": "2.0", "id": ping_id, "result": {}}:
                    self.broken = False
                    return lines
            except ValueError:
                pass
            lines.append(line)


@pytest.fixture(scope="module")
def stdio_target() -> Iterator[StdioTarget]:
    t = StdioTarget()
    try:
        yield t
        t.ready()
        t.sync()
        assert "Traceback" not in t.server.stderr(), t.server.stderr()
    finally:
        t.server.stop()


@st.composite
def line(draw: st.DrawFn) -> bytes:
    """One stdin line (without its end): a body as for HTTP (one with a newline inside is
    two lines), a ping padded to about the line limit, or blank."""
    kind = draw(st.integers(0, 19))
    if kind == 19:
        return draw(st.sampled_from([b"", b"   ", b"\t", b"\r"]))
    if kind == 18:
        # Exactly MAX_BODY is left out: whether a "\r" before the "\n" counts is not said.
        over = draw(st.sampled_from([-2, -1, 1, 2]))
        ping = b'{"jsonrpc":"2.0","id":"%s","method":"ping"}' % (b"over" if over > 0 else b"under")
        return ping.ljust(MAX_BODY + over)
    return draw(body())


def owed_on_stdio(data: bytes) -> Counter[Any]:
    """The replies a line is owed for sure: one per request of a single message (a batch
    may be refused whole, and a cancelled request is owed nothing on stdio)."""
    frame = _wire.decode(data)
    if frame.kind != _wire.FRAME_SINGLE or frame.entries[0].kind != _wire.REQUEST:
        return Counter()
    raw = frame.entries[0].raw_id
    return Counter() if raw is None else Counter([json.loads(raw)])


#: Item 4 again, on stdio: the process must survive the line.
#: Item 15: a line one byte over the limit is refused, as HTTP refuses such a body.
OVER_LIMIT = b'{"jsonrpc":"2.0","id":"over","method":"ping"}'.ljust(MAX_BODY + 1)


@FUZZ
@given(lines=st.lists(line(), min_size=1, max_size=4), ending=st.sampled_from([b"\n", b"\r\n"]))
@example(lines=[CANCEL_LIST_ID], ending=b"\n").via(
    "a cancel naming a list as its requestId, on stdio"
)
@example(lines=[OVER_LIMIT], ending=b"\n").via(
    "a line one byte over the limit (it was let through)"
)
def test_stdio_survives_every_line(
    stdio_target: StdioTarget, lines: list[bytes], ending: bytes
) -> None:
    server = stdio_target.ready()
    try:
        server.send_raw(b"".join(line + ending for line in lines))
    except BrokenPipeError:
        raise AssertionError(f"the stdio server died: {server.stderr()}") from None
    # A line longer than the limit is refused whole (-32600, id null), whatever it holds.
    pieces = [p.rstrip(b"\r") for line in lines for p in line.split(b"\n")]
    long = [p for p in pieces if len(p) > MAX_BODY]
    served = [p for p in pieces if len(p) <= MAX_BODY and p.strip()]
    owed: Counter[Any] = sum((owed_on_stdio(p) for p in served), Counter())
    echoable: set[Any] = {None}
    for p in served:
        echoable |= request_ids(p)[1]
    for p in served:  # a cancel may stop a request of the same write, which is then owed nothing
        frame = _wire.decode(p)
        for entry in frame.entries:
            if entry.method == "notifications/cancelled":
                params = entry.params()
                if isinstance(params, dict):
                    owed.pop(_hashable(params.get("requestId")), None)
    # Replies of requests that wait (a task each) may come after the ping that ends the
    # write, or in a later example: any id sent so far may come back.
    stdio_target.echoable |= echoable
    replied: Counter[Any] = Counter()
    refusals = 0

    def take(out: bytes) -> None:
        nonlocal refusals
        decoded = json.loads(out)
        for msg in decoded if isinstance(decoded, list) else [decoded]:
            assert msg.get("id") != "over", f"a line over {MAX_BODY} bytes was served: {msg}"
            replied[check_message(msg, stdio_target.echoable)] += 1
            if msg.get("id") is None and "exceeds" in msg.get("error", {}).get("message", ""):
                refusals += 1

    for out in stdio_target.sync():
        take(out)
    assert server.proc.poll() is None, server.stderr()
    assert refusals == len(long), (refusals, [len(p) for p in long])
    while owed - replied:  # every request line is answered, in time (read_line's timeout)
        take(server.read_line())


def _hashable(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        return None
    return value


#: Enough pings that the replies outrun the pipe when stdin closes behind them.
EOF_PINGS = 20_000


def test_stdio_answers_every_line_before_eof() -> None:
    """Lines written in one go, then stdin closed: every request is answered, each reply
    whole, before the process exits 0 (replies were once lost or cut at EOF)."""
    server = StdioServer("--max-body-bytes", str(MAX_BODY))
    try:
        junk = [b"{", b"[]", b"x", b"[1]", b'{"jsonrpc":"2.0","method":"notifications/x"}']
        pings = [f"eof-{i}" for i in range(EOF_PINGS)]
        lines = []
        for i, ping_id in enumerate(pings):
            lines += [json.dumps(request("ping", id=ping_id)).encode(), junk[i % len(junk)]]
        server.send_raw(b"\n".join(lines) + b"\n")
        server.close_stdin()
        out: list[bytes] = []
        while (item := server.lines.get(timeout=READ_TIMEOUT)) is not None:
            out.append(item)
        cut = [line for line in out if not line.endswith(b"\n")]
        replies = [json.loads(line) for line in out if line.endswith(b"\n")]
        answered = {r.get("id") for r in replies if isinstance(r, dict)}
        lost = set(pings) - answered
        assert (len(lost), cut) == (0, []), f"{len(lost)} of {len(pings)} pings lost; cut: {cut}"
        assert server.wait() == 0
    finally:
        server.stop()
