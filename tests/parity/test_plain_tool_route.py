"""Calls of plain tools planned and run by the extension answer exactly as the general
path does.

Two servers hold the same tools; one has its fast paths on (calls of plain tools run by the
extension, plain arguments and primitive results taken without pydantic), the other off
(``Server(fast_paths=False)``: every call goes through the general pydantic path). Every
body, at every legacy revision, must get byte-identical replies from both, and the same side
effects in the same order. (2026-07-28 is held the same way in ``test_planned_calls.py``.)
"""

from __future__ import annotations

import datetime
import functools
import json
import string
from typing import Any, Optional

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from jetmcp import Context, Server, _wire
from jetmcp.core.dispatch import Dispatcher, Reply
from jetmcp.core.exchange import Exchange
from jetmcp.errors import McpError
from jetmcp.protocol import revisions
from jetmcp.server.elicitation import UrlElicitationRequired
from jetmcp.server.schema import _REQUIRED as REQUIRED
from jetmcp.server.schema import build_arguments

LEGACY = list(revisions.LEGACY)
LOG: list[str] = []


def build(routed: bool) -> Server:
    server = Server("route-test", fast_paths=routed)

    @server.tool()
    def add(a: int, b: int) -> int:
        LOG.append(f"add {a} {b}")
        return a + b

    @server.tool()
    def echo(s: str, times: int = 1) -> str:
        # Bounded: a generated or edited ``times`` (say 10**8) must not make a string of
        # gigabytes twice over (once per path), which the memory guard then stops.
        return s * min(times, 4)

    @server.tool()
    def flag(x: bool = True) -> bool:
        return not x

    @server.tool()
    def scale(x: float, k: float = 2.0) -> float:
        return x * k

    @server.tool()
    def loose(a: int, b: str = "b"):  # type: ignore[no-untyped-def]  # no return annotation
        return {"int": a, "str": b, "none": None, "list": [a, b]}.get(b, a if a % 2 else b)

    @server.tool()
    def info(n: int) -> dict[str, int]:
        return {"n": n}

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
        if kind == "url":
            raise UrlElicitationRequired(
                [{"mode": "url", "elicitationId": "e1", "url": "https://x.test", "message": "go"}]
            )
        return len(kind)

    @server.tool()
    def opt(a: int | None = None, s: Optional[str] = None, x: float | None = 1.5) -> str:  # noqa: UP045
        return f"{a!r}-{s!r}-{x!r}"

    @server.tool()
    def need(n: int | None, flag: bool | None = True) -> int:  # None allowed, still required
        return -1 if n is None else n + (1 if flag else 0)

    @server.tool()
    def kwonly(*, a: int, s: str = "x") -> str:  # called by keyword
        return f"{s}{a}"

    def logged(fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            LOG.append(f"wrapped {sorted(kwargs)} {len(args)}")
            return fn(*args, **kwargs)

        return wrapper

    @server.tool()
    @logged
    def wrapped(a: int, b: int = 0) -> int:  # a wrapper: called by keyword, as Python would
        return a - b

    @server.tool()
    def with_ctx(n: int, ctx: Context) -> str:  # planned for singles, run with its Context
        LOG.append(f"ctx {n} {ctx.request_id!r} {ctx.meta!r} {ctx.progress_token!r}")
        return f"{n} {ctx.protocol_version} {ctx.session_id!r} {ctx.client_id!r}"

    return server


FAST = Dispatcher(build(True))
SLOW = Dispatcher(build(False))
NAMES = [
    "opt",
    "need",
    "add",
    "echo",
    "flag",
    "scale",
    "loose",
    "info",
    "plain_text",
    "big",
    "boom",
    "kwonly",
    "wrapped",
    "with_ctx",
]


def test_plain_tools_get_routes() -> None:
    assert FAST.server.routes.names() == sorted(NAMES)
    assert FAST.server.routes["with_ctx"].context == "ctx"
    assert len(SLOW.server.routes) == 0
    assert FAST.server.routes["echo"].names == ["s", "times"]
    assert FAST.server.routes["echo"].positional
    assert not FAST.server.routes["kwonly"].positional
    assert not FAST.server.routes["wrapped"].positional


def answer(
    dispatcher: Dispatcher, body: bytes, revision: revisions.Revision
) -> tuple[Any, list[str]]:
    LOG.clear()
    reply = dispatcher.start(_wire.decode(body), Exchange(revision, None))
    assert reply is None or isinstance(reply, bytes)
    kind = (reply.kind, reply.code) if isinstance(reply, Reply) else None
    return (None if reply is None else bytes(reply), kind), list(LOG)


def planned(body: bytes, revision: revisions.Revision) -> bool:
    """Whether the extension plans every entry of ``body`` (running nothing)."""
    plans = FAST.server.routes.plan(_wire.decode(body), _wire.Shape(revision.structured_output))
    return plans is not None and plans.complete


def same(body: bytes, revision: revisions.Revision) -> bytes | None:
    fast = answer(FAST, body, revision)
    slow = answer(SLOW, body, revision)
    assert fast == slow, (body, revision.version)
    return fast[0][0]


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
arg_keys = st.sampled_from(
    ["a", "b", "s", "times", "x", "k", "n", "kind", "ctx", "flag", "zz", "_meta"]
)
arguments = st.dictionaries(
    arg_keys, json_values | st.sampled_from(["value", "mcp", "url", "empty", ""]), max_size=4
)


@st.composite
def call_params(draw: st.DrawFn) -> Any:
    params: dict[str, Any] = {"name": draw(st.sampled_from([*NAMES, "nope", 3]))}
    shape = draw(st.sampled_from(["args", "args", "args", "none", "null", "list", "extra"]))
    if shape == "args":
        params["arguments"] = draw(arguments)
    elif shape == "null":
        params["arguments"] = None
    elif shape == "list":
        params["arguments"] = [1, 2]
    elif shape == "extra":
        params["arguments"] = draw(arguments)
        params[draw(st.sampled_from(["_meta", "task", "other"]))] = {"progressToken": 1}
    return params


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    params=call_params(),
    revision=st.sampled_from(LEGACY),
    request_id=st.integers(0, 99) | st.text(string.ascii_letters, max_size=3),
)
def test_single_calls_match_the_python_path(
    params: Any, revision: revisions.Revision, request_id: Any
) -> None:
    body = _wire.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    )
    same(body, revision)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=st.lists(call_params(), min_size=1, max_size=6), revision=st.sampled_from(LEGACY))
