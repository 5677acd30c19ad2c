"""Plans (``Routes.plan`` -> ``Plans.run``) answer exactly as the general path does.

Two servers hold the same tools: the extension plans calls for one of them; the other has
every fast path off (``Server(fast_paths=False)``), so every call takes the general path. A
frame served through plans by hand (planned entries run by the extension, outcomes shaped by
the tool, other entries by the era runner, in request order), and the dispatcher with its
fast paths on, must both get the byte-identical reply of the general path (and the same
kind of reply), with the same side effects in the same order, at every legacy revision and
at 2026-07-28 (with ``_meta`` and, over HTTP, the routing headers).
"""

from __future__ import annotations

import base64
import gc
import math
import weakref
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, TypeAdapter

from harness.messages import (
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    modern_meta,
    modern_request,
    request,
)
from jetmcp import Context, Server, _wire
from jetmcp.core.dispatch import Dispatcher, Reply
from jetmcp.core.exchange import Exchange
from jetmcp.errors import INTERNAL_ERROR, McpError
from jetmcp.protocol import revisions
from jetmcp.protocol.modern import RoutingHeaders
from jetmcp.protocol.revisions import Revision
from jetmcp.server.tasks_ext import TASKS_EXTENSION

LEGACY = list(revisions.LEGACY)
R_MODERN = revisions.R2026_07_28
R_BATCH = revisions.R2025_03_26
R_SINGLE = revisions.R2025_06_18
LOG: list[str] = []
#: The input schema of a tool whose argument goes in an ``Mcp-Param-Tenant`` header.
HEADER_SCHEMA = {
    "type": "object",
    "properties": {"tenant": {"type": "string", "x-mcp-header": "Tenant"}},
    "required": ["tenant"],
}


class Point(BaseModel):
    x: int
    y: int


def build(routed: bool) -> Server:
    server = Server(
        "plans-test", title="Plans", website_url="https://plans.test", fast_paths=routed
    )

    @server.tool()
    def add(a: int, b: int) -> int:
        LOG.append(f"add {a} {b}")
        return a + b

    @server.tool()
    def echo(s: str, times: int = 1) -> str:
        LOG.append("echo")
        return s * times

    @server.tool()
    def flag(x: bool = True) -> bool:
        return not x

    @server.tool()
    def scale(x: float, k: float = 2.0) -> float:
        return x * k

    @server.tool()
    def loose(a: int, b: str = "b"):  # type: ignore[no-untyped-def]  # no return annotation
        LOG.append(f"loose {a}")
        return {"int": a, "str": b, "none": None, "list": [a, b]}.get(b, a if a % 2 else b)

    @server.tool()
    def point(x: int, y: int = 0) -> Point:
        return Point(x=x, y=y)

    @server.tool(structured_output=False)
    def plain_text(n: int) -> int:
        return n

    @server.tool()
    def big(n: int) -> int:
        return 10 ** min(abs(n), 40)

    @server.tool()
    def boom(kind: str) -> int:
        LOG.append(f"boom {kind}")
        if kind == "value":
            raise ValueError("bad value")
        if kind == "empty":
            raise RuntimeError()
        if kind == "mcp":
            raise McpError(-32099, "custom", {"why": kind})
        return len(kind)

    @server.tool()
    def lone(n: int) -> str:  # a str that cannot be written as UTF-8
        return "\ud800" * n

    @server.tool()
    def opt(a: int | None = None, s: str | None = None) -> str:
        return f"{a!r}-{s!r}"

    @server.tool(task_support="optional")
    def maybe_task(n: int) -> int:  # may run as a task at 2026-07-28
        LOG.append(f"maybe_task {n}")
        return n

    @server.tool(input_schema=HEADER_SCHEMA)
    def tenant(tenant: str) -> str:  # its argument is checked against a header
        LOG.append(f"tenant {tenant}")
        return tenant.upper()

    @server.tool()
    def with_ctx(n: int, ctx: Context) -> int:  # not planned: it takes a Context
        LOG.append(f"ctx {n}")
        return n

    return server


ROUTED = build(True)
ROUTED_D = Dispatcher(ROUTED)
#: The general path: every fast path of the server off.
GENERAL = Dispatcher(build(False))
NAMES = [
    "add",
    "echo",
    "flag",
    "scale",
    "loose",
    "point",
    "plain_text",
    "big",
    "boom",
    "lone",
    "opt",
    "maybe_task",
    "tenant",
    "with_ctx",
]
_SHAPES: dict[str, _wire.Shape] = {}


