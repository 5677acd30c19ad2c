"""The eager first step of a single request's coroutine handler (``Exchange.eager``, what the
HTTP transports set): the same reply bytes and side effects as the general path (the
coroutine awaited by ``Dispatcher._finish``) for handlers that finish at once, that suspend,
that fail and that send notifications first; declared pydantic models returned by tools
written directly, byte for byte as the general path (``fast_paths=False``) writes them;
nothing runs past a cap on waiting requests; and over real HTTP a notification sent in the
first step still turns the reply into a stream.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from harness.inprocess import ListSink, async_test
from harness.messages import json_headers, request
from harness.rsgi import POST_HEADERS, Proto, Scope
from harness.servers import AppServer
from jetmcp import _wire
from jetmcp.core.call import NULL_SINK
from jetmcp.core.dispatch import Dispatcher, InFlight
from jetmcp.core.exchange import Exchange
from jetmcp.core.mrtr import RoundCall
from jetmcp.errors import McpError
from jetmcp.protocol import revisions
from jetmcp.protocol.meta import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
)
from jetmcp.protocol.modern import RoutingHeaders
from jetmcp.protocol.revisions import R2026_07_28
from jetmcp.server import Context, Server

LEGACY = revisions.BY_VERSION["2025-06-18"]


class Point(BaseModel):
    x: float
    y: float


def app(runs: list[str]) -> Server:
    server = Server("eager")

    @server.tool()
    async def at_once(a: int, b: int) -> int:
        runs.append("at_once")
        return a + b

    @server.tool()
    async def suspends(a: int) -> int:
        runs.append("suspends:start")
        await asyncio.sleep(0)
        await asyncio.sleep(0.001)
        runs.append("suspends:end")
        return a * 2

    @server.tool()
    async def model(point: Point, factor: float) -> Point:
        runs.append("model")
        return Point(x=point.x * factor, y=point.y * factor)

    @server.tool()
    async def refuses() -> int:
        runs.append("refuses")
        raise McpError(-32042, "no")

    @server.tool()
    async def breaks() -> int:
        runs.append("breaks")
        raise RuntimeError("boom")

    @server.tool()
    async def logs(ctx: Context) -> str:
        runs.append("logs")
        await ctx.info("first")
        await ctx.report_progress(1, 2)
        return "done"

    @server.tool()
    async def quiet(ctx: Context) -> str:
        runs.append("quiet")
        await ctx.debug("below the level asked for")
        return "done"

    return server


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("at_once", {"a": 1, "b": 2}),
    ("suspends", {"a": 21}),
    ("model", {"point": {"x": 1.5, "y": 2}, "factor": 2}),
    ("model", {"point": {"x": "bad"}, "factor": 2}),
    ("refuses", {}),
    ("breaks", {}),
    ("logs", {}),
    ("no_such_tool", {}),
]


async def serve(body: bytes, eager: bool, revision: Any = LEGACY) -> tuple[bytes, list[str], Any]:
    runs: list[str] = []
    sink = ListSink()
    dispatcher = Dispatcher(app(runs))
    ex = Exchange(revision, None, sink, InFlight(), True, eager=eager)
    out = dispatcher.start(_wire.decode(body), ex)
    if out is not None and not isinstance(out, bytes):
        out = await out
    assert out is not None
    return bytes(out), runs, [m for m in sink.messages]


@pytest.mark.parametrize(("name", "arguments"), CALLS)
@async_test
async def test_eager_and_general_paths_agree(name: str, arguments: dict[str, Any]) -> None:
    meta = {"progressToken": "p1"}
    body = orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": meta},
        }
    )
    eager = await serve(body, True)
    general = await serve(body, False)
    assert eager == general
    assert orjson.loads(eager[0])["id"] == 7


@async_test
async def test_a_handler_that_finishes_at_once_is_answered_by_start_itself() -> None:
    runs: list[str] = []
    dispatcher = Dispatcher(app(runs))
    body = orjson.dumps(request("tools/call", {"name": "at_once", "arguments": {"a": 2, "b": 3}}))
    out = dispatcher.start(_wire.decode(body), Exchange(LEGACY, None, eager=True))
    assert isinstance(out, bytes)
    assert orjson.loads(out)["result"]["structuredContent"] == {"result": 5}
    assert dispatcher.deadlines.count == 0
    # Without the flag the same call is a coroutine for the caller to await.
    later = dispatcher.start(_wire.decode(body), Exchange(LEGACY, None))
    assert not isinstance(later, bytes | None)
    assert orjson.loads(await later)["result"]["structuredContent"] == {"result": 5}  # type: ignore[arg-type]


@async_test
async def test_a_suspended_handler_is_bounded_and_cancellable_as_before() -> None:
    runs: list[str] = []
    dispatcher = Dispatcher(app(runs), request_timeout=0.05)
    server = dispatcher.server

    @server.tool()
    async def hangs() -> int:
        runs.append("hangs")
        await asyncio.sleep(0)
        await asyncio.Event().wait()
        return 0

    body = orjson.dumps(request("tools/call", {"name": "hangs", "arguments": {}}))
    out = dispatcher.start(_wire.decode(body), Exchange(LEGACY, None, eager=True))
    assert runs == ["hangs"]  # the first step ran inside start
    assert not isinstance(out, bytes | None)
    reply = orjson.loads(await out)
    assert reply["error"]["code"] == -32001  # the server's request timeout, as on the general path
    assert dispatcher.deadlines.count == 0


@async_test
async def test_nothing_runs_past_the_cap_on_waiting_requests() -> None:
    runs: list[str] = []
    dispatcher = Dispatcher(app(runs), max_inflight=1)
    gate = asyncio.Event()
    server = dispatcher.server

    @server.tool()
    async def holds() -> int:
        await gate.wait()
        return 1

    hold = orjson.dumps(request("tools/call", {"name": "holds", "arguments": {}}))
    first = dispatcher.start(_wire.decode(hold), Exchange(LEGACY, None, eager=True))
    assert not isinstance(first, bytes | None)
    waiting = asyncio.ensure_future(first)
    await asyncio.sleep(0.01)
    assert dispatcher.deadlines.count == 1
    body = orjson.dumps(request("tools/call", {"name": "at_once", "arguments": {"a": 1, "b": 1}}))
    out = dispatcher.start(_wire.decode(body), Exchange(LEGACY, None, eager=True))
    if out is not None and not isinstance(out, bytes):
        out = await out
    assert out is not None
    assert "error" in orjson.loads(bytes(out))
    assert runs == []  # refused before its handler ran
    gate.set()
    assert orjson.loads(await waiting)["result"]["structuredContent"] == {"result": 1}


def test_a_notification_in_the_first_step_streams_the_reply_over_http() -> None:
    srv = AppServer("tests.apps.eager_app:app", label="jetmcp (eager)")
    try:
        body = request(
            "tools/call", {"name": "logs", "arguments": {}, "_meta": {"progressToken": "t"}}
        )
        with httpx.Client(timeout=10) as http:
            streamed = http.post(srv.url, json=body, headers=json_headers("2025-06-18"))
            assert streamed.status_code == 200
            assert streamed.headers["content-type"].startswith("text/event-stream")
            events = [
                orjson.loads(line[5:])
                for line in streamed.text.splitlines()
                if line.startswith("data:") and line[5:].strip()
            ]
            assert [e.get("method") for e in events[:-1]] == ["notifications/progress"]
            assert events[-1]["result"]["content"][0]["text"] == "done"
            # A client that takes JSON only gets the reply alone.
            plain = http.post(
                srv.url,
                json=body,
                headers={**json_headers("2025-06-18"), "Accept": "application/json"},
            )
            assert plain.status_code == 200
            assert plain.json()["result"]["content"][0]["text"] == "done"
    finally:
        srv.stop()


# ------------------------------------------------------------------ declared model results


class Aliased(BaseModel):
    model_config = {"populate_by_name": True}

    name: str = Field(alias="fullName")
    size: float | None = None
    tags: list[str] = []


class Strict(BaseModel):
    model_config = {"revalidate_instances": "always"}

    n: int


class Dumped(BaseModel):
    """A model whose own model_dump the general path calls (the fast twin must not skip it)."""

    n: int

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
        return {"n": self.n, "dumped": True}


def model_app(fast: bool) -> Server:
    server = Server("models", fast_paths=fast)

    @server.tool()
    async def aliased(
        name: str, size: float | None = None, tags: list[str] | None = None
    ) -> Aliased:
        return Aliased(name=name, size=size, tags=tags or [])

    @server.tool()
    def strict(n: int) -> Strict:
        value = Strict(n=n)
        if n < 0:
            value.n = "not a number"  # type: ignore[assignment]  # revalidation refuses it
        return value

    @server.tool(structured_output=False)
    def unstructured(name: str) -> Aliased:
        return Aliased(name=name)

    @server.tool()
    def dumped(n: int) -> Dumped:
        return Dumped(n=n)

    @server.tool()
    def wrong(name: str) -> Aliased:
        return Strict(n=len(name))  # type: ignore[return-value]  # another model than declared

    return server


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tool=st.sampled_from(["aliased", "strict", "dumped", "unstructured", "wrong"]),
    name=st.text(max_size=8),
    n=st.integers(min_value=-3, max_value=3),
    size=st.none() | st.floats(allow_nan=False, allow_infinity=False),
    tags=st.none() | st.lists(st.text(max_size=3), max_size=3),
    version=st.sampled_from(sorted(v for v, r in revisions.BY_VERSION.items() if not r.modern)),
)
def test_declared_models_are_written_as_the_general_path_writes_them(
    tool: str, name: str, n: int, size: float | None, tags: list[str] | None, version: str
) -> None:
    arguments: dict[str, Any] = {"strict": {"n": n}, "dumped": {"n": n}}.get(tool, {"name": name})
    if tool == "aliased":
        arguments |= {"size": size, "tags": tags}
    body = orjson.dumps(request("tools/call", {"name": tool, "arguments": arguments}, id=3))
    revision = revisions.BY_VERSION[version]

    async def both() -> list[bytes]:
        out = []
        for fast in (True, False):
            dispatcher = Dispatcher(model_app(fast))
            got = dispatcher.start(_wire.decode(body), Exchange(revision, None, eager=fast))
            if got is not None and not isinstance(got, bytes):
                got = await got
            assert got is not None
            out.append(bytes(got))
        return out

    fast, general = asyncio.run(both())
    assert fast == general


@pytest.mark.parametrize(
    "extra",
    [{}, {"requestState": "forged"}, {"inputResponses": {"k": {"action": "accept"}}}],
    ids=["plain", "forged-state", "stray-responses"],
)
@async_test
async def test_2026_calls_of_tools_that_cannot_ask_agree_with_the_general_path(
    extra: dict[str, Any],
) -> None:
    """At 2026-07-28 a tool without a Context is run without opening an input round
    (nothing to ask with, nothing carried): the same bytes as the general path, which opens
    one, for a plain call and for calls that carry round fields anyway."""
    meta = {
        META_PROTOCOL_VERSION: R2026_07_28.version,
        META_CLIENT_CAPABILITIES: {},
        META_CLIENT_INFO: {"name": "t", "version": "0"},
    }
    params = {"name": "aliased", "arguments": {"name": "n", "tags": ["a"]}, "_meta": meta}
    body = orjson.dumps(request("tools/call", params | extra, id=5))
    headers = RoutingHeaders.from_items(
        [
            ("mcp-method", "tools/call"),
            ("mcp-name", "aliased"),
            ("mcp-protocol-version", "2026-07-28"),
        ]
    )
    out = []
    for fast in (True, False):
        dispatcher = Dispatcher(model_app(fast))
        ex = Exchange(R2026_07_28, None, headers=headers, eager=fast)
        got = dispatcher.start(_wire.decode(body), ex)
        if got is not None and not isinstance(got, bytes):
            got = await got
        assert got is not None
        out.append(bytes(got))
    assert out[0] == out[1]
    assert ("error" in orjson.loads(out[0])) == ("requestState" in extra)


# ------------------------------------------------- async tools the extension starts


class Spot(BaseModel):
    x: int
    y: int = 0


def async_app(fast: bool, log: list[str]) -> Server:
    server = Server("async-tools", fast_paths=fast)

    @server.tool()
    async def a_add(a: int, b: int) -> int:
        log.append(f"add {a} {b}")
        return a + b

    @server.tool()
    async def a_echo(s: str, times: int = 1) -> str:
        log.append(f"echo {s}")
        await asyncio.sleep(0)
        log.append("echo resumed")
        return s * times

    @server.tool()
    async def a_boom(kind: str) -> int:
        log.append(f"boom {kind}")
        if kind == "mcp":
            raise McpError(-32099, "refused", {"why": kind})
        if kind == "value":
            raise ValueError("bad value")
        if kind == "late":
            await asyncio.sleep(0)
            raise RuntimeError("late failure")
        return 1

    @server.tool()
    async def a_spot(x: int, y: int = 0) -> Spot:
        log.append(f"spot {x}")
        return Spot(x=x, y=y)

    @server.tool(timeout=5)
    async def a_timed(n: int) -> int:
        await asyncio.sleep(0)
        return n

    @server.tool(structured_output=False)
    async def a_text(n: int) -> int:
        return n

    @server.tool()
    async def a_ctx(n: int, ctx: Context) -> int:
        await ctx.info(f"n={n}")
        await ctx.report_progress(1, 2)
        log.append(f"ctx {n} {ctx.progress_token!r} {ctx.request_id!r}")
        if n < 0:
            await asyncio.sleep(0)
            raise ValueError("negative")
        return n

    @server.tool()
    def s_ctx(n: int, ctx: Context) -> str:
        log.append(f"sync ctx {n} {ctx.meta!r}")
        return f"{n} {ctx.protocol_version}"

    return server


A_PARAMS: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "a_add": st.fixed_dictionaries({"a": st.integers(-9, 9), "b": st.integers(-9, 9)}),
    "a_echo": st.fixed_dictionaries(
        {"s": st.text(max_size=3)}, optional={"times": st.integers(0, 2)}
    ),
    "a_boom": st.fixed_dictionaries({"kind": st.sampled_from(["mcp", "value", "late", "fine", 3])}),
    "a_spot": st.fixed_dictionaries(
        {"x": st.integers(-3, 3)}, optional={"y": st.integers(-(2**63), 2**63 - 1)}
    ),
    "a_timed": st.fixed_dictionaries({"n": st.integers(0, 3)}),
    "a_text": st.fixed_dictionaries({"n": st.integers(0, 3) | st.text(max_size=1)}),
    "a_ctx": st.fixed_dictionaries({"n": st.integers(-2, 3)}),
    "s_ctx": st.fixed_dictionaries({"n": st.integers(-2, 3)}),
}


@st.composite
def async_call(draw: st.DrawFn, modern_meta: dict[str, Any] | None) -> dict[str, Any]:
    name = draw(st.sampled_from(sorted(A_PARAMS)))
    params: dict[str, Any] = {"name": name, "arguments": draw(A_PARAMS[name])}
    if modern_meta is not None:
        params["_meta"] = modern_meta
    elif draw(st.booleans()):
        params["_meta"] = {"progressToken": draw(st.integers(0, 3) | st.text(max_size=2))}
    return params


async def through(
    fast: bool, body: bytes, revision: Any, headers: Any, eager: bool
) -> tuple[bytes | None, list[str], list[Any]]:
    log: list[str] = []
    sink = ListSink()
    dispatcher = Dispatcher(async_app(fast, log))
    got = dispatcher.start(
        _wire.decode(body), Exchange(revision, None, sink, headers=headers, eager=eager)
    )
    if got is not None and not isinstance(got, bytes):
        got = await got
    return (None if got is None else bytes(got)), log, sink.messages


MODERN_META = {
    META_PROTOCOL_VERSION: R2026_07_28.version,
    META_CLIENT_CAPABILITIES: {},
    META_CLIENT_INFO: {"name": "t", "version": "0"},
}


#: 2026-07-28 ``_meta``: the log level a Context's log calls are checked against (any JSON
#: value: only a string lets one through) and a progress token, each there or not.
modern_metas = st.fixed_dictionaries(
    {key: st.just(value) for key, value in MODERN_META.items()},
    optional={
        META_LOG_LEVEL: st.sampled_from(["debug", "info", "error", "emergency", "loud", 3, None]),
        "progressToken": st.integers(0, 3) | st.text(max_size=2),
    },
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    modern=st.booleans(),
    calls=st.data(),
    batch=st.booleans(),
    eager=st.booleans(),
    version=st.sampled_from(["2025-03-26", "2025-06-18", "2025-11-25"]),
)
def test_async_plain_tools_started_by_the_extension_match_the_general_path(
    modern: bool, calls: st.DataObject, batch: bool, eager: bool, version: str
) -> None:
    """Async tools with plain arguments are planned and started by the extension (their
    coroutine handed back to be awaited and shaped); replies and side effects equal the
    general path's (``fast_paths=False``), single and batched, legacy and 2026-07-28."""
    revision = R2026_07_28 if modern else revisions.BY_VERSION[version]
    meta = calls.draw(modern_metas) if modern else None
    if batch and not modern and not revision.batching:
        revision = revisions.BY_VERSION["2025-03-26"]
    entries = [
        request("tools/call", calls.draw(async_call(meta)), id=i)
        for i in range(calls.draw(st.integers(2, 4)) if batch else 1)
    ]
    body = orjson.dumps(entries if batch else entries[0])
    headers = None
    if modern and not batch:
        name = entries[0]["params"]["name"]
        headers = RoutingHeaders.from_items(
            [
                ("mcp-method", "tools/call"),
                ("mcp-name", name),
                ("mcp-protocol-version", "2026-07-28"),
            ]
        )

    async def both() -> None:
        fast = await through(True, body, revision, headers, eager)
        general = await through(False, body, revision, headers, eager)
        assert fast == general, body

    asyncio.run(both())


