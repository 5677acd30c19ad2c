"""Tools returning a ``dict``, a ``list`` or None, answered by the extension, answer exactly
as the general path does.

A route with ``data_out`` writes a return value of exactly ``dict``, ``list`` or None holding
plain JSON data itself: the content blocks as ``content_blocks`` makes them (a dict's text
being pydantic's compact ``to_json`` of it indented as ``indent=2`` indents it; a list's
blocks those of its items), and as the structured content a dict's JSON (no declared output:
``to_jsonable``) or the declared output's dump of what its validator makes of the value (of
``{"result": value}`` for a wrapped output). The general path (``Server(fast_paths=False)``)
writes the texts with ``to_json(indent=2)`` and the structured content with
``to_jsonable``/``dump_python`` through the encoder. Every body, single or batched, at
every revision, must get byte-identical replies from both, with the same side effects in
the same order.
"""

from __future__ import annotations

import datetime
import json
import math
from decimal import Decimal
from typing import Annotated, Any, Literal, NotRequired, TypedDict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field

from jetmcp import Server, _wire
from jetmcp.core.dispatch import Dispatcher
from jetmcp.protocol import revisions
from jetmcp.server.tools import Tool
from parity.test_model_tool_route import (
    REVISIONS,
    batch_revision,
    body_of,
    call_members,
    call_text,
    headers_for,
    serve,
)

LOG: list[str] = []
#: Each ``str()`` of an ``Opaque``: counted, not ordered among the calls, because in a batch
#: the extension runs the calls it can before Python shapes what it hands back (so a
#: shaping step of the user's code may come after a later entry's call).
WRITES: list[str] = []


class Aliased(BaseModel):
    model_config = ConfigDict(serialize_by_alias=False)
    a: int = Field(alias="A")


class Opaque:
    """An object only ``str()`` writes (``fallback=str``); each writing is a side effect."""

    def __str__(self) -> str:
        WRITES.append("str")
        return "opaque\n\u2028"


class Report(TypedDict):
    name: str
    count: int
    scores: NotRequired[list[float]]
    note: NotRequired[str | None]
    level: NotRequired[Literal["low", "high", 3]]


#: Values a tool adds to the dict it returns (by index): kinds pydantic writes its own way,
#: values JSON has no words for, keys that are no strings, and what no serializer takes.
EXTRAS: list[dict[Any, Any]] = [
    {},
    {"when": datetime.datetime(2026, 7, 28, 12, 0, tzinfo=datetime.UTC)},
    {"amount": Decimal("1.10"), "raw": b"bytes", "pair": (1, 2.5), "set": {3}},
    {"model": Aliased(A=1)},
    {"opaque": Opaque()},
    {"inf": math.inf},
    {"nan": [math.nan]},
    {"big": 2**80, "neg": -(2**63)},
    {1: "int key", None: "none key", 2.5: "float key"},
    {"lone": "\ud800"},
    {"huge": 10**5000},
    {"float": 1e16, "small": 2.5e-7, "whole": 3.0},
    {"n": "not an int"},
    {"nested": {"deep": [{"x": [None, True, 'é"\\\u0000']}]}},
]

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)


def _made(data: str, extra: int) -> dict[Any, Any]:
    """The JSON object ``data`` with ``EXTRAS[extra]`` added (the tools take plain
    parameters, which the extension reads itself)."""
    value: dict[Any, Any] = json.loads(data)
    value.update(EXTRAS[extra % len(EXTRAS)])
    return value


def _listed(data: str, extra: int) -> list[Any]:
    """A list of every kind of item: the dict ``_made`` makes, its values, None, a nested
    list of scalars."""
    value = _made(data, extra)
    return [value, *value.values(), None, [1, "x", [True, 2.5, {}]]]