def shape(revision: Revision) -> _wire.Shape:
    """The revision's shape, as the dispatcher will build it (once per revision)."""
    cached = _SHAPES.get(revision.version)
    if cached is None:
        if revision.result_type:
            info = _wire.dumps(ROUTED.server_info(revision))
            cached = _wire.Shape(
                revision.structured_output, info, list(revisions.MODERN_BY_VERSION)
            )
        else:
            cached = _wire.Shape(revision.structured_output)
        _SHAPES[revision.version] = cached
    return cached


def complete(result: dict[str, Any], revision: Revision) -> dict[str, Any]:
    """A 2026-07-28 result as the spec has it (the reference the extension's completion is
    held to): ``resultType`` added unless set, the server's identity first in ``_meta``."""
    out = dict(result)
    if "resultType" not in out:
        out["resultType"] = "complete"
    info = GENERAL.server.server_info(revision)
    meta = out.get("_meta")
    out["_meta"] = (
        {META_SERVER_INFO: info, **meta} if isinstance(meta, dict) else {META_SERVER_INFO: info}
    )
    return out


def finish(item: bytes | _wire.Outcome, revision: Revision) -> bytes:
    """A planned entry's reply: as run, or its outcome shaped as the general path shapes a
    tool's return value or exception."""
    if isinstance(item, bytes):
        return item
    assert isinstance(item, _wire.Outcome)
    tool = item.tool
    try:
        if item.failed:
            result = tool.failure(item.value, revision)
        else:
            result = tool.shape(item.value, revision)
        if revision.result_type:
            result = complete(result, revision)
        return _wire.encode_result(item.raw_id, result)
    except McpError as exc:
        if exc.has_data:
            return _wire.encode_error(item.raw_id, exc.code, exc.message, exc.data)
        return _wire.encode_error(item.raw_id, exc.code, exc.message)
    except Exception:
        return _wire.encode_error(item.raw_id, INTERNAL_ERROR, "Internal error")


def exchange(revision: Revision, headers: RoutingHeaders | None) -> Exchange:
    return Exchange(revision, None, headers=headers)


def via_plans(
    body: bytes,
    revision: Revision,
    headers: RoutingHeaders | None = None,
    *,
    whole: bool = True,
) -> tuple[bool, bytes | None, list[str]]:
    """Serve ``body`` through plans: (whether anything planned, the reply, the log).
    ``whole`` runs a complete batch with ``run_all``, else entry by entry."""
    LOG.clear()
    frame = _wire.decode(body)
    plans = ROUTED.routes.plan(frame, shape(revision), headers)
    if plans is None:
        assert LOG == []
        return False, None, []
    assert len(plans) == len(frame.entries)
    if frame.kind == _wire.FRAME_SINGLE:
        item = plans.run(0)
        assert item is not None
        return True, finish(item, revision), list(LOG)
    items: list[Any] = [None] * len(plans)
    if whole and plans.complete:
        ran = plans.run_all()
        if isinstance(ran, bytes):
            return True, ran, list(LOG)
        items = ran
    replies: list[bytes] = []
    for i, entry in enumerate(frame.entries):
        item = items[i]
        if item is None and plans.planned(i):
            item = plans.run(i)
        if item is not None:
            replies.append(finish(item, revision))
            continue
        reply = GENERAL.runner(revision).entry(entry, exchange(revision, headers), True)
        assert reply is None or isinstance(reply, bytes)
        if reply is not None:
            replies.append(reply)
    return True, (_wire.encode_batch(replies) if replies else None), list(LOG)


def general(
    body: bytes, revision: Revision, headers: RoutingHeaders | None = None
) -> tuple[bytes | None, list[str]]:
    LOG.clear()
    reply = GENERAL.start(_wire.decode(body), exchange(revision, headers))
    assert reply is None or isinstance(reply, bytes)
    return (None if reply is None else bytes(reply)), list(LOG)


def kind_of(reply: Any) -> tuple[int, int | None] | None:
    """What a reply says beyond its bytes (a status, for a transport)."""
    return (reply.kind, reply.code) if isinstance(reply, Reply) else None


def same(
    body: bytes, revision: Revision, headers: RoutingHeaders | None = None, *, whole: bool = True
) -> bool:
    """Whether anything planned; when it did, plans and the general path agree exactly."""
    planned, reply, log = via_plans(body, revision, headers, whole=whole)
    want = general(body, revision, headers)
    if planned:
        assert (reply, log) == want, (body, revision.version)
    # The dispatcher itself, with its fast paths on, agrees whatever planned.
    LOG.clear()
    got = ROUTED_D.start(_wire.decode(body), exchange(revision, headers))
    assert (got, list(LOG)) == want, (body, revision.version)
    slow = GENERAL.start(_wire.decode(body), exchange(revision, headers))
    assert kind_of(got) == kind_of(slow), (body, revision.version)
    return planned