@pytest.mark.parametrize("level", ["debug", "info", "error", "loud", 3, None, "absent", "twice"])
@pytest.mark.parametrize("tool", ["a_ctx", "s_ctx"])
def test_a_planned_context_reads_the_log_level_and_meta_as_the_general_path(
    level: Any, tool: str
) -> None:
    """A 2026-07-28 Context tool run from the extension's plan reads its request's log level
    without building ``_meta`` (and ``_meta`` only if it asks): the same messages, log and
    reply as the general path for every log level value, none, and a member written twice
    (the last one counts, as in the dict the general path reads)."""
    meta = dict(MODERN_META)
    if level not in ("absent", "twice"):
        meta[META_LOG_LEVEL] = level
    params = {"name": tool, "arguments": {"n": 2}, "_meta": meta}
    body = orjson.dumps(request("tools/call", params, id=3))
    if level == "twice":
        member = f'"{META_LOG_LEVEL}":'.encode()
        twice = member + b'"debug",' + member + b'"error",'
        body = body.replace(b'"_meta":{', b'"_meta":{' + twice)
    headers = RoutingHeaders.from_items(
        [("mcp-method", "tools/call"), ("mcp-name", tool), ("mcp-protocol-version", "2026-07-28")]
    )

    async def both() -> None:
        fast = await through(True, body, R2026_07_28, headers, True)
        general = await through(False, body, R2026_07_28, headers, True)
        assert fast == general
        sent = [m.get("method") for m in fast[2]]
        # An unknown level ranks lowest, so it lets everything through (both paths).
        logged = tool == "a_ctx" and level in ("debug", "info", "loud")
        assert ("notifications/message" in sent) is logged, sent
        if tool == "s_ctx":
            assert repr(orjson.loads(body)["params"]["_meta"]) in fast[1][0]

    asyncio.run(both())