def test_batches_match_the_python_path(calls: list[Any], revision: revisions.Revision) -> None:
    entries: list[Any] = []
    for i, params in enumerate(calls):
        entries.append({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params})
        if i % 3 == 1:
            entries.append({"jsonrpc": "2.0", "method": "notifications/progress"})
    same(_wire.dumps(entries), revision)


ADD_PARAMS = b'"params":{"name":"add","arguments":{"a":1,"b":2}}}'
R = revisions.lookup("2025-06-18")
R_BATCH = revisions.lookup("2025-03-26")
assert R is not None and R_BATCH is not None


@pytest.mark.parametrize(
    "params",
    [
        # Written by hand: key escapes, duplicates, whitespace, odd lexemes.
        b'{"name":"add","arguments":{"a":1,"b":2}}',
        b'{ "name" : "add" , "arguments" : { "b" : 2 , "a" : 1 } }',
        b'{"name":"\\u0061dd","arguments":{"\\u0061":1,"b":2}}',
        b'{"name":"add","arguments":{"a":1,"a":5,"b":2}}',
        b'{"name":"add","name":"echo","arguments":{"a":1,"b":2}}',
        b'{"name":"add","arguments":{"a":1,"b":2},"arguments":{"a":3,"b":4}}',
        b'{"name":"add","arguments":{"a":1.0,"b":2}}',
        b'{"name":"add","arguments":{"a":1e2,"b":2}}',
        b'{"name":"add","arguments":{"a":-0,"b":2}}',
        b'{"name":"add","arguments":{"a":"1","b":2}}',
        b'{"name":"add","arguments":{"a":true,"b":2}}',
        b'{"name":"add","arguments":{"a":123456789012345678901234567890,"b":2}}',
        b'{"name":"echo","arguments":{"s":"tab\\there \\"q\\" \\u00e9 \\ud83d\\ude00"}}',
        b'{"name":"echo","arguments":{"s":"\\ud800"}}',
        b'{"name":"echo","arguments":{"s":"x","times":0}}',
        b'{"name":"scale","arguments":{"x":1}}',
        b'{"name":"scale","arguments":{"x":1.5,"k":1e308}}',
        b'{"name":"scale","arguments":{"x":1.5e400}}',
        b'{"name":"flag","arguments":{}}',
        b'{"name":"flag"}',
        b'{"name":"opt","arguments":{"a":null,"s":"v","x":null}}',
        b'{"name":"opt","arguments":{"a":3,"s":null}}',
        b'{"name":"opt","arguments":{"a":"3"}}',
        b'{"name":"opt","arguments":{"x":2}}',
        b'{"name":"opt"}',
        b'{"name":"need","arguments":{"n":null}}',
        b'{"name":"need","arguments":{"n":4,"flag":null}}',
        b'{"name":"need","arguments":{}}',
        b'{"arguments":{"x":false},"name":"flag"}',
        b'{"name":"big","arguments":{"n":25}}',
        b'{"name":"boom","arguments":{"kind":"url"}}',
        b"[]",
        b'"add"',
    ],
)
@pytest.mark.parametrize("revision", [R, R_BATCH], ids=lambda r: r.version)
def test_hand_written_params(params: bytes, revision: revisions.Revision) -> None:
    body = b'{"jsonrpc":"2.0","id":"r-1","method":"tools/call","params":' + params + b"}"
    assert same(body, revision) is not None