# ------------------------------------------------------------------------- strategies

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=5,
)
arg_keys = st.sampled_from(["a", "b", "s", "times", "x", "k", "n", "kind", "y", "tenant", "zz"])
argument_values = (
    json_values
    | st.integers(-5, 5)
    | st.sampled_from(["value", "mcp", "empty", "", "int", "str", "list", "acme"])
)
arguments = st.dictionaries(arg_keys, argument_values, max_size=4)
legacy_metas = st.sampled_from(
    [
        {"progressToken": 1},
        {"progressToken": "p", "other": [1, {}]},
        {},
        {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}},
        None,
        [],
    ]
)
#: ``_meta`` of 2026-07-28 requests: the first ones pass ``check_meta``/``check_version``.
GOOD_METAS: list[Any] = [
    modern_meta(),
    modern_meta(progressToken=7, logLevel="debug"),
    modern_meta(capabilities={"roots": {}}, clientInfo=None),
    modern_meta(capabilities={"extensions": {TASKS_EXTENSION: {}}}),
    modern_meta(capabilities={"sampling": {}}),
    {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}},
]
#: ``_meta`` the general path answers -32602 or -32022.
BAD_METAS: list[Any] = [
    modern_meta(version="2025-06-18"),
    modern_meta(version="2099-01-01"),
    {**modern_meta(), META_PROTOCOL_VERSION: 20260728},
    {**modern_meta(), META_CLIENT_CAPABILITIES: []},
    {**modern_meta(), META_CLIENT_CAPABILITIES: None},
    {META_PROTOCOL_VERSION: "2026-07-28"},
    {META_CLIENT_CAPABILITIES: {}},
    {},
    [],
]
modern_metas = st.sampled_from([*GOOD_METAS * 3, *BAD_METAS])


ints = st.integers(-5, 5) | st.integers(-(2**70), 2**70)
texts = st.text(max_size=5)
floats = st.floats(allow_nan=False, allow_infinity=False)
#: Each tool's parameters: (name, values of its type, required).
PARAMS: dict[str, list[tuple[str, st.SearchStrategy[Any], bool]]] = {
    "add": [("a", ints, True), ("b", ints, True)],
    "echo": [("s", texts, True), ("times", st.integers(0, 3), False)],
    "flag": [("x", st.booleans(), False)],
    "scale": [("x", floats, True), ("k", floats, False)],
    "loose": [
        ("a", ints, True),
        ("b", st.sampled_from(["int", "str", "none", "list", "b"]), False),
    ],
    "point": [("x", ints, True), ("y", ints, False)],
    "plain_text": [("n", ints, True)],
    "big": [("n", st.integers(-50, 50), True)],
    "boom": [("kind", st.sampled_from(["value", "empty", "mcp", "fine"]), True)],
    "lone": [("n", st.integers(0, 2), True)],
    "opt": [("a", st.none() | ints, False), ("s", st.none() | texts, False)],
    "maybe_task": [("n", ints, True)],
    "tenant": [("tenant", texts, True)],
    "with_ctx": [("n", ints, True)],
}


@st.composite
def tool_arguments(draw: st.DrawFn, name: Any) -> dict[str, Any]:
    """Arguments for tool ``name``: mostly of its parameters' types (optional ones at
    random), sometimes with one more key or one value of any type."""
    args: dict[str, Any] = {}
    for param, values, required in PARAMS.get(name, []):
        if required or draw(st.booleans()):
            args[param] = draw(values)
    if draw(st.integers(0, 4)) == 0:
        args[draw(arg_keys)] = draw(argument_values)
    return args


@st.composite
def call_params(draw: st.DrawFn, metas: st.SearchStrategy[Any], meta_rate: int = 2) -> Any:
    """``params`` of a ``tools/call``; one in ``meta_rate`` has a ``_meta`` from ``metas``."""
    name = draw(st.sampled_from([*NAMES, "nope", 3]))
    params: dict[str, Any] = {"name": name}
    form = draw(st.sampled_from(["args"] * 6 + ["any", "none", "null", "list"]))
    if form == "args":
        params["arguments"] = draw(tool_arguments(name))
    elif form == "any":
        params["arguments"] = draw(arguments)
    elif form == "null":
        params["arguments"] = None
    elif form == "list":
        params["arguments"] = [1, 2]
    if draw(st.integers(1, meta_rate)) > 1 or meta_rate == 1:
        meta = draw(metas)
        if meta is not None:
            params["_meta"] = meta
    if draw(st.integers(0, 9)) == 0:
        params[draw(st.sampled_from(["task", "other"]))] = {"ttl": 1}
    return params


