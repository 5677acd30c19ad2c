"""A returned model whose serializer writes plain fields (``plain_dump``) is written by the
extension itself, byte for byte as pydantic's ``to_json(by_alias=True)`` writes it: the
structured content is that JSON and the text that JSON indented. Every value a field may
hold is tried (hypothesis: floats at the edges of ryu's forms, 64-bit ints, strings with
every escape, None where allowed), and values the writer leaves to the serializer (a
float that is not finite, an int past 64 bits, a value of another type set around
validation) too; the replies of a server with its fast paths on equal those of one with
them off, where pydantic serializes every result. Models whose serializer does more are
never written plainly."""

from __future__ import annotations

import asyncio
import math
from typing import Annotated, Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    RootModel,
    computed_field,
    field_serializer,
    model_serializer,
)

from jetmcp import Server, _wire
from jetmcp.core.dispatch import Dispatcher
from jetmcp.core.exchange import Exchange
from jetmcp.protocol import revisions
from jetmcp.server.schema import plain_dump


class Flat(BaseModel):
    x: float
    n: int
    s: str
    b: bool


class Aliased(BaseModel):
    model_config = ConfigDict(alias_generator=lambda name: name.upper(), populate_by_name=True)

    x: float
    y: Annotated[float, Field(ge=-1e300)] = 1.0
    label: str | None = Field(None, alias="the label")
    count: int | None = None
    on: bool = True


class Ask(BaseModel):
    """The tools' argument: a model, so that the extension validates the arguments and
    writes a returned model itself (the route of ``validates_json_alike`` models)."""

    n: int = 0


#: What the tool returns next (set by each test before its call).
NEXT: list[Any] = [None]


def build(fast: bool) -> Server:
    server = Server("plain-dump", fast_paths=fast)

    @server.tool()
    def flat(ask: Ask) -> Flat:
        return NEXT[0]  # type: ignore[no-any-return]

    @server.tool()
    async def aliased(ask: Ask) -> Aliased:
        return NEXT[0]  # type: ignore[no-any-return]

    return server


FAST = Dispatcher(build(True))
SLOW = Dispatcher(build(False))
REVISIONS = [revisions.R2025_06_18, revisions.R2025_11_25]


def _reply(dispatcher: Dispatcher, name: str, revision: revisions.Revision) -> bytes:
    body = orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": name, "arguments": {"ask": {"n": 1}}},
        }
    )

    async def run() -> Any:
        got = dispatcher.start(_wire.decode(body), Exchange(revision, None))
        if got is not None and not isinstance(got, bytes):
            got = await got
        return got

    return bytes(asyncio.run(run()))


def check(name: str, value: BaseModel) -> None:
    """The replies of both servers for ``value`` at each revision: equal, with the model's
    serializer's own bytes as the structured content and, indented, as the text."""
    dumped = type(value).__pydantic_serializer__.to_json(value, by_alias=True)
    text = type(value).__pydantic_serializer__.to_json(value, by_alias=True, indent=2)
    for revision in REVISIONS:
        NEXT[0] = value
        fast = _reply(FAST, name, revision)
        slow = _reply(SLOW, name, revision)
        assert fast == slow, (value, revision.version)
        assert b'"structuredContent":' + dumped + b"," in fast, (fast, dumped)
        assert orjson.loads(fast)["result"]["content"][0]["text"] == text.decode()


def test_plain_models_are_read_as_plain() -> None:
    assert plain_dump(Flat) == [
        ("x", "x", "float", False),
        ("n", "n", "int", False),
        ("s", "s", "str", False),
        ("b", "b", "bool", False),
    ]
    assert plain_dump(Aliased) == [
        ("x", "X", "float", False),
        ("y", "Y", "float", False),
        ("label", "the label", "str", True),
        ("count", "COUNT", "int", True),
        ("on", "ON", "bool", False),
    ]
    for name in ("flat", "aliased"):
        assert FAST.server.routes[name].validates  # the route that writes models itself


class WithFieldSerializer(BaseModel):
    x: float

    @field_serializer("x")
    def _x(self, x: float) -> float:
        return round(x)


