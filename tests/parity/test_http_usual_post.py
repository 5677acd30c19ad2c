"""The usual POST's short way (``McpHttpApp._usual``, ``jetmcp._wire.Gate`` and the lane in
``__rsgi__``) against the general path (``lane`` off), byte for byte and side effect for
side effect: status, headers and body of every reply, and the session store after it.

Requests are driven through the RSGI callable in this process with a header map that
behaves as Granian 2.8.9's (probed live: ``get`` gives a name's first value, None when
Granian cannot read that value even if a later one is readable; ``get_all`` and ``items``
give the readable values only; ``in`` sees every name). Both paths take a header's first
readable value (``jetmcp.transports._http.first``; the gate reads them from ``items``).
The lane's app serves each request twice: first judged in Python (which teaches the
gate), then admitted by the gate.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import socket
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from harness.messages import initialize_request, modern_meta, tool_call
from harness.rsgi import UNREADABLE, Proto, Scope
from jetmcp.server import Context, Server
from jetmcp.settings import Settings
from jetmcp.state import MemorySessionStore
from jetmcp.transports.http import McpHttpApp

server = Server("lane-tests", version="1.0.0")


class Point(BaseModel):
    x: float
    y: float


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def scale(point: Point, factor: float) -> Point:
    """Scale a point."""
    return Point(x=point.x * factor, y=point.y * factor)


@server.tool()
async def add_log(a: int, b: int, ctx: Context) -> int:
    """Add, logging through the Context."""
    await ctx.info("adding")
    return a + b


@server.tool()
async def add_later(a: int, b: int, ctx: Context) -> int:
    """Add after a turn of the loop, then log (the reply waits; its exchange is made)."""
    await asyncio.sleep(0)
    await ctx.info("added later")
    return a + b


@server.tool()
def add_named(a: int, b: int, ctx: Context) -> str:
    """Add, naming the request (the Context's call is made at once)."""
    return f"{ctx.request_id}: {a + b}"


@server.tool()
async def add_asks(a: int, b: int, ctx: Context) -> int:
    """Add once the user says so: an input round at 2026-07-28 (a -32021 error without the
    client's elicitation capability)."""
    answer = await ctx.elicit("Add them?", bool)
    return a + b if answer.action == "accept" else 0


@server.tool()
def add_fails(a: int, b: int, ctx: Context) -> int:
    """Refuse to add (an error result)."""
    raise ValueError(f"will not add {a} and {b}")


@server.tool()
async def scale_log(point: Point, factor: float, ctx: Context) -> Point:
    """A pydantic tool that logs through its Context (validated and called by the
    extension, with the Context the dispatcher makes)."""
    await ctx.info(f"scaling by {factor}")
    return Point(x=point.x * factor, y=point.y * factor)


#: The tasks add_then_log leaves behind.
LATE: list[asyncio.Task[None]] = []


@server.tool()
def add_then_log(a: int, b: int, ctx: Context) -> int:
    """Add, and leave behind a task that logs through the Context after the reply."""

    async def later() -> None:
        await asyncio.sleep(0)
        await ctx.info("after the reply")

    LATE.append(asyncio.get_running_loop().create_task(later()))
    return a + b


def _call(
    name: str,
    arguments: Any,
    meta: str | None = None,
    id: Any = 7,
    level: str | None = None,
    caps: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``tools/call``; at a 2026-07-28 ``meta`` revision with its ``_meta`` (``level`` sets
    the request's log level)."""
    extra = None
    if meta is not None:
        extra = modern_meta(meta, caps)
        if level is not None:
            extra["io.modelcontextprotocol/logLevel"] = level
    return tool_call(name, arguments, id, meta=extra)


INITIALIZE = orjson.dumps(initialize_request("2025-06-18", id=0))
BODIES: list[bytes] = [
    orjson.dumps(b)
    for b in [
        _call("add", {"a": 1, "b": 2}),
        _call("add", {"a": "x", "b": 2}),
        _call("scale", {"point": {"x": 1, "y": 2}, "factor": 3}),
        _call("add_log", {"a": 4, "b": 5}),
        _call("nope", {}),
        _call("add", {"a": 1, "b": 2}, "2026-07-28"),
        _call("scale", {"point": {"x": 1, "y": 2}, "factor": 2}, "2026-07-28"),
        _call("add_log", {"a": 1, "b": 1}, "2026-07-28", id="s"),
        _call("add_log", {"a": 1, "b": 1}, "2026-07-28", id="d", level="debug"),
        _call("add_log", {"a": 1, "b": 1}, "2026-07-28", level="error"),
        _call("add_later", {"a": 2, "b": 3}, "2026-07-28"),
        _call("add_later", {"a": 2, "b": 3}, "2026-07-28", level="info"),
        _call("add_named", {"a": 2, "b": 3}, "2026-07-28", id="n"),
        _call("add_later", {"a": 2, "b": 3}),
        _call("add_asks", {"a": 2, "b": 3}, "2026-07-28", caps={"elicitation": {}}),
        _call("add_asks", {"a": 2, "b": 3}, "2026-07-28"),
        _call("add_fails", {"a": 2, "b": 3}, "2026-07-28"),
        _call("add_fails", {"a": 2, "b": 3}),
        _call("add", {"a": 1, "b": 2}, "2025-06-18"),
        _call("scale_log", {"point": {"x": 1, "y": 2}, "factor": 3}),
        _call("scale_log", {"point": {"x": 1}, "factor": 3}),
        _call("scale_log", {"point": {"x": 1, "y": 2}, "factor": 2}, "2026-07-28"),
        _call("scale_log", {"point": {"x": 1, "y": 2}, "factor": 2}, "2026-07-28", level="info"),
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        [_call("add", {"a": 1, "b": 2}, id=1), _call("add", {"a": 2, "b": 2}, id=2)],
    ]
] + [INITIALIZE, b"{not json", b"[]", b'{"jsonrpc":"2.0","id":1}']

HOSTS = [[], ["127.0.0.1:8000"], ["localhost"], ["evil.example"], [UNREADABLE], ["a", "a"]]
AUTHORITIES = [None, "same", "other.example"]
ORIGINS = [[], ["http://localhost"], [UNREADABLE]]
CONTENT_TYPES = [
    [],
    ["application/json"],
    ["application/json; charset=utf-8"],
    ["text/plain"],
    [UNREADABLE],
    [UNREADABLE, "application/json"],
]
ACCEPTS = [
    [],
    ["application/json, text/event-stream"],
    ["application/json"],
    ["text/event-stream"],
    ["*/*"],
    ["text/html"],
    [UNREADABLE, "application/json"],
]
LENGTHS = ["exact", None, "+exact", " exact", "huge", "abc", "unreadable-first"]
VERSIONS = [
    [],
    ["2025-06-18"],
    ["2025-03-26"],
    ["2026-07-28"],
    [" 2025-06-18"],
    ["1999-01-01"],
    [UNREADABLE, "2025-06-18"],
]
SESSIONS = ["none", "known", "unknown", "unreadable"]
ROUTING = [False, True]


def _headers(choice: dict[str, Any], body: bytes, session_id: str) -> list[tuple[str, Any]]:
    pairs: list[tuple[str, Any]] = [("host", h) for h in choice["host"]]
    pairs += [("origin", o) for o in choice["origin"]]
    pairs += [("content-type", c) for c in choice["content_type"]]
    pairs += [("accept", a) for a in choice["accept"]]
    length = choice["length"]
    exact = str(len(body))
    if length == "exact":
        pairs.append(("content-length", exact))
    elif length in ("+exact", " exact"):
        pairs.append(("content-length", length.replace("exact", exact)))
    elif length == "huge":
        pairs.append(("content-length", str(10**12)))
    elif length == "abc":
        pairs.append(("content-length", "abc"))
    elif length == "unreadable-first":
        pairs += [("content-length", UNREADABLE), ("content-length", exact)]
    pairs += [("mcp-protocol-version", v) for v in choice["version"]]
    session = choice["session"]
    if session == "known":
        pairs.append(("mcp-session-id", session_id))
    elif session == "unknown":
        pairs.append(("mcp-session-id", "0" * 32))
    elif session == "unreadable":
        pairs.append(("mcp-session-id", UNREADABLE))
    if choice["routing"]:
        pairs += [("mcp-method", "tools/call"), ("mcp-name", _tool_named(body) or "add")]
    return pairs


def _tool_named(body: bytes) -> str | None:
    """The tool a single ``tools/call`` body names (what its Mcp-Name header says)."""
    try:
        message = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return None
    name = message["params"]["name"]
    return name if isinstance(name, str) else None


def _usual_pairs(body: bytes, version: str) -> list[tuple[str, Any]]:
    """The headers of a usual POST of ``body`` at ``version`` (the lane's own path)."""
    return [
        ("host", "localhost"),
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("content-length", str(len(body))),
        ("mcp-protocol-version", version),
    ]


def _serve(app: McpHttpApp, scope: Scope, body: bytes) -> tuple[Any, ...]:
    proto = Proto(body)
    asyncio.run(app.__rsgi__(scope, proto))
    assert proto.reply is not None
    status, headers, out = proto.reply
    # A new session's id is random: only whether one was named is compared.
    headers = [(k, "<id>" if k == "mcp-session-id" else v) for k, v in headers]
    # An input round's sealed state carries its expiry to the millisecond: only whether a
    # reply carries one is compared.
    if isinstance(out, bytes):
        out = SEALED.sub(b'"requestState":"<sealed>"', out)
    return status, headers, out


SEALED = re.compile(rb'"requestState":"v1\.[A-Za-z0-9_.-]+"')


def _apps(**options: Any) -> tuple[McpHttpApp, McpHttpApp, str]:
    """The general path's app and the lane's, sharing one session store that holds one
    established session (its id returned)."""
    base = Settings(host="127.0.0.1", **options)
    store = MemorySessionStore(
        base.max_sessions, base.session_idle_seconds, base.max_new_sessions, 0
    )
    general = McpHttpApp(server, base, store)
    general.lane = False
    lane = McpHttpApp(server, base, store)
    assert lane.lane
    init = INITIALIZE
    proto = Proto(init)
    usual = [
        ("host", "localhost"),
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("content-length", str(len(init))),
    ]
    asyncio.run(general.__rsgi__(Scope(usual), proto))
    assert proto.reply is not None and proto.reply[0] == 200, proto.reply
    session_id = dict(proto.reply[1]).get("mcp-session-id", "none")  # none when stateless
    # Promote it to an established session (its second request), as a client would.
    note = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
    pairs = [
        *usual[:3],
        ("content-length", str(len(note))),
        ("mcp-session-id", session_id),
        ("mcp-protocol-version", "2025-06-18"),
    ]
    asyncio.run(general.__rsgi__(Scope(pairs), Proto(note)))
    return general, lane, session_id


STATEFUL = _apps()
STATELESS = _apps(stateless=True)
REQUIRED = _apps(require_session=True)


def mostly(usual: list[Any], others: list[Any]) -> st.SearchStrategy[Any]:
    """Each usual value three times as likely as each other one: about one example in ten
    is usual throughout (the lane's own path), the rest differ in a header or two."""
    return st.sampled_from(usual * 3 + others)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    which=st.sampled_from([STATEFUL, STATELESS, REQUIRED]),
    body=st.sampled_from(BODIES),
    host=mostly(HOSTS[1:3], HOSTS[:1] + HOSTS[3:]),
    authority=mostly(AUTHORITIES[:2], AUTHORITIES[2:]),
    origin=mostly(ORIGINS[:1], ORIGINS[1:]),
    content_type=mostly(CONTENT_TYPES[1:3], CONTENT_TYPES[:1] + CONTENT_TYPES[3:]),
    accept=mostly(ACCEPTS[:5], ACCEPTS[5:]),
    length=mostly(LENGTHS[:1], LENGTHS[1:]),
    version=mostly(VERSIONS[1:4], VERSIONS[:1] + VERSIONS[4:]),
    session=mostly(SESSIONS[:2], SESSIONS[2:]),
    routing=st.sampled_from(ROUTING),
)
def test_the_lane_answers_as_the_general_path(
    which: tuple[McpHttpApp, McpHttpApp, str], body: bytes, **choice: Any
) -> None:
    general, lane, session_id = which
    pairs = _headers(choice, body, session_id)
    readable_host = [h for h in choice["host"] if h is not UNREADABLE]
    authority = choice["authority"]
    if authority == "same":
        authority = readable_host[0] if readable_host else "localhost"
    expected = _serve(general, Scope(pairs, authority=authority), body)
    first = _serve(lane, Scope(pairs, authority=authority), body)
    second = _serve(lane, Scope(pairs, authority=authority), body)
    assert first == expected
    assert second == expected
    # Whatever the gate admits, Python finds usual with the same verdict (it may leave to
    # Python what Python admits: a Content-Length spelled "+5", say).
    scope = Scope(pairs, authority=authority)
    admitted = lane._gate.admit(scope)
    if admitted is not None:
        verdict = lane._usual(scope)
        assert verdict is not None
        assert verdict[:2] == admitted[:2]
        assert _routing(verdict[2]) == _routing(admitted[2])


def _routing(headers: Any) -> Any:
    if headers is None:
        return None
    names = ("protocol_version", "method", "name", "params", "repeated")
    return tuple(getattr(headers, n) for n in names)


def test_a_usual_call_never_reaches_start() -> None:
    """The lane is taken: a usual call is answered with Dispatcher.start out of the way
    (made to fail), both when Python judges it and when the gate admits it."""
    _, lane, _ = _apps(stateless=True)
    body = BODIES[0]
    pairs = _usual_pairs(body, "2025-06-18")

    def fail(*args: Any) -> Any:
        raise AssertionError("the general path was taken")

    lane.dispatcher.start = fail  # type: ignore[method-assign]
    for _ in range(2):
        status, _, out = _serve(lane, Scope(pairs), body)
        assert status == 200
        assert orjson.loads(out)["result"]["content"][0]["text"] == "3"
    assert len(lane._gate) == 1


def test_the_gate_admits_only_what_python_taught_it() -> None:
    _, lane, _ = _apps()
    body = BODIES[0]
    pairs = [
        ("host", "localhost:9"),
        ("content-type", "application/json"),
        ("accept", "application/json"),
        ("content-length", str(len(body))),
        ("mcp-protocol-version", "2025-06-18"),
    ]
    scope = Scope(pairs)
    assert lane._gate.admit(scope) is None  # nothing learned yet
    assert lane._usual(scope) is not None
    admitted = lane._gate.admit(scope)
    assert admitted is not None and admitted[0] == 1  # JSON only: no SSE
    # What varies per request is checked on every call, not learned.
    for changed in (
        [*pairs, ("origin", "http://localhost")],
        [*pairs, ("origin", UNREADABLE)],
        [*pairs, ("host", "localhost:9")],
        [p for p in pairs if p[0] != "content-length"] + [("content-length", "+5")],
        [p for p in pairs if p[0] != "content-length"] + [("content-length", str(2**40))],
        [p if p[0] != "accept" else ("accept", "*/*") for p in pairs],
        [(k, v) if k != "content-type" else (k, UNREADABLE) for k, v in pairs],
    ):
        assert lane._gate.admit(Scope(changed)) is None, changed
    assert lane._gate.admit(Scope(pairs, authority="elsewhere:1")) is None
    # A header's value is its first readable one, for Python as for the gate. A legacy
    # request's headers are read by name, and Granian's get gives None when a header's first
    # value is unreadable even if a later one is readable: the gate leaves such a request to
    # Python, which finds it usual (JSON).
    shadowed = Scope(
        [(k, v) if k != "content-type" else (k, UNREADABLE) for k, v in pairs]
        + [("content-type", "application/json")]
    )
    assert lane._gate.admit(shadowed) is None
    assert lane._usual(shadowed) is not None
    # The scope's header map is handed back: the lane reads no more of the scope.
    admitted = lane._gate.admit(scope)
    assert admitted is not None and admitted[3] is scope.headers


def test_the_gate_reads_a_2026_request_whole() -> None:
    """At 2026-07-28 every pair is read (every Mcp-* name counts): a header whose first value
    is unreadable and a later one readable is read as Python reads it."""
    _, lane, _ = _apps(stateless=True)
    body = BODIES[0]
    pairs = _usual_pairs(body, "2026-07-28")
    scope = Scope(pairs)
    assert lane._usual(scope) is not None
    assert lane._gate.admit(scope) is not None
    shadowed = Scope(
        [(k, v) if k != "content-type" else (k, UNREADABLE) for k, v in pairs]
        + [("content-type", "application/json")]
    )
    admitted = lane._gate.admit(shadowed)
    verdict = lane._usual(shadowed)
    assert admitted is not None and verdict is not None
    assert admitted[:2] == verdict[:2]
    assert _routing(admitted[2]) == _routing(verdict[2])


def test_the_gate_is_bounded() -> None:
    lane = McpHttpApp(server, Settings(allowed_hosts=["*"]))
    for i in itertools.count():
        pairs = [
            ("host", f"h{i}.example"),
            ("content-type", "application/json"),
            ("content-length", "2"),
            ("mcp-protocol-version", "2025-06-18"),
        ]
        assert lane._usual(Scope(pairs)) is not None
        assert len(lane._gate) <= 256
        if i == 600:
            break
    # Full, it forgot what it knew and learned again: the latest is known.
    assert lane._gate.admit(Scope(pairs)) is not None


def test_metrics_keep_the_general_path() -> None:
    """Metrics count what passes Dispatcher.start: with them on, every POST goes there."""
    from jetmcp.run.serving import make_app

    assert make_app(server, Settings()).lane

    observed = make_app(server, Settings(metrics_path="/metrics"))
    assert not observed.lane


#: Header lines (bytes, as sent) of POSTs whose values Granian cannot all read, for the live
#: check below: an unreadable value before a readable one, and unreadable values alone (a
#: JSON Content-Type and a 2025-06-18 version header are added where a case has none).
_LIVE_CASES: list[list[bytes]] = [
    [],
    [b"Content-Type: \xff\xfe", b"Content-Type: application/json"],
    [b"Content-Type: \xff"],
    [b"Accept: \xff", b"Accept: application/json"],
    [b"MCP-Protocol-Version: \xff", b"MCP-Protocol-Version: 2025-06-18"],
    [b"MCP-Protocol-Version: \xff"],
    [b"Origin: \xff"],
    [b"Host: \xff"],
    [
        b"MCP-Protocol-Version: 2026-07-28",
        b"Mcp-Method: tools/call",
        b"Mcp-Name: \xff",
        b"Mcp-Name: add",
    ],
]


def _raw_post(port: int, lines: list[bytes], body: bytes) -> tuple[bytes, bytes]:
    """One POST with ``lines`` as sent (Host and Content-Length added unless given): the
    status line and the body of the reply."""
    head = [b"POST /mcp HTTP/1.1"]
    if not any(line.lower().startswith(b"host:") for line in lines):
        head.append(b"Host: 127.0.0.1:%d" % port)
    if not any(line.lower().startswith(b"accept:") for line in lines):
        head.append(b"Accept: application/json, text/event-stream")
    head += [*lines, b"Content-Length: %d" % len(body), b"Connection: close"]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"\r\n".join(head) + b"\r\n\r\n" + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    reply_head, _, reply_body = data.partition(b"\r\n\r\n")
    return reply_head.split(b"\r\n", 1)[0], reply_body


def test_live_granian_reads_headers_alike_on_both_paths() -> None:
    """On a real Granian, values it cannot read are treated alike by the lane (judged in
    Python, then admitted by the gate) and by the general path (the lane off: metrics on),
    status and body."""
    from harness.servers import AppServer

    app = "bench/load/jetmcp_server.py:app"
    lane = AppServer(app, "--stateless", label="lane server")
    general = AppServer(app, "--stateless", "--metrics-path", "/metrics", label="general server")
    body = BODIES[0]
    modern_body = orjson.dumps(_call("add", {"a": 1, "b": 2}, "2026-07-28"))
    try:
        for lines in _LIVE_CASES:
            sent = modern_body if b"Mcp-Method: tools/call" in lines else body
            for name, usual in (
                (b"content-type:", b"Content-Type: application/json"),
                (b"mcp-protocol-version:", b"MCP-Protocol-Version: 2025-06-18"),
            ):
                if not any(line.lower().startswith(name) for line in lines):
                    lines = [usual, *lines]
            expected = _raw_post(general.port, lines, sent)
            for _ in range(2):
                assert _raw_post(lane.port, lines, sent) == expected, lines
    finally:
        lane.stop()
        general.stop()


def test_a_context_used_after_the_reply_sends_nothing() -> None:
    """A task a Context tool left behind logs once the reply went out (at a level the
    request asked for): nothing is sent, on the lane (whose exchange was never made while
    the tool ran) as on the general path, and nothing fails."""
    body = orjson.dumps(_call("add_then_log", {"a": 1, "b": 2}, "2026-07-28", level="debug"))
    pairs = [
        *_usual_pairs(body, "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "add_then_log"),
    ]
    general, lane, _ = _apps(stateless=True)
    for app in (general, lane):
        proto = Proto(body)

        async def serve(app: McpHttpApp = app, proto: Proto = proto) -> None:
            await app.__rsgi__(Scope(pairs), proto)
            assert proto.reply is not None
            await asyncio.gather(*LATE)  # raises what the late log raised
            LATE.clear()
            assert len(proto.replies) == 1

        asyncio.run(serve())
        assert proto.reply is not None
        status, headers, out = proto.reply
        assert status == 200
        assert ("content-type", "application/json") in headers
        assert orjson.loads(out)["result"]["content"][0]["text"] == "3"


def test_the_gate_never_reads_an_unreadable_first_value_as_absent() -> None:
    """Granian's get gives None for a header whose first value it cannot read: the gate
    must not take that for an absent header (a verdict learned without one must not admit
    it), whatever verdicts Python may teach."""
    gate = McpHttpApp(server, Settings(host="127.0.0.1"))._gate
    revision = object()
    for absent in ("content-type", "accept"):
        values = {"content-type": "application/json", "accept": "application/json"}
        values.pop(absent)
        gate.learn(
            "localhost",
            values.get("content-type"),
            values.get("accept"),
            "2025-06-18",
            1,
            revision,
        )
        usual = [
            ("host", "localhost"),
            *values.items(),
            ("content-length", "10"),
            ("mcp-protocol-version", "2025-06-18"),
        ]
        assert gate.admit(Scope(usual)) is not None
        shadowed = [*usual, (absent, UNREADABLE), (absent, "application/json")]
        assert gate.admit(Scope(shadowed)) is None, absent