def test_the_route_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    """A routed call never reaches the Python tool path (which is broken here on purpose);
    with another ``tools/call`` handler installed, nothing is routed."""
    from jetmcp.server.tools import Tool

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the Python path ran")

    monkeypatch.setattr(Tool, "call", broken)
    body = b'{"jsonrpc":"2.0","id":7,"method":"tools/call",' + ADD_PARAMS
    reply = FAST.start(_wire.decode(body), Exchange(R, None))
    assert isinstance(reply, bytes)
    assert orjson.loads(reply)["result"]["structuredContent"] == {"result": 3}

    server = build(True)
    calls: list[str] = []

    def custom(params: dict[str, Any], call: Any) -> dict[str, Any]:
        calls.append(params["name"])
        return {"content": [], "isError": False}

    server.handlers["tools/call"] = custom
    reply = Dispatcher(server).start(_wire.decode(body), Exchange(R, None))
    assert calls == ["add"]
    assert orjson.loads(reply)["result"] == {"content": [], "isError": False}  # type: ignore[arg-type]


def test_batch_order_of_side_effects() -> None:
    """Routed and Python-served entries of one batch run in request order."""
    entries = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 1}},
        },
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "with_ctx", "arguments": {"n": 2}},
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "boom", "arguments": {"kind": "value"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": "x"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 5, "b": 5}},
        },
    ]
    (reply, _), log = answer(FAST, orjson.dumps(entries), R_BATCH)
    assert log == ["add 1 1", "ctx 2 '2' {} None", "boom value", "add 5 5"]
    assert reply is not None
    assert [r["id"] for r in orjson.loads(reply)] == [1, 2, 3, 4, 5]


def test_base_exceptions_propagate() -> None:
    """What the Python path does not catch (not an Exception) is not caught on the route."""
    server = Server("base")

    @server.tool()
    def stop(n: int) -> int:
        raise KeyboardInterrupt

    assert "stop" in server.routes
    body = (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call",'
        + b'"params":{"name":"stop","arguments":{"n":1}}}'
    )
    with pytest.raises(KeyboardInterrupt):
        Dispatcher(server).start(_wire.decode(body), Exchange(R, None))