class WithModelSerializer(BaseModel):
    x: float

    @model_serializer
    def _all(self) -> dict[str, Any]:
        return {"x": self.x}


class WithComputed(BaseModel):
    x: float

    @computed_field  # type: ignore[prop-decorator]
    @property
    def twice(self) -> float:
        return self.x * 2


class WithExtra(BaseModel):
    model_config = ConfigDict(extra="allow")
    x: float


class WithExcluded(BaseModel):
    x: float
    hidden: str = Field("h", exclude=True)


class WithAnnotatedSerializer(BaseModel):
    x: Annotated[float, PlainSerializer(lambda v: str(v))]


class WithNested(BaseModel):
    inner: Flat


class WithList(BaseModel):
    xs: list[float]


class Root(RootModel[float]):
    pass


@pytest.mark.parametrize(
    "model",
    [
        WithFieldSerializer,
        WithModelSerializer,
        WithComputed,
        WithExtra,
        WithExcluded,
        WithAnnotatedSerializer,
        WithNested,
        WithList,
        Root,
    ],
)
def test_models_whose_serializer_does_more_are_left_to_it(model: type[BaseModel]) -> None:
    assert plain_dump(model) is None


FLOATS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(
        [0.0, -0.0, 1e16, -1e16, 9999999999999998.0, 1e-7, 1e22, 5e-324, 1.7976931348623157e308]
    ),
    st.integers(-(2**53), 2**53).map(float),
)
TEXTS = st.one_of(
    st.text(),
    st.text(alphabet=st.characters(max_codepoint=0x7F)),
    st.sampled_from(['"', "\\", "\x00\x1f\x7f", "\u2028\u2029", "é\n\t\r\b\f", "💥"]),
)
INTS = st.one_of(st.integers(-(2**63), 2**63 - 1), st.sampled_from([0, -1, 2**63 - 1, -(2**63)]))


@settings(max_examples=300, deadline=None)
@given(x=FLOATS, n=INTS, s=TEXTS, b=st.booleans())
def test_flat_values_are_written_as_pydantic_writes_them(x: float, n: int, s: str, b: bool) -> None:
    check("flat", Flat(x=x, n=n, s=s, b=b))


@settings(max_examples=200, deadline=None)
@given(
    x=FLOATS,
    y=FLOATS.filter(lambda v: v >= -1e300),
    label=st.none() | TEXTS,
    count=st.none() | INTS,
    on=st.booleans(),
)
def test_aliased_values_are_written_as_pydantic_writes_them(
    x: float, y: float, label: str | None, count: int | None, on: bool
) -> None:
    value = Aliased(x=x, y=y, label=label, count=count, on=on)
    check("aliased", value)


@pytest.mark.parametrize(
    "value",
    [
        Flat(x=math.inf, n=1, s="", b=True),
        Flat(x=math.nan, n=1, s="", b=True),
        Flat(x=1.0, n=2**64, s="", b=True),
        Flat(x=1.0, n=-(2**63) - 1, s="", b=True),
        Flat.model_construct(x=3, n=1, s="", b=True),  # an int where a float is declared
        Flat.model_construct(x=1.0, n=True, s="", b=True),  # a bool where an int is
        Flat.model_construct(x=1.0, n=1, s=b"bytes", b=True),
        Flat.model_construct(x=1.0, n=1, s="", b=1),
        Flat.model_construct(x=1.0, n=1, s="\ud800", b=True),  # not UTF-8
        Flat.model_construct(x=1.0, n=1, s="", b=None),  # None where none is allowed
        Flat.model_construct(x=1.0, n=1, s=""),  # a field missing
    ],
)
def test_values_left_to_the_serializer_answer_as_it_does(value: Flat) -> None:
    NEXT[0] = value
    for revision in REVISIONS:
        assert _reply(FAST, "flat", revision) == _reply(SLOW, "flat", revision)


def test_a_subclass_is_the_serializer_s() -> None:
    class More(Flat):
        z: float = 0.0

    check("flat", More(x=1.0, n=1, s="s", b=False, z=2.0))