ids = st.integers(0, 99) | st.text('abc"\\é', max_size=3)


def message(request_id: Any, params: Any) -> dict[str, Any]:
    return request("tools/call", params, id=request_id)


# ------------------------------------------------------------------------- legacy


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(params=call_params(legacy_metas), revision=st.sampled_from(LEGACY), request_id=ids)
def test_single_calls_match_the_general_path(
    params: Any, revision: Revision, request_id: Any
) -> None:
    planned = same(_wire.dumps(message(request_id, params)), revision)
    event("planned" if planned else "not planned")


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    calls=st.lists(call_params(legacy_metas), min_size=1, max_size=6),
    revision=st.sampled_from(LEGACY),
    whole=st.booleans(),
)
def test_batches_match_the_general_path(calls: list[Any], revision: Revision, whole: bool) -> None:
    entries: list[Any] = []
    for i, params in enumerate(calls):
        entries.append(message(i, params))
        if i % 3 == 1:
            entries.append({"jsonrpc": "2.0", "method": "notifications/progress"})
    # A batch is planned as given: at a revision without batches the caller refuses it first.
    if revision.batching:
        planned = same(_wire.dumps(entries), revision, whole=whole)
        event("planned" if planned else "not planned")


def test_meta_at_a_legacy_revision() -> None:
    """A plain tool cannot see ``_meta``: a progress token plans. A ``_meta`` naming a
    protocol version does not (stdio serves such a request at 2026-07-28)."""
    call = {"name": "add", "arguments": {"a": 1, "b": 2}}
    token = _wire.dumps(message(1, {**call, "_meta": {"progressToken": "t"}}))
    assert same(token, R_SINGLE)
    # An escaped key could spell the protocol version's.
    assert not same(token.replace(b'"progressToken"', b'"progress\\u0054oken"'), R_SINGLE)
    body = _wire.dumps(message(1, {**call, "_meta": modern_meta()}))
    assert not same(body, R_SINGLE)
    reply = GENERAL.start(_wire.decode(body), Exchange(R_SINGLE, None, sniff_meta=True))
    assert isinstance(reply, bytes)
    assert orjson.loads(reply)["result"]["resultType"] == "complete"
    for extra in ({"task": {}}, {"_meta": []}, {"_meta": None}):
        assert not same(_wire.dumps(message(1, {**call, **extra})), revisions.R2025_11_25)


# ------------------------------------------------------------------------- 2026-07-28


def routing_items(body: Any, form: str) -> list[tuple[str, str]]:
    """HTTP headers for a 2026-07-28 single message, right or wrong in one way."""
    params = body.get("params") if isinstance(body, dict) else None
    name = params.get("name") if isinstance(params, dict) else None
    items = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call")]
    if isinstance(name, str):
        items.append(("Mcp-Name", name))
    if form == "right":
        return items
    if form == "padded":
        return [(k, f" {v}\t") for k, v in items]
    if form == "base64":
        encoded = base64.b64encode(str(name).encode()).decode()
        return [*items[:2], ("Mcp-Name", f"=?base64?{encoded}?=")]
    if form == "no-version":
        return items[1:]
    if form == "version":
        return [("MCP-Protocol-Version", "2025-11-25"), *items[1:]]
    if form == "method":
        return [items[0], ("Mcp-Method", "tools/list"), *items[2:]]
    if form == "no-method":
        return [items[0], *items[2:]]
    if form == "name":
        return [*items[:2], ("Mcp-Name", f"{name}x")]
    if form == "no-name":
        return items[:2]
    if form == "repeated":
        return [*items, ("mcp-method", "tools/call")]
    if form == "param":
        return [*items, ("Mcp-Param-Tenant", "acme")]
    if form == "control":
        return [*items[:2], ("Mcp-Name", f"{name}\x01")]
    raise AssertionError(form)