def test_removed_and_replaced_tools() -> None:
    server = Server("registry")

    @server.tool()
    def t(n: int) -> int:
        return n

    assert "t" in server.routes
    server.remove_tool("t")
    assert "t" not in server.routes

    async def t2(n: list[int]) -> int:
        return len(n)

    server.add_tool(t2, name="t")  # a model's arguments: validated by its validate_json
    assert server.routes["t"].validates and not server.routes["t"].python_call
    assert server.routes["t"] is server._tools["t"].route

    async def t5(n: datetime.datetime | str) -> int:
        return len(str(n))

    # A union JSON reads apart (a string may be a datetime): a route whose call Python makes.
    server.add_tool(t5, name="t")
    assert server.routes["t"].python_call and not server.routes["t"].validates
    assert server.routes["t"] is server._tools["t"].route

    def t4(n: int) -> int:
        return n

    server.add_tool(t4, name="t", task_support="required")  # task-only: no route left
    assert "t" not in server.routes

    async def t3(n: int) -> int:
        return n

    server.add_tool(t3, name="t")  # async and plain: routed (the extension starts it)
    assert server.routes["t"] is server._tools["t"].route


def test_tools_changed_by_a_tool_within_a_batch() -> None:
    """An entry sees the tools as they are when it runs, even when an earlier entry of the
    same batch removed or replaced one (the extension remembers its last lookup)."""
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

    def call(name: str, i: int, **arguments: Any) -> dict[str, Any]:
        params = {"name": name, "arguments": arguments}
        return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}

    body = _wire.dumps(
        [
            call("add", 1, a=3, b=4),
            call("swap", 2),
            call("add", 3, a=3, b=4),
            call("drop", 4),
            call("add", 5, a=3, b=4),
        ]
    )
    reply = Dispatcher(server).start(_wire.decode(body), Exchange(R_BATCH, None))
    assert isinstance(reply, bytes)
    out = orjson.loads(reply)
    assert out[0]["result"]["content"][0]["text"] == "7"
    assert out[2]["result"]["content"][0]["text"] == "12"
    assert out[4]["error"]["message"] == "Unknown tool: add"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=st.lists(call_params(), min_size=1, max_size=5), revision=st.sampled_from(LEGACY))
def test_whole_batches_planned_or_untouched(calls: list[Any], revision: revisions.Revision) -> None:
    """Planning a batch runs nothing; a batch planned whole answers exactly as the general
    path does."""
    entries = [
        {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}
        for i, params in enumerate(calls)
    ]
    body = _wire.dumps(entries)
    LOG.clear()
    plans = FAST.server.routes.plan(_wire.decode(body), _wire.Shape(revision.structured_output))
    assert LOG == []
    if plans is None or not plans.complete or not revision.batching:
        return
    done = plans.run_all()
    if isinstance(done, bytes):
        log = list(LOG)
        assert ((done, None), log) == answer(SLOW, body, revision)


def test_whole_batch_planning_needs_every_entry() -> None:
    add = {"name": "add", "arguments": {"a": 1, "b": 2}}
    routable = [{"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": add} for i in (1, 2)]
    shape = _wire.Shape(R_BATCH.structured_output)
    plans = FAST.server.routes.plan(_wire.decode(_wire.dumps(routable)), shape)
    assert plans is not None and plans.complete
    note = {"jsonrpc": "2.0", "method": "notifications/progress"}
    LOG.clear()
    plans = FAST.server.routes.plan(_wire.decode(_wire.dumps([*routable, note])), shape)
    assert plans is not None and not plans.complete
    assert [plans.planned(i) for i in range(3)] == [True, True, False]
    assert LOG == []


def test_routes_do_not_keep_tools_alive() -> None:
    """A route refers to its tool and the tool to its route: the cycle collector must see
    through the extension's objects, or every removed or replaced tool would leak."""
    import gc
    import weakref

    server = Server("leaks")

    def gone(a: int) -> int:
        return a

    ref = weakref.ref(gone)
    server.add_tool(gone)
    del gone
    server.remove_tool("gone")
    gc.collect()
    assert ref() is None

    other = Server("whole")

    def kept(a: int) -> int:
        return a

    ref = weakref.ref(kept)
    other.add_tool(kept)
    del kept, other
    gc.collect()
    assert ref() is None


