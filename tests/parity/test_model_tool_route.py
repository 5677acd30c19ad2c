"""Calls of tools whose parameters are pydantic models, run by the extension, answer exactly
as the general path does.

Such a tool's route reads the ``arguments`` bytes with the argument model's
``validate_json`` (``ToolRoute(validate=...)``) when the model reads JSON as it reads the
objects built from it (``validates_json_alike``), calls the function, and writes a value of
exactly the declared return model itself: one ``to_json`` of it, that JSON as
``structuredContent`` and, indented as pydantic indents it, as the text. The general path
serializes twice (``to_json(indent=2)``, and ``to_python`` through the encoder). Two
servers hold the same tools, one with its fast paths on, one with them off
(``Server(fast_paths=False)``: every call through ``validate_python`` on the built objects
and ``Tool.shape``). Every body, single or batched, at every revision (2026-07-28 with its
``_meta`` and routing headers), must get byte-identical replies from both, with the same
side effects in the same order.
"""

from __future__ import annotations

import asyncio
import datetime
import enum
import math
import uuid
from decimal import Decimal
from typing import Annotated, Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from harness.messages import modern_meta
from jetmcp import Context, Server, _wire
from jetmcp.core.dispatch import Dispatcher, Reply
from jetmcp.core.exchange import Exchange
from jetmcp.errors import McpError
from jetmcp.protocol import revisions
from jetmcp.protocol.modern import RoutingHeaders
from jetmcp.server.schema import validates_json_alike
from parity.test_plain_tool_route import EDITS, WS, edit, string_lexeme, value_lexeme

REVISIONS = [*revisions.LEGACY, revisions.R2026_07_28]
LOG: list[str] = []


class Point(BaseModel):
    x: float
    y: float


class Point3(Point):
    z: float = 0.0