def build(fast: bool) -> Server:
    server = Server("data-result", fast_paths=fast)

    @server.tool()
    def untyped(data: str, extra: int = 0):  # type: ignore[no-untyped-def]
        LOG.append("untyped")
        return _made(data, extra)

    @server.tool()
    def bare(data: str, extra: int = 0) -> dict:  # type: ignore[type-arg]
        LOG.append("bare")
        return _made(data, extra)

    @server.tool()
    def anything(data: str, extra: int = 0) -> dict[str, Any]:
        LOG.append("anything")
        return _made(data, extra)

    @server.tool()
    def counts(data: str, extra: int = 0) -> dict[str, int]:
        LOG.append("counts")
        return _made(data, extra)

    @server.tool()
    async def later(data: str, extra: int = 0) -> dict[str, Any]:
        LOG.append("later")
        return _made(data, extra)

    @server.tool()
    def mixed(data: str, extra: int = 0) -> dict[str, list[float] | str | None]:
        LOG.append("mixed")
        return _made(data, extra)

    @server.tool()
    def report(data: str, extra: int = 0) -> Report:
        LOG.append("report")
        return _made(data, extra)  # type: ignore[return-value]

    @server.tool(structured_output=False)
    def plain(data: str, extra: int = 0) -> dict[str, Any]:
        LOG.append("plain")
        return _made(data, extra)

    @server.tool()
    def notes(n: int) -> dict[str, Annotated[int, Field(ge=0)]]:
        """Annotated metadata in the declared output: shaped by Python."""
        LOG.append("notes")
        return {"n": n}

    @server.tool()
    def either(n: int) -> int | dict[str, int]:
        """A wrapped output (a union): checked as ``{"result": value}``."""
        LOG.append("either")
        return {"n": n} if n else 0

    @server.tool()
    def items(data: str, extra: int = 0):  # type: ignore[no-untyped-def]
        LOG.append("items")
        return _listed(data, extra)

    @server.tool()
    async def anylist(data: str, extra: int = 0) -> list[Any]:
        LOG.append("anylist")
        return _listed(data, extra)

    @server.tool()
    def ints(data: str, extra: int = 0) -> list[int]:
        """Refused by its output when a string in the list is no int: Python says so."""
        LOG.append("ints")
        kept = [v for v in _made(data, extra).values() if type(v) in (int, str)]
        return kept if extra else [1, 2]

    @server.tool()
    def nothing(n: int) -> None:
        LOG.append("nothing")

    @server.tool()
    def maybe(n: int) -> dict[str, int] | None:
        LOG.append("maybe")
        return {"n": n} if n > 0 else None

    @server.tool()
    def silent(n: int):  # type: ignore[no-untyped-def]
        LOG.append("silent")
        return None if n else []

    @server.tool()
    def texts(n: int) -> list[str]:
        LOG.append("texts")
        return ["a", "é\n\u2028", "\ud800"][: n + 1] if n >= 0 else []

    return server


FAST = Dispatcher(build(True))
SLOW = Dispatcher(build(False))
ROUTED = [
    "untyped",
    "bare",
    "anything",
    "counts",
    "later",
    "mixed",
    "report",
    "plain",
    "either",
    "items",
    "anylist",
    "ints",
    "nothing",
    "maybe",
    "silent",
    "texts",
]
#: Tools whose calls take an ``n`` (the rest take ``data`` and ``extra``).
COUNTED = {"notes", "either", "nothing", "maybe", "silent", "texts"}
NAMES = [*ROUTED, "notes"]


def same(body: bytes, revision: revisions.Revision, headers: Any = None) -> bytes | None:
    WRITES.clear()
    fast = serve(FAST, body, revision, headers, LOG)
    fast_writes = len(WRITES)
    WRITES.clear()
    slow = serve(SLOW, body, revision, headers, LOG)
    assert fast == slow, (body, revision.version)
    assert fast_writes == len(WRITES), (body, revision.version)
    reply: bytes | None = fast[0][0]
    return reply


def test_data_results_are_routed_where_their_output_is_plain_data() -> None:
    routes = FAST.server.routes
    tools = FAST.server._tools
    for name in ROUTED:
        assert tools[name].data_out is not None, name
        assert routes[name] is tools[name].route
    assert tools["notes"].data_out is None
    assert len(SLOW.server.routes) == 0