# --------------------------------------------------------------------------- the argument reader
# The extension reads `params` and `arguments` with a reader of its own (no grammar checks: the
# frame scanner validated the body). Bodies written lexeme by lexeme, with whitespace anywhere,
# escapes in keys and values, brackets and quotes inside strings, numbers in every form,
# repeated and extra members, and then byte-level edits, must be answered byte for byte as the
# Python path answers them.

WS = st.sampled_from(["", "", "", " ", "\n", "\t", " \r\n\t "])
#: String contents that trip a reader: quotes, backslashes and brackets first (hypothesis
#: draws early items most).
STRING_TEXT = st.lists(
    st.sampled_from(
        ['"', "\\", "}", "]", "a", "{", "[", ",", ":", "/", " ", "\u00e9", "\U0001f600"]
    )
    | st.sampled_from(["\x00", "\x1f", "\n", "\t", "\u20ac"]),
    max_size=6,
).map("".join)
SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b"}


@st.composite
def string_lexeme(draw: st.DrawFn, text: st.SearchStrategy[str] | None = None) -> str:
    """``text`` as a JSON string: mostly written plainly, else with characters escaped."""
    value = draw(text if text is not None else STRING_TEXT)
    mode = draw(st.integers(0, 9))  # 0-7: plain, 8: some characters escaped, 9: all
    if mode == 8:
        escape = draw(st.lists(st.booleans(), min_size=len(value), max_size=len(value)))
    else:
        escape = [mode == 9] * len(value)
    out = ['"']
    for ch, esc in zip(value, escape, strict=True):
        if ch in SHORT_ESCAPES and (esc or ch in '"\\' or ord(ch) < 0x20):
            out.append(SHORT_ESCAPES[ch])
        elif ord(ch) < 0x20 or esc:
            code = ord(ch)
            if code > 0xFFFF:
                code -= 0x10000
                out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04X}")
            elif ch == "/" and draw(st.booleans()):
                out.append("\\/")
            else:
                out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


ODD_NUMBERS = ["0", "-0", "1", "-1", "2", "25", "1.0", "1.5", "-2.5e-3", "1e2", "1E+2", "0.0"]
HUGE_NUMBERS = ["1e400", "-1e400", "9007199254740993", "123456789012345678901234567890"]
NUMBER_LEXEMES = st.sampled_from([*ODD_NUMBERS, *HUGE_NUMBERS]) | st.integers(-(2**64), 2**64).map(
    str
)


@st.composite
def _value_lexeme(draw: st.DrawFn, depth: int) -> str:
    kind = draw(st.sampled_from(["num", "str", "lit", "arr", "obj"] if depth < 3 else ["num"]))
    if kind == "num":
        return draw(NUMBER_LEXEMES)
    if kind == "str":
        return draw(string_lexeme())
    if kind == "lit":
        return draw(st.sampled_from(["true", "false", "null"]))
    items = draw(st.lists(_VALUE_LEXEMES[depth + 1], max_size=3))
    if kind == "arr":
        return "[" + ",".join(draw(WS) + v + draw(WS) for v in items) + "]"
    keys = draw(st.lists(string_lexeme(), min_size=len(items), max_size=len(items)))
    members = (
        draw(WS) + k + draw(WS) + ":" + draw(WS) + v for k, v in zip(keys, items, strict=True)
    )
    return "{" + ",".join(members) + draw(WS) + "}"


#: One strategy per depth, made once: a strategy made anew at every draw is validated anew
#: by hypothesis each time (a CI run of the test command once saw pytest pass 4 GiB inside
#: that validation, under ``call_lexeme``).
_VALUE_LEXEMES = [_value_lexeme(depth) for depth in range(4)]


def value_lexeme(depth: int = 0) -> st.SearchStrategy[str]:
    """Any JSON value, written in any spelling, nested at most ``3 - depth`` deep."""
    return _VALUE_LEXEMES[depth]