HEADER_FORMS = [
    "right",
    "right",
    "padded",
    "base64",
    "no-version",
    "version",
    "method",
    "no-method",
    "name",
    "no-name",
    "repeated",
    "param",
    "control",
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    params=call_params(modern_metas, meta_rate=8),
    request_id=ids,
    form=st.sampled_from(["stdio", "stdio", "stdio", "right", "right", *HEADER_FORMS]),
)
def test_modern_single_calls_match_the_general_path(
    params: Any, request_id: Any, form: str
) -> None:
    msg = message(request_id, params)
    headers = None if form == "stdio" else RoutingHeaders.from_items(routing_items(msg, form))
    planned = same(_wire.dumps(msg), R_MODERN, headers)
    event("planned" if planned else "not planned")


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    calls=st.lists(call_params(modern_metas, meta_rate=12), min_size=1, max_size=6),
    version=st.sampled_from([None, "2026-07-28", " 2026-07-28 ", "2025-06-18"]),
    whole=st.booleans(),
)
def test_modern_batches_match_the_general_path(
    calls: list[Any], version: str | None, whole: bool
) -> None:
    entries: list[Any] = [message(i, params) for i, params in enumerate(calls)]
    entries.insert(1, modern_request("tools/list", id="list"))
    headers = (
        None if version is None else RoutingHeaders.from_items([("MCP-Protocol-Version", version)])
    )
    planned = same(_wire.dumps(entries), R_MODERN, headers, whole=whole)
    event("planned" if planned else "not planned")


def modern_call(name: str, **arguments: Any) -> dict[str, Any]:
    return modern_request("tools/call", {"name": name, "arguments": arguments}, id=1)


@pytest.mark.parametrize("meta", GOOD_METAS + BAD_METAS)
def test_modern_meta(meta: Any) -> None:
    """``_meta`` that passes ``check_meta`` and ``check_version`` plans; any other is left
    to the general path, which answers it -32602 or -32022."""
    msg = modern_request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}, meta=meta)
    body = _wire.dumps(msg)
    good = meta in GOOD_METAS
    assert same(body, R_MODERN) == good
    if not good:
        reply, _ = general(body, R_MODERN)
        assert orjson.loads(reply)["error"]["code"] in (-32602, -32022)  # type: ignore[arg-type]
    del msg["params"]["_meta"]
    assert not same(_wire.dumps(msg), R_MODERN)


@pytest.mark.parametrize("form", HEADER_FORMS)
def test_routing_headers(form: str) -> None:
    """Headers that agree plan; any mismatch leaves the request to the general path, which
    answers it -32020."""
    msg = modern_call("add", a=1, b=2)
    headers = RoutingHeaders.from_items(routing_items(msg, form))
    body = _wire.dumps(msg)
    agree = form in ("right", "padded", "base64", "no-version", "param")
    assert same(body, R_MODERN, headers) == agree
    if not agree:
        reply, _ = general(body, R_MODERN, headers)
        assert orjson.loads(reply)["error"]["code"] == -32020  # type: ignore[arg-type]


def test_routing_headers_of_a_batch() -> None:
    """A batch naming one request is refused whole by the general path: nothing plans."""
    body = _wire.dumps([modern_call("add", a=1, b=2), modern_call("add", a=3, b=4)])
    for items in ([("Mcp-Method", "tools/call")], [("Mcp-Name", "add")], [("Mcp-Param-X", "1")]):
        headers = RoutingHeaders.from_items(items)
        assert not same(body, R_MODERN, headers)
        reply, _ = general(body, R_MODERN, headers)
        assert orjson.loads(reply)["error"]["code"] == -32020  # type: ignore[arg-type]
    assert same(body, R_MODERN, RoutingHeaders.from_items([("MCP-Protocol-Version", "2026-07-28")]))


MODERN_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("add", {"a": 1, "b": 2}),
    ("echo", {"s": 'é"\n', "times": 2}),
    ("flag", {}),
    ("scale", {"x": 1.5}),
    ("loose", {"a": 3, "b": "list"}),
    ("loose", {"a": 2, "b": "none"}),
    ("loose", {"a": 3}),
    ("point", {"x": 1}),
    ("plain_text", {"n": 2**70}),
    ("big", {"n": 25}),
    ("boom", {"kind": "value"}),
    ("boom", {"kind": "empty"}),
    ("boom", {"kind": "mcp"}),
    ("boom", {"kind": "fine"}),
    ("lone", {"n": 1}),
    ("opt", {"a": None, "s": "v"}),
]


@pytest.mark.parametrize(("name", "args"), MODERN_CALLS)
@pytest.mark.parametrize("form", ["stdio", "right", "base64"])
def test_every_result_kind_at_2026(name: str, args: dict[str, Any], form: str) -> None:
    """Each kind of return value and exception, planned at 2026-07-28, over stdio and HTTP,
    alone and in a batch."""
    msg = modern_call(name, **args)
    headers = None if form == "stdio" else RoutingHeaders.from_items(routing_items(msg, form))
    assert same(_wire.dumps(msg), R_MODERN, headers)
    batch = [msg, modern_call("add", a=1, b=1), {**msg, "id": 2}]
    for whole in (True, False):
        assert same(_wire.dumps(batch), R_MODERN, whole=whole)