def test_a_planned_context_makes_its_call_only_when_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A 2026-07-28 Context tool run from the extension's plan gets a Context whose call
    (and round) is made only when the tool needs it: a message below the request's log
    level needs none; one that goes out, or a look at the request id, makes it once."""
    made: list[int] = []
    first = RoundCall.first

    def counted(*args: Any) -> RoundCall:
        made.append(1)
        return first(*args)

    monkeypatch.setattr(RoundCall, "first", counted)
    server = Server("lazy")
    seen: list[str] = []

    @server.tool()
    async def quiet(n: int, ctx: Context) -> int:
        await ctx.debug("below the level")
        return n

    @server.tool()
    async def loud(n: int, ctx: Context) -> int:
        await ctx.error("at the level")
        seen.append(f"{ctx.request_id} {ctx.request_id}")
        return n

    dispatcher = Dispatcher(server)
    for tool, calls in (("quiet", 0), ("loud", 1)):
        made.clear()
        meta = dict(MODERN_META) | {META_LOG_LEVEL: "warning"}
        body = orjson.dumps(
            request("tools/call", {"name": tool, "arguments": {"n": 1}, "_meta": meta}, id=4)
        )
        headers = RoutingHeaders.from_items(
            [
                ("mcp-method", "tools/call"),
                ("mcp-name", tool),
                ("mcp-protocol-version", "2026-07-28"),
            ]
        )
        sink = ListSink()
        fast = dispatcher.fast
        got = dispatcher.start(
            _wire.decode(body), Exchange(R2026_07_28, None, sink, headers=headers, eager=True)
        )
        assert isinstance(got, bytes) and dispatcher.fast == fast + 1
        assert orjson.loads(got)["result"]["structuredContent"] == {"result": 1}
        assert len(made) == calls, tool
        assert [m["params"]["level"] for m in sink.messages] == (["error"] if calls else [])
    assert seen == ["4 4"]


def test_async_plain_tools_are_planned() -> None:
    log: list[str] = []
    server = async_app(True, log)
    for name in A_PARAMS:
        assert name in server.routes, name
    assert server.routes["a_ctx"].context == "ctx"
    body = orjson.dumps(request("tools/call", {"name": "a_add", "arguments": {"a": 1, "b": 2}}))
    dispatcher = Dispatcher(server)
    out = dispatcher.start(_wire.decode(body), Exchange(LEGACY, None, eager=True))
    assert isinstance(out, bytes)  # finished in its first step, inside start
    assert dispatcher.fast == 1
    assert log == ["add 1 2"]


def test_the_extension_takes_the_first_step_only_when_asked() -> None:
    """``Routes.answer(step=True)``: an async tool's coroutine takes its first step in the
    extension. What it returns at once is the reply (a primitive) or a stepped outcome for
    Python to shape; what it raises is a failed outcome; a coroutine that suspends comes
    back suspended, with what it yielded. Without ``step``, and for a tool with a timeout,
    the coroutine comes back unstarted."""
    log: list[str] = []
    server = async_app(True, log)
    shape = Dispatcher(server).shape(LEGACY)

    def answer(name: str, arguments: dict[str, Any], step: bool) -> Any:
        body = orjson.dumps(request("tools/call", {"name": name, "arguments": arguments}))
        return server.routes.answer(_wire.decode(body), shape, None, step)

    done = answer("a_add", {"a": 1, "b": 2}, True)
    assert isinstance(done, bytes)
    assert orjson.loads(done)["result"]["structuredContent"] == {"result": 3}
    assert log == ["add 1 2"]

    unstarted = answer("a_add", {"a": 1, "b": 2}, False)
    assert isinstance(unstarted, _wire.Outcome)
    assert not unstarted.stepped and asyncio.iscoroutine(unstarted.value)
    assert log == ["add 1 2"]  # nothing of it ran
    unstarted.value.close()

    log.clear()
    suspended = answer("a_echo", {"s": "x"}, True)
    assert suspended.stepped and suspended.suspended and not suspended.failed
    assert suspended.yielded is None  # asyncio.sleep(0) yields None
    assert log == ["echo x"]
    suspended.value.close()

    failed = answer("a_boom", {"kind": "value"}, True)
    assert failed.stepped and failed.failed and not failed.suspended
    assert isinstance(failed.value, ValueError)

    model = answer("a_spot", {"x": 1}, True)
    assert model.stepped and not model.failed and not model.suspended
    assert model.value == Spot(x=1, y=0)

    timed = answer("a_timed", {"n": 1}, True)
    assert not timed.stepped and asyncio.iscoroutine(timed.value)
    timed.value.close()


def ask_app(fast: bool, log: list[str]) -> Server:
    server = Server("asking", fast_paths=fast)

    @server.tool()
    async def a_ask(n: int, ctx: Context) -> str:
        log.append(f"ask {n}")
        answer = await ctx.elicit(
            "name?", {"type": "object", "properties": {"name": {"type": "string"}}}
        )
        log.append(f"answered {answer.action}")
        return f"{n} {answer.action} {answer.data!r}"

    @server.tool()
    async def a_late_ask(n: int, ctx: Context) -> str:
        # Asks after it waited: the question ends the round of a call still being awaited.
        log.append(f"late {n}")
        await asyncio.sleep(0)
        answer = await ctx.elicit(
            "name?", {"type": "object", "properties": {"name": {"type": "string"}}}
        )
        log.append(f"answered {answer.action}")
        return f"{n} {answer.action} {answer.data!r}"

    @server.tool()
    def s_ask(n: int, ctx: Context) -> str:
        log.append(f"sync {n} {ctx.protocol_version}")
        return str(n)

    return server


@pytest.mark.parametrize("tool", ["a_ask", "a_late_ask", "s_ask"])
@async_test
async def test_2026_context_tools_planned_by_the_extension_ask_in_rounds(tool: str) -> None:
    """A 2026-07-28 call of a Context tool is planned by the extension and run with the
    Context and input round the runner makes: its first round (an InputRequiredResult when
    it asks) is the general path's but for the sealed state's own bytes, and the retry with
    that state, served the general way, completes it."""
    meta = dict(MODERN_META) | {META_CLIENT_CAPABILITIES: {"elicitation": {}}}
    params = {"name": tool, "arguments": {"n": 3}, "_meta": meta}
    headers = RoutingHeaders.from_items(
        [("mcp-method", "tools/call"), ("mcp-name", tool), ("mcp-protocol-version", "2026-07-28")]
    )
    first = orjson.dumps(request("tools/call", params, id=9))
    seen = []
    for fast in (True, False):
        log: list[str] = []
        dispatcher = Dispatcher(ask_app(fast, log))
        got = dispatcher.start(
            _wire.decode(first), Exchange(R2026_07_28, None, headers=headers, eager=True)
        )
        if got is not None and not isinstance(got, bytes):
            got = await got
        assert got is not None
        reply = orjson.loads(bytes(got))
        state = reply["result"].pop("requestState", None)
        seen.append((reply, log, dispatcher.fast))
        if fast:
            fast_state, fast_dispatcher = state, dispatcher
    (fast_reply, fast_log, hits), (general_reply, general_log, _) = seen
    assert hits == 1  # planned and run by the extension
    assert (fast_reply, fast_log) == (general_reply, general_log)
    if tool == "s_ask":
        return
    assert fast_reply["result"]["resultType"] == "input_required"
    (key,) = fast_reply["result"]["inputRequests"]
    retry = dict(params) | {
        "requestState": fast_state,
        "inputResponses": {key: {"action": "accept", "content": {"name": "Ada"}}},
    }
    # The same server (its key seals the state), the retry served the general way.
    got = fast_dispatcher.start(
        _wire.decode(orjson.dumps(request("tools/call", retry, id=10))),
        Exchange(R2026_07_28, None, headers=headers, eager=True),
    )
    if got is not None and not isinstance(got, bytes):
        got = await got
    assert got is not None
    done = orjson.loads(bytes(got))
    assert "result" in done, done
    assert done["result"]["content"][0]["text"] == "3 accept {'name': 'Ada'}", done


# ------------------------------------- calls the extension plans and Python makes


def python_call_app(fast: bool, log: list[str]) -> Server:
    server = Server("python-calls", fast_paths=fast)

    @server.tool()
    def count(items: list[int], label: str = "n") -> dict[str, Any]:
        log.append(f"count {items}")
        return {label: len(items)}

    @server.tool()
    async def move(spot: Spot, by: int = 1) -> Spot:
        log.append(f"move {spot.x}")
        await asyncio.sleep(0)
        return Spot(x=spot.x + by, y=spot.y)

    @server.tool()
    async def place(spot: Spot) -> Spot:
        # Finishes (or fails) in its first step: taken by the runner when it may step.
        log.append(f"place {spot.x}")
        if spot.x < -1:
            raise ValueError("too far left")
        if spot.x > 2:
            raise McpError(-32098, "refused", {"x": spot.x})
        return spot

    @server.tool(input_schema={"type": "object", "properties": {"a": {"type": "integer"}}})
    def loose(**extra: Any) -> str:
        log.append(f"loose {sorted(extra)}")
        return ",".join(sorted(extra))

    @server.tool()
    async def told(items: list[str], ctx: Context) -> int:
        await ctx.info(f"{len(items)} items")
        await ctx.report_progress(1, 1)
        log.append(f"told {items} {ctx.progress_token!r}")
        return len(items)

    @server.tool()
    def picky(when: float | None = None, tags: set[str] | None = None) -> str:
        log.append(f"picky {when!r}")
        if when is not None and when < 0:
            raise ValueError("negative")
        return repr(sorted(tags or ()))

    return server


PYTHON_CALLS: dict[str, st.SearchStrategy[Any]] = {
    "count": st.fixed_dictionaries(
        {"items": st.lists(st.integers(-3, 3), max_size=3) | st.just("[1, 2]") | st.just("x")},
        optional={"label": st.sampled_from(["n", "k"]) | st.integers(-(2**63), 2**64 - 1)},
    ),
    "move": st.fixed_dictionaries(
        {"spot": st.fixed_dictionaries({"x": st.integers(-3, 3)}) | st.just({"x": "bad"})},
        optional={"by": st.integers(-2, 2)},
    ),
    "place": st.fixed_dictionaries(
        {
            "spot": st.fixed_dictionaries(
                {"x": st.integers(-3, 3)}, optional={"y": st.integers(-2, 2)}
            )
        }
    ),
    "loose": st.dictionaries(st.sampled_from(["a", "b", "c d"]), st.integers(0, 2), max_size=3),
    "told": st.fixed_dictionaries({"items": st.lists(st.text(max_size=2), max_size=2)}),
    "picky": st.fixed_dictionaries(
        {},
        optional={
            "when": st.floats(-2, 2) | st.none() | st.text(max_size=2),
            "tags": st.lists(st.sampled_from(["a", "b"]), max_size=3) | st.none(),
        },
    ),
}


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(PYTHON_CALLS)),
    data=st.data(),
    modern=st.booleans(),
    eager=st.booleans(),
    token=st.none() | st.integers(0, 3),
    version=st.sampled_from(["2024-11-05", "2025-06-18", "2025-11-25"]),
)
def test_calls_python_makes_match_the_general_path(
    name: str,
    data: st.DataObject,
    modern: bool,
    eager: bool,
    token: int | None,
    version: str,
) -> None:
    """Tools whose arguments are not all plain are planned by the extension (single calls)
    and called by Python without the general path's steps (ToolRoute.python_call): the same
    bytes, log and notifications as fast_paths=False, legacy and 2026-07-28."""
    params: dict[str, Any] = {"name": name, "arguments": data.draw(PYTHON_CALLS[name])}
    if modern:
        meta: dict[str, Any] = dict(MODERN_META)
        if token is not None:
            meta["progressToken"] = token
        params["_meta"] = meta
    elif token is not None:
        params["_meta"] = {"progressToken": token}
    revision = R2026_07_28 if modern else revisions.BY_VERSION[version]
    headers = (
        RoutingHeaders.from_items(
            [
                ("mcp-method", "tools/call"),
                ("mcp-name", name),
                ("mcp-protocol-version", "2026-07-28"),
            ]
        )
        if modern
        else None
    )
    body = orjson.dumps(request("tools/call", params, id=11))

    async def serve(fast: bool) -> tuple[bytes | None, list[str], list[Any], int]:
        log: list[str] = []
        sink = ListSink()
        dispatcher = Dispatcher(python_call_app(fast, log))
        got = dispatcher.start(
            _wire.decode(body), Exchange(revision, None, sink, headers=headers, eager=eager)
        )
        if got is not None and not isinstance(got, bytes):
            got = await got
        return (None if got is None else bytes(got)), log, sink.messages, dispatcher.fast

    async def both() -> None:
        fast = await serve(True)
        general = await serve(False)
        assert fast[:3] == general[:3], body
        if name in VALIDATED:
            # The extension validated the arguments and made the call (counted), unless the
            # model refused them (the general path answered: not counted).
            assert fast[3] in (0, 1)
        else:
            assert fast[3] == 0  # Python made the call: not counted as the extension's

    asyncio.run(both())


#: The tools above whose arguments the extension reads with the model's validate_json
#: (ToolRoute.validates; ``told`` with the Context the dispatcher makes for it); the others'
#: calls Python makes (ToolRoute.python_call).
VALIDATED = {"count", "move", "place", "told"}


def test_tools_python_calls_are_planned() -> None:
    server = python_call_app(True, [])
    for name in PYTHON_CALLS:
        route = server.routes[name]
        assert route.validates == (name in VALIDATED), name
        assert route.python_call == (name not in VALIDATED), name
    plans = server.routes.answer(
        _wire.decode(
            orjson.dumps(request("tools/call", {"name": "picky", "arguments": {"when": 1}}))
        ),
        _wire.Shape(True),
    )
    assert isinstance(plans, _wire.Plans)
    assert plans.arguments(0) == {"when": 1}
    with pytest.raises(ValueError, match="Python calls this tool"):
        plans.run(0)


@pytest.mark.parametrize("revision", [LEGACY, R2026_07_28], ids=["legacy", "2026"])
@async_test
async def test_the_sink_is_opened_only_for_a_handler_that_needs_it(revision: Any) -> None:
    """An Exchange without a sink has its transport's opener make one when a handler first
    sends something: a plain call (answered by the extension) never does, nor a Context
    tool that sends nothing; a Context tool's notifications go through the one its first
    send opened; without an opener the sink is NULL_SINK."""
    dispatcher = Dispatcher(app([]))
    opened: list[ListSink] = []

    def opener(ex: Exchange) -> ListSink:
        assert ex.channel == "the body"
        opened.append(ListSink())
        return opened[-1]

    cases = (("at_once", False, "debug"), ("model", False, "debug"), ("logs", True, "debug"))
    cases += (("quiet", False, "info"),) if revision.modern else ()
    for name, expect_open, level in cases:
        opened.clear()
        meta = (
            {"_meta": {**MODERN_META, "io.modelcontextprotocol/logLevel": level}}
            if revision.modern
            else {}
        )
        body = orjson.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": name, "arguments": dict(CALLS).get(name, {}), **meta},
            }
        )
        ex = Exchange(
            revision, None, None, None, True, eager=True, opener=opener, channel="the body"
        )
        out = dispatcher.start(_wire.decode(body), ex)
        if out is not None and not isinstance(out, bytes):
            out = await out
        assert b'"result"' in bytes(out)  # type: ignore[arg-type]
        assert (ex.opened is not None) is expect_open, name
        assert len(opened) == (1 if expect_open else 0)
        if expect_open:
            assert ex.opened is opened[0] and ex.sink is opened[0]
            assert opened[0].methods() == ["notifications/message"]
    bare = Exchange(revision, None, None)
    assert bare.sink is NULL_SINK and bare.opened is NULL_SINK


@async_test
async def test_what_a_handler_sends_after_a_json_reply_goes_nowhere() -> None:
    """A Context tool that sent nothing before its result is answered as plain JSON; what
    it sends later (from a task it left running) is dropped, and begins no stream."""
    from jetmcp.settings import Settings
    from jetmcp.transports.http import McpHttpApp

    server = Server("late")
    kept: list[Context] = []

    @server.tool()
    def later(ctx: Context) -> str:
        kept.append(ctx)
        return "now"

    app = McpHttpApp(server, Settings(stateless=True))
    proto = Proto(orjson.dumps(request("tools/call", {"name": "later", "arguments": {}})))
    await app.__rsgi__(Scope({**POST_HEADERS, "content-length": "1"}), proto)
    assert [reply.status for reply in proto.replies] == [200]
    assert b'"now"' in proto.replies[0].body
    await kept[0].info("too late")  # no session, no level set: it would be sent
    assert len(proto.replies) == 1