INT_LEXEMES = st.sampled_from(["0", "-0", "7", "-12", "9007199254740993", "1" + "0" * 30]) | (
    st.integers(-(2**64), 2**64).map(str)
)
FLOAT_LEXEMES = st.sampled_from(["0.0", "-0.0", "1.5", "1e2", "1E+2", "-2.5e-3", "1e400"]) | (
    st.floats(allow_nan=False, allow_infinity=False).map(repr)
)
KIND_LEXEMES = {
    int: INT_LEXEMES,
    float: FLOAT_LEXEMES,
    bool: st.sampled_from(["true", "false"]),
    str: string_lexeme(),
}


@st.composite
def typed_lexeme(draw: st.DrawFn, kind: type | None = None) -> str:
    """A value for a parameter of ``kind``, in any spelling; now and then of another type."""
    # (hypothesis leans to the smallest draw: 0 stands for the common case throughout)
    if kind is not None and draw(st.integers(0, 5)) < 5:
        return draw(KIND_LEXEMES[kind])
    return draw(st.one_of(*KIND_LEXEMES.values(), st.just("null"), value_lexeme()))


@st.composite
def object_lexeme(draw: st.DrawFn, members: list[tuple[str, str]]) -> tuple[str, list[str]]:
    """An object of ``members`` (key, value lexeme), and its key lexemes as written."""
    keys = [draw(string_lexeme(st.just(key))) for key, _ in members]
    parts = [
        draw(WS) + k + draw(WS) + ":" + draw(WS) + v
        for k, (_, v) in zip(keys, members, strict=True)
    ]
    return "{" + ",".join(parts) + draw(WS) + "}", keys


def built(lexeme: str) -> Any:
    """A value lexeme as the extension's builder makes it (the one ``Entry.params()`` uses)."""
    body = '{"jsonrpc":"2.0","method":"m","params":[' + lexeme + "]}"
    return _wire.decode(body.encode()).entries[0].params()[0]


def reads_itself(
    name: str, params_keys: list[str], arguments: list[tuple[str, str]] | None
) -> bool:
    """Whether the extension must answer a call itself, by the rules ``plan.rs`` states:
    ``params`` holds exactly ``name`` (a string naming a routed tool) and ``arguments``, and
    at most a ``_meta`` object (written ``{}`` here), keys and name written without escapes,
    none repeated; each argument that names a parameter appears once with
    a value of exactly the parameter's type (or null where None is allowed; an integer that a
    double holds, rounded, for a float); every required
    one is there. Other arguments are ignored, unless their key has escapes."""
    keys = sorted(map(json.loads, params_keys)) if not any("\\" in k for k in params_keys) else []
    if keys not in (["arguments", "name"], ["_meta", "arguments", "name"]):
        return False
    if not name.startswith('"') or "\\" in name or arguments is None:
        return False
    tool = FAST.server.tools.get(json.loads(name))
    if tool is None or tool.route is None:
        return False
    plain = {p[0]: p for p in tool.arguments.plain or ()}
    seen: set[str] = set()
    for key_lexeme, value in arguments:
        if "\\" in key_lexeme:
            return False
        key = json.loads(key_lexeme)
        if key not in plain:
            continue
        if key in seen:
            return False
        seen.add(key)
        _, kind, _, nullable = plain[key]
        v = built(value)
        if type(v) is int and kind is float:
            # Read as float(v), as pydantic reads it; past the doubles, refused.
            try:
                float(v)
            except OverflowError:
                return False
        elif not (type(v) is kind or (nullable and v is None)):
            return False
    return all(n in seen or d is not REQUIRED for n, _, d, _ in plain.values())


#: Argument keys no routed tool has: ignored by both paths, whatever their value.
OTHER_KEYS = st.sampled_from(["zz", "_meta", "other", "a b", ""])
OTHER_MEMBERS = st.lists(st.tuples(OTHER_KEYS, value_lexeme()), max_size=2)