@st.composite
def call_body(draw: st.DrawFn, request_id: int, revision: revisions.Revision) -> tuple[str, str]:
    name = draw(st.sampled_from(NAMES))
    if name in COUNTED:
        arguments: dict[str, Any] = {"n": draw(st.integers(-1, 2))}
    else:
        data = draw(st.dictionaries(st.text(max_size=4), JSON_VALUES, max_size=4))
        if name == "report" and draw(st.booleans()):
            data = {"name": "r", "count": draw(st.integers(-2, 2)), **data}
        text = json.dumps(data, ensure_ascii=draw(st.booleans()))
        arguments = {"data": text, "extra": draw(st.integers(0, len(EXTRAS) - 1))}
    members = call_members(name, _wire.dumps(arguments).decode(), revision)
    return name, call_text(request_id, members)


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), revision=st.sampled_from(REVISIONS))
def test_single_calls_match_the_general_path(
    data: st.DataObject, revision: revisions.Revision
) -> None:
    name, body = data.draw(call_body(7, revision))
    same(body.encode(), revision, headers_for(name) if revision.modern else None)


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), revision=st.sampled_from(REVISIONS))
def test_batches_match_the_general_path(data: st.DataObject, revision: revisions.Revision) -> None:
    revision = batch_revision(revision)
    calls = [data.draw(call_body(i, revision))[1] for i in range(data.draw(st.integers(1, 5)))]
    same(("[" + ",".join(calls) + "]").encode(), revision)


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
@pytest.mark.parametrize("revision", [revisions.R2025_03_26, revisions.R2025_06_18])
def test_the_extension_answers_data_itself(
    revision: revisions.Revision, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each kind of value, each kind of tool: written by the extension where it can, shaped
    by Python (``Tool.shape``) where a step raises or the text has no JSON for a value; the
    reply is the general path's either way."""
    shaped: list[str] = []
    general = Tool.shape

    def counted(tool: Tool, value: Any, rev: revisions.Revision) -> dict[str, Any]:
        shaped.append(tool.name)
        return general(tool, value, rev)

    monkeypatch.setattr(Tool, "shape", counted)
    extra = {repr(k): i for i, e in enumerate(EXTRAS) for k in e}
    cases: list[tuple[str, dict[str, Any], bool]] = [
        ("untyped", {"data": {"a": 1}}, True),
        # No plain JSON data: Python's (its writing may run the user's code).
        ("untyped", {"data": {}, "extra": extra["'when'"]}, False),
        ("untyped", {"data": {}, "extra": extra["'amount'"]}, False),
        ("untyped", {"data": {}, "extra": extra["'model'"]}, False),
        ("untyped", {"data": {}, "extra": extra["'opaque'"]}, False),
        ("untyped", {"data": {}, "extra": extra["1"]}, False),  # keys no strings
        (
            "untyped",
            {"data": {"deep": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}},
            False,
        ),
        (
            "untyped",
            {"data": {"deep": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}},
            True,
        ),
        # Plain data the text has no JSON for, or that cannot be written: Python's.
        ("untyped", {"data": {}, "extra": extra["'inf'"]}, False),
        ("untyped", {"data": {}, "extra": extra["'nan'"]}, False),
        ("untyped", {"data": {}, "extra": extra["'lone'"]}, False),
        ("untyped", {"data": {}, "extra": extra["'huge'"]}, False),  # past 64 bits
        ("untyped", {"data": {}, "extra": extra["'big'"]}, False),
        ("untyped", {"data": {"n": -(2**63), "m": 2**63 - 1}}, True),
        ("untyped", {"data": {}, "extra": extra["'float'"]}, True),
        ("untyped", {"data": {}, "extra": extra["'nested'"]}, True),
        ("bare", {"data": {"a": 1.5}}, True),
        ("counts", {"data": {"a": 1, "b": True}}, True),
        # Refused by the declared output (where the revision has structured content, which
        # is when it is checked): Python says so.
        ("counts", {"data": {"a": "x"}}, not revision.structured_output),
        ("report", {"data": {"name": "n", "count": 2, "scores": [1]}}, True),
        ("report", {"data": {"name": "n"}}, not revision.structured_output),  # a key missing
        ("plain", {"data": {"a": [1, 2.5]}}, True),
        ("notes", {"n": 1}, False),
        # Lists, None, wrapped outputs.
        ("either", {"n": 1}, True),
        ("either", {"n": 0}, False),  # an int the route does not write: Python shapes it
        ("items", {"data": {"a": 1, "b": [2.5, None]}}, True),
        ("items", {"data": {}, "extra": extra["'when'"]}, False),
        ("items", {"data": {}, "extra": extra["'nan'"]}, False),
        ("ints", {"data": {"a": 1}}, True),
        ("ints", {"data": {"a": 1, "b": "2"}, "extra": 1}, True),  # "2" read as 2
        ("ints", {"data": {"a": 1, "b": "x"}, "extra": 1}, not revision.structured_output),
        ("nothing", {"n": 1}, True),
        ("maybe", {"n": 1}, True),
        ("maybe", {"n": 0}, True),
        ("silent", {"n": 0}, True),
        ("silent", {"n": 1}, True),
        ("texts", {"n": 1}, True),
        ("texts", {"n": 2}, False),  # a lone surrogate
    ]
    for name, arguments, written in cases:
        if "data" in arguments:
            arguments = {**arguments, "data": json.dumps(arguments["data"])}
        shaped.clear()
        reply = same(body_of(name, arguments, revision), revision)
        assert reply is not None, (name, arguments)
        # The general path shapes each call once; the fast one only what it hands back.
        assert shaped.count(name) == (1 if written else 2), (name, arguments, shaped)