def test_completed_results() -> None:
    """At 2026-07-28 the extension's own replies carry ``resultType`` and the server's
    identity, as the dispatcher completes a result."""
    body = _wire.dumps(modern_call("echo", s="hi", times=2))
    planned, reply, _ = via_plans(body, R_MODERN)
    assert planned and reply is not None
    result = orjson.loads(reply)["result"]
    assert list(result) == ["content", "structuredContent", "isError", "resultType", "_meta"]
    assert result["_meta"] == {"io.modelcontextprotocol/serverInfo": ROUTED.server_info(R_MODERN)}
    assert same(body, R_MODERN)


def test_tools_that_stay_with_python_at_2026() -> None:
    """A tool that may run as a task, or whose arguments go in headers, plans at a legacy
    revision but not at 2026-07-28."""
    for name, args in (("maybe_task", {"n": 1}), ("tenant", {"tenant": "acme"})):
        route = ROUTED.routes[name]
        assert not route.modern
        assert same(_wire.dumps(message(1, {"name": name, "arguments": args})), R_SINGLE)
        assert not same(_wire.dumps(modern_call(name, **args)), R_MODERN)
    assert ROUTED.routes["add"].modern


# ------------------------------------------------------------------------- the API


def plan_of(body: bytes, revision: Revision = R_BATCH) -> _wire.Plans:
    plans = ROUTED.routes.plan(_wire.decode(body), shape(revision))
    assert plans is not None
    return plans


def test_version_is_the_protocol_version_meta_names() -> None:
    """``Plans.version``: the string ``_meta`` names, decoded as the general path reads it
    (escapes too), for the planned entries only; None at a legacy revision's plan without
    one."""
    for written in ('"2026-07-28"', '"2026\\u002d07-28"'):
        meta = f'{{"{META_PROTOCOL_VERSION}":{written},"{META_CLIENT_CAPABILITIES}":{{}}}}'
        body = (
            '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add",'
            f'"arguments":{{"a":1,"b":2}},"_meta":{meta}}}}}'
        ).encode()
        plans = plan_of(body, R_MODERN)
        assert plans.version(0) == "2026-07-28" == plans.meta(0)[META_PROTOCOL_VERSION]
        assert plans.version(1) is None  # no such entry
        # Written without escapes, it is the shape's own (interned) string, not one made
        # for this request; an escaped one is decoded into a string of its own.
        again = plan_of(body, R_MODERN).version(0)
        assert (again is plans.version(0)) is (written == '"2026-07-28"')
    legacy = plan_of(_wire.dumps(message(1, {"name": "add", "arguments": {"a": 1, "b": 2}})))
    assert legacy.version(0) is None


def test_outcomes() -> None:
    body = _wire.dumps(
        [
            message("a", {"name": "point", "arguments": {"x": 1, "y": 2}}),
            message(7, {"name": "boom", "arguments": {"kind": "value"}}),
            message(8, {"name": "big", "arguments": {"n": 30}}),
            message(9, {"name": "scale", "arguments": {"x": 1e308}}),
            message(10, {"name": "lone", "arguments": {"n": 1}}),
            message(11, {"name": "add", "arguments": {"a": 1, "b": 2}}),
            message(12, {"name": "scale", "arguments": {"x": 1.5}}),
        ]
    )
    plans = plan_of(body, R_SINGLE)
    assert plans.complete and len(plans) == 7
    ran = plans.run_all()
    assert isinstance(ran, list)
    point, boom, big, scale, surrogate, add, finite = ran
    assert isinstance(point, _wire.Outcome)
    assert (point.index, point.raw_id, point.failed) == (0, b'"a"', False)
    assert point.value == Point(x=1, y=2)
    assert point.tool is ROUTED._tools["point"]
    assert isinstance(boom, _wire.Outcome)
    assert boom.failed and type(boom.value) is ValueError and str(boom.value) == "bad value"
    assert (boom.index, boom.raw_id) == (1, b"7")
    assert isinstance(big, _wire.Outcome) and big.value == 10**30
    # An infinity: Python writes it (its text says Infinity); a finite float is written here.
    assert isinstance(scale, _wire.Outcome) and scale.value == math.inf
    assert isinstance(surrogate, _wire.Outcome) and surrogate.value == "\ud800"
    assert isinstance(add, bytes)
    assert finite == (
        b'{"jsonrpc":"2.0","id":12,"result":{"content":[{"type":"text","text":"3.0"}],'
        b'"structuredContent":{"result":3.0},"isError":false}}'
    )
    assert "Outcome index=0" in repr(point)