@st.composite
def call_lexeme(draw: st.DrawFn, request_id: int) -> tuple[bytes, bool]:
    """One ``tools/call`` request, written lexeme by lexeme, and whether the extension must
    answer it itself."""
    tool_name = draw(st.sampled_from([*NAMES, "nope", "ad", "add "]))
    tool = FAST.server.tools.get(tool_name)
    plain = tool.arguments.plain if tool is not None else None
    # Mostly the tool's own parameters (in any order, some left out, some repeated), then
    # other keys with values of any kind.
    arg_members: list[tuple[str, str]] = []
    for param, kind, _, _ in plain or ():
        for _ in range({8: 0, 9: 2}.get(draw(st.integers(0, 9)), 1)):
            arg_members.append((param, draw(typed_lexeme(kind))))
    arg_members += draw(OTHER_MEMBERS)
    if draw(st.integers(0, 3)) == 3:
        arg_members += draw(st.lists(st.tuples(arg_keys, typed_lexeme()), max_size=2))
    arg_members = draw(st.permutations(arg_members))
    arguments, arg_keys_written = draw(object_lexeme(arg_members))
    if draw(st.integers(0, 5)) < 5:
        name = draw(string_lexeme(st.just(tool_name)))
    else:
        name = draw(st.sampled_from(["3", "null", '["add"]']))
    members = [("name", name), ("arguments", arguments)]
    if draw(st.integers(0, 5)) == 5:
        members.append((draw(st.sampled_from(["_meta", "task", "name", "arguments", "x"])), "{}"))
    if draw(st.integers(0, 7)) == 7:
        members = [m for m in members if m[0] != "arguments"]
    members = draw(st.permutations(members))
    params, params_keys = draw(object_lexeme(members))
    ws = draw(WS)
    body = (
        f'{{"jsonrpc":"2.0",{ws}"id":{request_id},"method":{ws}"tools/call",'
        f'"params":{ws}{params}{ws}}}'
    ).encode()
    args = [(k, v) for k, (_, v) in zip(arg_keys_written, arg_members, strict=True)]
    kept = any(member == "arguments" for member, _ in members)
    # A tool that takes a Context is planned for a single message by Routes.answer only
    # (run with the Context the dispatcher makes), never by Routes.plan.
    takes_context = tool is not None and tool.context_param is not None
    return body, reads_itself(name, params_keys, args if kept else None) and not takes_context


def edit(body: bytes, edits: list[tuple[float, bytes, int]]) -> bytes:
    """Replace ``n`` bytes at each relative position by the given bytes."""
    out = bytearray(body)
    for where, new, n in edits:
        at = int(where * len(out))
        out[at : at + n] = new
    return bytes(out)


EDITS = st.lists(
    st.tuples(
        st.floats(0, 1),
        st.sampled_from([b"", b",", b"}", b"]", b'"', b"\\", b":", b" ", b"{", b"["])
        | st.binary(max_size=3),
        st.integers(0, 2),
    ),
    max_size=3,
)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(call=call_lexeme(7), edits=EDITS, revision=st.sampled_from(LEGACY))
def test_written_calls_match_the_python_path(
    call: tuple[bytes, bool], edits: list[tuple[float, bytes, int]], revision: revisions.Revision
) -> None:
    body, routed = call
    if not edits:
        # The reader neither gives up on a call it can take nor takes one it must not.
        LOG.clear()
        assert planned(body, revision) == routed, body
    same(edit(body, edits), revision)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    calls=st.lists(st.integers(0, 5), min_size=1, max_size=4).flatmap(
        lambda ids: st.tuples(*(call_lexeme(i) for i in ids))
    ),
    edits=EDITS,
    revision=st.sampled_from(LEGACY),
)
def test_written_batches_match_the_python_path(
    calls: tuple[tuple[bytes, bool], ...],
    edits: list[tuple[float, bytes, int]],
    revision: revisions.Revision,
) -> None:
    body = b"[" + b",".join(c[0] for c in calls) + b"]"
    same(edit(body, edits) if edits else body, revision)