class Box(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    corners: list[Point]
    label: str = "box"
    flags: dict[str, bool] = {}
    kind: str = Field("plain", alias="Kind")
    size: Annotated[int, Field(ge=0, le=100)] = 1
    note: str | None = None


class Shown(BaseModel):
    """A return model whose dump and text go through its own serializer code."""

    value: float
    extra: Any = None

    @field_serializer("value")
    def _rounded(self, value: float) -> float:
        return round(value, 1)


class Checked(BaseModel):
    n: int

    @field_validator("n")
    @classmethod
    def _small(cls, n: int) -> int:
        LOG.append(f"checked {n}")
        if n > 5:
            raise ValueError("too big")
        return n


class Seed(BaseModel):
    n: int
    f: float
    s: str
    floats: list[float] = []
    ints: list[int] = []
    texts: dict[str, str] = {}
    flags: list[bool | None] = []


class Rich(BaseModel):
    """A return model of many kinds of field, written by pydantic's own serializers."""

    data: Any
    when: datetime.datetime
    amount: Decimal
    raw: bytes
    ident: uuid.UUID
    tags: frozenset[str]
    pair: tuple[int, float]
    nested: dict[int, list[Point]]
    empty: dict[str, list[int]] = {}
    label: str = Field("r", alias="richLabel")


class Constants(BaseModel):
    """Writes the infinities and NaN as JSON has no words for (``Infinity``, ``NaN``)."""

    model_config = ConfigDict(ser_json_inf_nan="constants")
    v: float
    w: list[float] = []


class Unit(enum.StrEnum):
    c = "c"
    f = "f"
    one = "1"


class Level(enum.IntEnum):
    low = 1
    high = 2


class Mixed(enum.Enum):
    a = "a"
    two = 2


class Pick(BaseModel):
    """Fields pydantic reads from strings or checks against values: alike in both modes."""

    unit: Unit = Unit.c
    level: Level | None = None
    mixed: Mixed = Mixed.a
    mode: Literal["a", "1", 2, True] = "a"
    day: datetime.date | None = None
    at: datetime.datetime | None = None
    clock: datetime.time | None = None
    ident: uuid.UUID | None = None
    either: int | str = 0
    loose: float | bool | Literal["x"] | None = None
    many: list[Unit | int] = []


class _Opaque:
    def __str__(self) -> str:
        return "opaque"


def build(fast: bool) -> Server:
    server = Server("model-route", fast_paths=fast)

    @server.tool()
    async def scale(point: Point, factor: float) -> Point:
        LOG.append(f"scale {point.x} {factor}")
        return Point(x=point.x * factor, y=point.y * factor)

    @server.tool()
    def shift(point: Point, by: float = 1.0) -> Point:
        LOG.append(f"shift {point.x}")
        return Point(x=point.x + by, y=point.y)

    @server.tool()
    def total(items: list[float], weights: dict[str, int] | None = None) -> float:
        LOG.append(f"total {len(items)}")
        return sum(items) + sum((weights or {}).values())

    @server.tool()
    async def boxed(box: Box, grow: Annotated[int, Field(ge=0)] = 0) -> Box:
        LOG.append(f"boxed {len(box.corners)} {box.kind}")
        await asyncio.sleep(0) if box.label == "wait" else None
        return box.model_copy(update={"size": min(box.size + grow, 100)})

    @server.tool()
    def other(point: Point) -> Point:
        """Returns what the point asks for: the model, a subclass, a dict, or raises."""
        LOG.append(f"other {point.x}")
        if point.x == 1:
            return Point3(x=1, y=point.y, z=3)
        if point.x == 2:
            return {"x": "2", "y": point.y}  # type: ignore[return-value]
        if point.x == 3:
            raise ValueError("three")
        if point.x == 4:
            raise McpError(-32042, "four", {"x": 4})
        if point.x == 5:
            return Point.model_construct(x="five", y=point.y)
        if point.x == 6:
            return Point(x=math.inf, y=math.nan)
        return point

    @server.tool(structured_output=False)
    def unstructured(point: Point) -> Point:
        return point

    @server.tool()
    def shown(point: Point) -> Shown:
        LOG.append("shown")
        extra = _Opaque() if point.y == 7 else {"y": point.y, "s": 'é\n"\u2028'}
        return Shown(value=point.x / 3, extra=extra)

    @server.tool()
    def rich(seed: Seed) -> Rich:
        LOG.append(f"rich {seed.n}")
        return Rich(
            data={
                "floats": seed.floats,
                "ints": seed.ints,
                "texts": seed.texts,
                "flags": seed.flags,
                "deep": [[seed.texts, []], {"": {}}, None],
            },
            when=datetime.datetime(2026, 7, 28, tzinfo=datetime.UTC)
            + datetime.timedelta(seconds=seed.n),
            amount=Decimal(seed.n) / 7,
            raw=seed.s.encode(),
            ident=uuid.UUID(int=abs(seed.n)),
            tags=frozenset({seed.s, "t"}),
            pair=(seed.n, seed.f),
            nested={seed.n: [Point(x=seed.f, y=-seed.f)], 0: []},
            richLabel=seed.s,
        )

    @server.tool()
    def constants(point: Point) -> Constants:
        LOG.append("constants")
        return Constants(v=point.x * 1e308 * 10, w=[point.y] if point.y >= 0 else [math.nan])

    @server.tool()
    async def noted(point: Point, ctx: Context) -> Point:
        """Takes a Context: the extension validates and calls it with the one made for it."""
        LOG.append(f"noted {ctx.request_id} {point.x}")
        await ctx.info("noted")  # no log level set: filtered out
        if point.x == 3:
            raise ValueError("three")
        return point

    @server.tool()
    def pick(
        unit: Unit,
        when: datetime.date,
        choice: Literal["a", "b", 1] = "a",
        level: Level = Level.low,
        ident: uuid.UUID | None = None,
        either: int | str = 0,
        extra: Pick | None = None,
    ) -> str:
        """Plain-looking parameters that are no plain type: enums, a date, a literal, a
        union; the extension validates them with the argument model's validate_json."""
        seen = [unit, when, choice, level, ident, either, extra]
        LOG.append("pick " + " ".join(f"{type(v).__name__}:{v!r}" for v in seen))
        return f"{unit.value} {when.isoformat()} {choice!r} {level.value} {either!r}"

    @server.tool()
    def checked(c: Checked) -> int:  # a model with a validator: Python reads the arguments
        return c.n

    return server


FAST = Dispatcher(build(True))
SLOW = Dispatcher(build(False))
ROUTED = [
    "scale",
    "shift",
    "total",
    "boxed",
    "other",
    "unstructured",
    "shown",
    "rich",
    "constants",
    "noted",
    "pick",
]
NAMES = [*ROUTED, "checked"]


def test_routes_validate_where_json_reads_alike() -> None:
    routes = FAST.server.routes
    for name in ROUTED:
        assert routes[name].validates and not routes[name].python_call, name
    assert routes["checked"].python_call and not routes["checked"].validates
    # Each model argument read by its own model, the plain ones by the extension, where
    # every parameter is one or the other (a constrained one takes the whole model).
    tools = FAST.server._tools
    for name in ("scale", "shift", "rich", "noted", "other", "shown", "constants"):
        assert tools[name].arguments.mixed is not None, name
    for name in ("total", "boxed", "pick"):
        assert tools[name].arguments.mixed is None, name
    assert len(SLOW.server.routes) == 0
    assert validates_json_alike(Box)
    assert not validates_json_alike(Checked)

    class Strict(BaseModel):
        model_config = ConfigDict(strict=True)
        n: int

    class StrictField(BaseModel):
        when: datetime.date = Field(strict=True)

    class DateOrText(BaseModel):
        v: datetime.datetime | str  # JSON's strict pass takes a string as a datetime

    class ModelOrDict(BaseModel):
        v: Point | dict[str, float]  # JSON's strict pass takes an object as a model

    class Span(BaseModel):
        v: datetime.timedelta  # JSON reads no bool as a timedelta

    class Flags(BaseModel):
        v: enum.IntFlag

    class LiteralMember(BaseModel):
        v: Literal[Unit.c]

    class Lenient(enum.StrEnum):
        a = "a"

        @classmethod
        def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
            return handler(source)

    class OwnSchema(BaseModel):
        v: Lenient

    for model in (
        Strict,
        StrictField,
        DateOrText,
        ModelOrDict,
        Span,
        Flags,
        LiteralMember,
        OwnSchema,
    ):
        assert not validates_json_alike(model), model
    assert validates_json_alike(Pick)


def headers_for(name: str) -> RoutingHeaders:
    return RoutingHeaders.from_items(
        [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", name)]
    )


def serve(
    dispatcher: Dispatcher,
    body: bytes,
    revision: revisions.Revision,
    headers: Any,
    log: list[str] = LOG,
) -> tuple[Any, list[str]]:
    """``body``'s reply through ``dispatcher`` (with its kind and code when it is a
    ``Reply``), and what the tools wrote to ``log`` meanwhile."""
    log.clear()

    async def run() -> Any:
        got = dispatcher.start(_wire.decode(body), Exchange(revision, None, headers=headers))
        if got is not None and not isinstance(got, bytes):
            got = await got
        return got

    reply = asyncio.run(run())
    kind = (reply.kind, reply.code) if isinstance(reply, Reply) else None
    return (None if reply is None else bytes(reply), kind), list(log)


def same(body: bytes, revision: revisions.Revision, headers: Any = None) -> bytes | None:
    fast = serve(FAST, body, revision, headers)
    slow = serve(SLOW, body, revision, headers)
    assert fast == slow, (body, revision.version)
    reply: bytes | None = fast[0][0]
    return reply


def _meta_lexeme(revision: revisions.Revision) -> str | None:
    if not revision.modern:
        return None
    return _wire.dumps(modern_meta()).decode()


#: Argument values per field, mostly of the field's type, now and then anything else.
POINT = st.fixed_dictionaries(
    {"x": st.integers(-2, 8) | st.floats(allow_nan=False), "y": st.integers(-3, 8)},
    optional={"z": st.integers()},
)
#: JSON values a union, a literal or a parsed type may read (or refuse) apart if any reads so.
ODD = st.sampled_from(
    [0, 1, -1, 1.0, 1.5, 1e20, True, False, None, "", "0", "1", "1.0", "x", "true", [], {}, [1]]
)
DATES = st.sampled_from(
    [
        "2026-07-28",
        "2026-02-30",
        "2026-07-28T00:00:00",
        "2026-07-28T12:00:00Z",
        "2026-07-28T12:00",
        0,
        1785196800,
        1785196800.5,
        "1785196800",
    ]
) | st.dates().map(str)


def mostly(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Values of ``valid``, and one time in eight an ``ODD`` one."""
    return st.integers(0, 7).flatmap(lambda i: ODD if i == 0 else valid)


ARGUMENTS: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "scale": st.fixed_dictionaries({"point": POINT, "factor": st.floats(-4, 4) | st.just("2")}),
    "shift": st.fixed_dictionaries({"point": POINT}, optional={"by": st.integers(-2, 2)}),
    "total": st.fixed_dictionaries(
        {"items": st.lists(st.integers(-5, 5) | st.floats(-1, 1), max_size=4)},
        optional={"weights": st.dictionaries(st.text(max_size=2), st.integers(0, 3), max_size=2)},
    ),
    "boxed": st.fixed_dictionaries(
        {
            "box": st.fixed_dictionaries(
                {"corners": st.lists(POINT, max_size=3)},
                optional={
                    "label": st.sampled_from(["b", "wait", ""]),
                    "flags": st.dictionaries(st.text(max_size=2), st.booleans(), max_size=2),
                    "Kind": st.sampled_from(["k", "long"]),
                    "kind": st.just("by name"),
                    "size": st.integers(-1, 101),
                    "note": st.none() | st.text(max_size=3),
                },
            )
        },
        optional={"grow": st.integers(-1, 3)},
    ),
    "other": st.fixed_dictionaries({"point": POINT}),
    "unstructured": st.fixed_dictionaries({"point": POINT}),
    "shown": st.fixed_dictionaries({"point": POINT}),
    "checked": st.fixed_dictionaries({"c": st.fixed_dictionaries({"n": st.integers(0, 8)})}),
    "rich": st.fixed_dictionaries(
        {
            "seed": st.fixed_dictionaries(
                {
                    "n": st.integers(-(10**6), 10**6),
                    "f": st.floats(allow_nan=False, allow_infinity=False),
                    "s": st.text(max_size=6),
                },
                optional={
                    "floats": st.lists(st.floats(allow_nan=False, allow_infinity=False)),
                    "ints": st.lists(st.integers(), max_size=3),
                    "texts": st.dictionaries(st.text(max_size=4), st.text(max_size=8)),
                    "flags": st.lists(st.none() | st.booleans(), max_size=3),
                },
            )
        }
    ),
    "constants": st.fixed_dictionaries({"point": POINT}),
    "noted": st.fixed_dictionaries({"point": POINT}),
    "pick": st.fixed_dictionaries(
        {"unit": mostly(st.sampled_from(["c", "f", "1"])), "when": mostly(DATES)},
        optional={
            "choice": mostly(st.sampled_from(["a", "b", 1, "1", 1.0, True])),
            "level": mostly(st.sampled_from([1, 2, "1", "low", 3, 2.0, True])),
            "ident": mostly(st.none() | st.uuids().map(str) | st.uuids().map(lambda u: u.hex)),
            "either": mostly(st.integers() | st.text(max_size=3)),
            "extra": st.none()
            | st.fixed_dictionaries(
                {},
                optional={
                    "unit": mostly(st.sampled_from(["c", "f", "1"])),
                    "level": mostly(st.none() | st.sampled_from([1, 2, "2"])),
                    "mixed": mostly(st.sampled_from(["a", 2, "2", "two"])),
                    "mode": mostly(st.sampled_from(["a", "1", 1, 2, "2", True, 1.0, "true"])),
                    "day": mostly(DATES),
                    "at": mostly(DATES),
                    "clock": mostly(st.sampled_from(["12:00", "12:00:01.5", "25:00", 3600])),
                    "ident": mostly(st.uuids().map(str)),
                    "either": mostly(st.integers() | st.text(max_size=3)),
                    "loose": mostly(st.sampled_from([1, 1.5, True, "x", None, "1", "y"])),
                    "many": st.lists(mostly(st.sampled_from(["c", "f", 1, "1"])), max_size=3),
                },
            ),
        },
    ),
}


@st.composite
def arguments_lexeme(draw: st.DrawFn, name: str) -> str:
    """``name``'s arguments as JSON, mostly well typed, sometimes with a member of any kind
    (or a repeated one) written in any spelling."""
    value = draw(ARGUMENTS.get(name, st.just({})))
    text = _wire.dumps(value).decode()
    if draw(st.integers(0, 4)) == 4 and text != "{}":
        key = draw(string_lexeme(st.sampled_from([*value, "zz"])))
        text = "{" + key + ":" + draw(value_lexeme()) + "," + draw(WS) + text[1:]
    return text


@st.composite
def call_body(draw: st.DrawFn, request_id: int, revision: revisions.Revision) -> tuple[str, str]:
    name = draw(st.sampled_from([*NAMES, "nope"]))
    members = call_members(name, draw(arguments_lexeme(name)), revision)
    return name, call_text(request_id, draw(st.permutations(members)))


def call_members(name: str, arguments: str, revision: revisions.Revision) -> list[str]:
    """The members of a ``tools/call``'s params: the name, the ``arguments`` lexeme, and at
    2026-07-28 the ``_meta`` the revision needs."""
    members = [f'"name":"{name}"', f'"arguments":{arguments}']
    meta = _meta_lexeme(revision)
    if meta is not None:
        members.append(f'"_meta":{meta}')
    return members


def call_text(request_id: int, members: list[str]) -> str:
    """A ``tools/call`` request whose params have ``members``, in that order."""
    params = "{" + ",".join(members) + "}"
    return f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call","params":{params}}}'


def batch_revision(revision: revisions.Revision) -> revisions.Revision:
    """The revision to send a batch at: ``revision`` when it takes batches, else
    2025-03-26."""
    if revision.batching or revision.batch_extension:
        return revision
    return revisions.R2025_03_26


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), revision=st.sampled_from(REVISIONS), edits=EDITS)
def test_single_calls_match_the_general_path(
    data: st.DataObject, revision: revisions.Revision, edits: list[tuple[float, bytes, int]]
) -> None:
    name, body = data.draw(call_body(7, revision))
    headers = headers_for(name) if revision.modern else None
    raw = body.encode()
    same(raw if data.draw(st.integers(0, 5)) < 5 else edit(raw, edits), revision, headers)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), revision=st.sampled_from(REVISIONS))
def test_batches_match_the_general_path(data: st.DataObject, revision: revisions.Revision) -> None:
    revision = batch_revision(revision)
    calls = [data.draw(call_body(i, revision))[1] for i in range(data.draw(st.integers(1, 5)))]
    same(("[" + ",".join(calls) + "]").encode(), revision)


def body_of(name: str, arguments: dict[str, Any], revision: revisions.Revision) -> bytes:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if revision.modern:
        params["_meta"] = modern_meta()
    return _wire.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
@pytest.mark.parametrize("revision", [revisions.R2025_06_18, revisions.R2026_07_28])
def test_the_extension_answers_a_model_call_itself(revision: revisions.Revision) -> None:
    """A valid call of a routed tool is answered by the extension (counted as fast), its
    reply that of the general path; refused arguments and values it does not write are the
    general path's, and a tool with validators of its own stays Python's."""
    headers = headers_for("shift") if revision.modern else None
    cases: list[tuple[str, dict[str, Any], bool]] = [
        ("shift", {"point": {"x": 1, "y": 2}}, True),
        ("shift", {"point": {"x": "1.5", "y": 2}, "by": 2}, True),  # lax, in both modes
        ("shift", {"point": {"x": 1}}, False),  # refused: the general path says why
        ("shift", {"point": '{"x": 1, "y": 2}'}, False),  # a JSON string: parsed on retry
        ("other", {"point": {"x": 1, "y": 2}}, True),  # a subclass: shaped by Python
        ("other", {"point": {"x": 5, "y": 2}}, True),  # a dump that warns: Python's
        ("shown", {"point": {"x": 1, "y": 7}}, True),  # an object only str() writes
        ("checked", {"c": {"n": 1}}, False),
        ("rich", {"seed": {"n": 3, "f": 1e300, "s": 'é"\n', "floats": [1e16, -2.5e-7]}}, True),
        ("noted", {"point": {"x": 1, "y": 2}}, True),
        ("noted", {"point": {"x": 1}}, False),  # refused: the general path says why
        ("constants", {"point": {"x": 0, "y": 1}}, True),
        ("constants", {"point": {"x": 1, "y": 1}}, True),  # Infinity: shaped by Python
        ("constants", {"point": {"x": 0, "y": -1}}, True),  # NaN: shaped by Python
        ("pick", {"unit": "f", "when": "2026-07-28", "choice": 1, "level": 2}, True),
        ("pick", {"unit": "f", "when": "2026-07-28", "extra": {"at": 0, "many": ["c", 2]}}, True),
        ("pick", {"unit": "k", "when": "2026-07-28"}, False),  # refused: not a Unit
    ]
    for name, arguments, by_extension in cases:
        before = FAST.fast
        h = headers_for(name) if revision.modern else headers
        reply = same(body_of(name, arguments, revision), revision, h)
        assert reply is not None
        assert (FAST.fast > before) == by_extension, (name, arguments)


def test_a_refused_entry_hands_the_rest_of_a_batch_to_the_general_path() -> None:
    """The side effects keep request order: a refused entry (which the general path may
    still run, after parsing a JSON-encoded argument) and those after it are served the
    general way."""
    revision = revisions.R2025_03_26
    entries = [
        {"name": "shift", "arguments": {"point": {"x": 1, "y": 1}}},
        {"name": "shift", "arguments": {"point": '{"x": 2, "y": 2}'}},
        {"name": "shift", "arguments": {"point": {"x": 3, "y": 3}}},
    ]
    body = _wire.dumps(
        [
            {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": p}
            for i, p in enumerate(entries)
        ]
    )
    same(body, revision)
    assert LOG == ["shift 1.0", "shift 2.0", "shift 3.0"]


def test_a_route_checks_what_it_is_given() -> None:
    tool = FAST.server._tools["shift"]
    validate = tool.arguments.model.__pydantic_validator__.validate_json
    with pytest.raises(ValueError, match="fields"):
        _wire.ToolRoute(tool, tool.fn, [], object(), [], True, fields=["point"])
    with pytest.raises(ValueError, match="python_call"):
        _wire.ToolRoute(tool, tool.fn, [], object(), [], True, python_call=True, validate=validate)