def test_base_exceptions_propagate() -> None:
    server = Server("base")

    @server.tool()
    def stop(n: int) -> int:
        raise KeyboardInterrupt

    body = _wire.dumps(message(1, {"name": "stop", "arguments": {"n": 1}}))
    for run in (lambda p: p.run(0), lambda p: p.run_all()):
        plans = server.routes.plan(_wire.decode(body), shape(R_SINGLE))
        assert plans is not None
        with pytest.raises(KeyboardInterrupt):
            run(plans)
        assert not plans.planned(0)


def test_each_entry_runs_once() -> None:
    add = message(1, {"name": "add", "arguments": {"a": 1, "b": 2}})
    other = message(2, {"name": "with_ctx", "arguments": {"n": 1}})
    plans = plan_of(_wire.dumps([add, other, add]))
    assert not plans.complete
    assert [plans.planned(i) for i in range(3)] == [True, False, True]
    with pytest.raises(ValueError, match="run_all needs every entry planned"):
        plans.run_all()
    assert isinstance(plans.run(2), bytes)
    with pytest.raises(ValueError, match="entry 2 already ran"):
        plans.run(2)
    with pytest.raises(ValueError, match="entry 1 is not planned"):
        plans.run(1)
    with pytest.raises(IndexError):
        plans.run(3)
    with pytest.raises(IndexError):
        plans.planned(3)
    assert [plans.planned(i) for i in range(3)] == [True, False, False]
    plans = plan_of(_wire.dumps([add, add]))
    assert isinstance(plans.run_all(), bytes)
    with pytest.raises(ValueError, match="already ran"):
        plans.run_all()


@pytest.mark.parametrize(
    "body",
    [
        b"{",
        b"[]",
        b"[1,2]",
        b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"add","arguments":{}}}',
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"with_ctx","arguments":{"n":1}}}',
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1}}}',
        b'[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"x"}]',
    ],
)
def test_nothing_to_plan(body: bytes) -> None:
    LOG.clear()
    assert ROUTED.routes.plan(_wire.decode(body), shape(R_BATCH)) is None
    assert LOG == []


def test_tools_changed_while_plans_run() -> None:
    """An entry runs against the tools as they are when it runs: a replaced tool plans
    again, a removed one gives None (nothing ran) for the general path to answer."""
    server = Server("changes")

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool()
    def swap() -> str:
        def add(a: int, b: int) -> int:
            return a * b

        server.add_tool(add)
        return "swapped"

    @server.tool()
    def drop() -> str:
        server.remove_tool("add")
        return "dropped"

    @server.tool()
    def other() -> str:
        server.add_tool(lambda: 1, name="unrelated")
        return "other"

    def call(name: str, i: int, **arguments: Any) -> dict[str, Any]:
        return message(i, {"name": name, "arguments": arguments})

    body = _wire.dumps(
        [
            call("add", 1, a=3, b=4),
            call("other", 2),
            call("add", 3, a=3, b=4),
            call("swap", 4),
            call("add", 5, a=3, b=4),
            call("drop", 6),
            call("add", 7, a=3, b=4),
            call("add", 8, a=1, b=1),
        ]
    )
    plans = server.routes.plan(_wire.decode(body), shape(R_BATCH))
    assert plans is not None and plans.complete
    ran = plans.run_all()
    assert isinstance(ran, list)
    texts = [orjson.loads(r)["result"]["content"][0]["text"] for r in ran[:6]]
    assert texts == ["7", "other", "7", "swapped", "12", "dropped"]
    assert ran[6:] == [None, None]
    assert not plans.planned(6) and plans.planned(7)
    assert plans.run(7) is None and not plans.planned(7)


def test_plans_are_seen_by_the_cycle_collector() -> None:
    server = Server("cycle")

    def kept(a: int) -> int:
        return a

    server.add_tool(kept)
    body = _wire.dumps(message(1, {"name": "kept", "arguments": {"a": 1}}))
    plans = server.routes.plan(_wire.decode(body), shape(R_BATCH))
    kept.plans = plans  # type: ignore[attr-defined]  # plans -> route -> kept -> plans
    ref = weakref.ref(kept)
    del kept, plans, server
    gc.collect()
    assert ref() is None