@pytest.mark.parametrize(
    ("params", "routed"),
    [
        # Odd spellings the reader takes itself.
        (b' {\n"name"\t:\r"add" ,"arguments" : {  "b" :2 ,\n"a":\t1 } } ', True),
        (b'{"arguments":{"a":1,"b":2},"name":"add"}', True),
        (b'{"name":"echo","arguments":{"s":"]}\\"\\\\[{,:","times":2}}', True),
        (b'{"name":"echo","arguments":{"zz":{"k":["]}","\\"",{"}":"{"}]},"s":"q"}}', True),
        (b'{"name":"echo","arguments":{"s":"\\u00e9\\ud83d\\ude00\\/\\n"}}', True),
        (b'{"name":"add","arguments":{"a":-0,"b":123456789012345678901234567890}}', True),
        (b'{"name":"scale","arguments":{"x":1E+2,"k":-2.5e-3}}', True),
        (b'{"name":"opt","arguments":{"a":null,"s":null,"x":null}}', True),
        # What it leaves to Python, having run nothing: a key or a name with escapes, a
        # repeated argument, another member beside name and arguments.
        (b'{"name":"flag","arguments":{"\\u0061":1,"x":false}}', False),
        (b'{"name":"\\u0061dd","arguments":{"a":1,"b":2}}', False),
        (b'{"name":"add","arguments":{"a":1,"a":1,"b":2}}', False),
        (b'{"name":"add","arguments":{"a":1,"b":2},"_meta":{}}', True),
        (b'{"name":"add","arguments":{"a":1,"b":2},"task":{}}', False),
    ],
)
def test_odd_spellings(params: bytes, routed: bool) -> None:
    body = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":' + params + b"}"
    LOG.clear()
    assert planned(body, R) == routed
    assert LOG == []
    assert answer(FAST, body, R) == answer(SLOW, body, R)


def test_a_context_tool_is_planned_by_answer_and_run_with_its_context() -> None:
    body = (
        b'{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":'
        b'{"name":"with_ctx","arguments":{"n":4},"_meta":{"progressToken":"t"}}}'
    )
    routes = FAST.server.routes
    shape = _wire.Shape(R.structured_output)
    frame = _wire.decode(body)
    assert routes.plan(frame, shape) is None  # not in arrays, nor by plan()
    LOG.clear()
    plans = routes.answer(frame, shape)
    assert isinstance(plans, _wire.Plans) and LOG == []  # planned, nothing ran
    assert plans.planned(0) and plans.meta(0) == {"progressToken": "t"}
    route = plans.route(0)
    assert route is not None and route.context == "ctx"
    with pytest.raises(ValueError, match="takes a context"):
        plans.run(0)
    assert plans.planned(0) is False  # taken, even though it could not run
    # What a running tool's context reads of its _meta stays: built only when asked.
    assert plans.meta(0) == {"progressToken": "t"} and plans.log_level(0) is None
    assert plans.meta(1) is None and plans.log_level(1) is None  # no such entry


def test_a_context_keyword_cannot_be_a_parameter() -> None:
    def f(n: int) -> int:
        return n

    with pytest.raises(ValueError, match="context keyword"):
        _wire.ToolRoute(None, f, [("n", int, None, False)], object(), [int], True, context="n")


def _plain(x: float, n: int, s: str = "s", b: bool | None = None, y: float | None = 1.0) -> None:
    """Plain parameters of every kind, for the Python twin of the extension's argument rule."""


_PLAIN_ARGUMENTS = build_arguments(_plain, "plain")
_ANY_SCALAR = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.sampled_from([10**400, -(10**400), 2**53 + 1])
    | st.floats(allow_nan=False)
    | st.text(max_size=3)
)


@settings(max_examples=300, deadline=None)
@given(
    args=st.fixed_dictionaries(
        {},
        optional={name: _ANY_SCALAR for name in ("x", "n", "s", "b", "y", "other")},
    )
)
def test_plain_twin_reads_arguments_as_the_model(args: dict[str, Any]) -> None:
    """``Arguments.validate``'s fast twin (exact types, an integer for a float read as
    ``float(n)``) gives what the model gives, value and type, or leaves the call to it."""
    assert _PLAIN_ARGUMENTS.plain is not None

    def read(fast: bool) -> Any:
        try:
            values = _PLAIN_ARGUMENTS.validate(args, fast=fast)
        except ValidationError:
            return "refused"
        return {k: (type(v), v) for k, v in values.items()}

    assert read(True) == read(False)