def test_shape() -> None:
    legacy = _wire.Shape(False)
    assert (legacy.structured, legacy.modern, legacy.server_info, legacy.versions) == (
        False,
        False,
        None,
        [],
    )
    info = b'{"name":"s","version":"1"}'
    modern_shape = _wire.Shape(True, info, ["2026-07-28"])
    assert modern_shape.modern and modern_shape.server_info == info
    assert modern_shape.versions == ["2026-07-28"]
    for bad in (b"", b"[1]", b"{", b'"s"', b"{} {}"):
        with pytest.raises(ValueError, match="server_info"):
            _wire.Shape(True, bad, ["2026-07-28"])
    with pytest.raises(ValueError, match="versions"):
        _wire.Shape(True, None, ["2026-07-28"])
    # A 2026-07-28 shape without versions plans nothing.
    empty = _wire.Shape(True, info)
    body = _wire.dumps(modern_call("add", a=1, b=2))
    assert ROUTED.routes.plan(_wire.decode(body), empty) is None
    headers = _wire.Headers("2026-07-28", "tools/call", "add", params={"region": "eu"})
    assert headers.routes and headers.params == {"region": "eu"} and headers.repeated == ()
    assert (headers.protocol_version, headers.method, headers.name) == (
        "2026-07-28",
        "tools/call",
        "add",
    )
    assert not _wire.Headers("2026-07-28").routes


# ------------------------------------------------------------------------- raw arguments


@pytest.mark.parametrize(
    ("params", "raw"),
    [
        (b'{"name":"p","arguments":{"x":1, "y" : 2}}', b'{"x":1, "y" : 2}'),
        (b'{"arguments" : [1] ,"name":"p","_meta":{}}', b"[1]"),
        (b'{"name":"p","arguments":null,"task":{"ttl":1}}', b"null"),
        (b'{"name":"p"}', None),
        (b'{"name":"p","arguments":{},"arguments":{}}', None),
        (b'{"n\\u0061me":"p","arguments":{}}', None),
        (b"[1]", None),
    ],
)
def test_arguments_raw(params: bytes, raw: bytes | None) -> None:
    body = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":' + params + b"}"
    assert _wire.decode(body).entries[0].arguments_raw() == raw
    other = body.replace(b"tools/call", b"prompts/get")
    assert _wire.decode(other).entries[0].arguments_raw() is None


@settings(max_examples=100, deadline=None)
@given(x=json_values, y=json_values)
def test_raw_arguments_validate_as_the_built_ones(x: Any, y: Any) -> None:
    """pydantic reads the raw bytes as it reads the dict built from them."""
    adapter = TypeAdapter(Point)
    body = _wire.dumps(message(1, {"name": "p", "arguments": {"x": x, "y": y}}))
    entry = _wire.decode(body).entries[0]
    raw = entry.arguments_raw()
    assert raw is not None

    def outcome(read: Any) -> Any:
        try:
            return read()
        except Exception as exc:
            return [e["type"] for e in exc.errors()]  # type: ignore[attr-defined]

    built = entry.params()["arguments"]
    assert outcome(lambda: adapter.validate_json(raw)) == outcome(
        lambda: adapter.validate_python(built)
    )


# ------------------------------------------------------------------------- completion

meta_values = st.one_of(
    json_values,
    st.dictionaries(
        st.sampled_from([META_SERVER_INFO, "progressToken", "a", "io.x/y"]), json_values, max_size=3
    ),
)
results = st.dictionaries(
    st.sampled_from(["content", "isError", "resultType", "structuredContent", "_meta", "x"]),
    json_values,
    max_size=5,
).flatmap(lambda r: st.builds(lambda m: {**r, "_meta": m} if "_meta" in r else r, meta_values))


@settings(max_examples=300, deadline=None)
@given(result=results, raw_id=st.sampled_from([b"1", b'"a"']))
def test_encode_result_completes_as_the_dispatcher_does(
    result: dict[str, Any], raw_id: bytes
) -> None:
    """``encode_result(raw_id, result, server_info)`` is ``Dispatcher._complete`` then
    ``encode_result``, byte for byte (resultType kept or added, ``_meta`` merged in place)."""
    info = shape(R_MODERN).server_info
    assert info is not None
    before = dict(result)
    want = _wire.encode_result(raw_id, complete(result, R_MODERN))
    assert _wire.encode_result(raw_id, result, info) == want
    assert result == before  # the result is left as it was
    assert _wire.encode_result(raw_id, result) == _wire.encode_result(raw_id, result, None)


def test_encode_result_completion_errors() -> None:
    info = b'{"name":"s"}'
    with pytest.raises(TypeError, match="must be a dict"):
        _wire.encode_result(b"1", [1], info)
    for bad in ({1: 2}, {"_meta": {1: 2}}):
        with pytest.raises(TypeError, match="keys must be str"):
            _wire.encode_result(b"1", bad, info)
    with pytest.raises(TypeError):
        _wire.encode_result(b"1", {"x": object()}, info)
    assert _wire.encode_result(b"1", {}, info) == (
        b'{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete",'
        b'"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s"}}}}'
    )
