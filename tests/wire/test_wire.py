"""Tests of the Rust wire core, ``jetmcp._wire``: framing, id lexemes, and encoding."""

from __future__ import annotations

import collections
import enum
import json
import math
import sys
from typing import Any

import orjson
import pydantic_core
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jetmcp import _wire as w

FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def single(body: bytes | str) -> w.Entry:
    if isinstance(body, str):
        body = body.encode()
    frame = w.decode(body)
    assert frame.kind == w.FRAME_SINGLE, frame.error
    assert frame.error is None
    assert len(frame.entries) == 1
    return frame.entries[0]


def request(id_lexeme: str, method: str = '"m"', extra: str = "") -> str:
    return f'{{"jsonrpc":"2.0","id":{id_lexeme},"method":{method}{extra}}}'


# --- constants ----------------------------------------------------------------------------


def test_constants_are_distinct_ints() -> None:
    groups = [
        ["FRAME_SINGLE", "FRAME_BATCH", "FRAME_PARSE_ERROR", "FRAME_EMPTY_BATCH"],
        ["REQUEST", "NOTIFICATION", "RESPONSE", "INVALID"],
        ["ID_ABSENT", "ID_NULL", "ID_STRING", "ID_INT", "ID_UNSAFE_NUMBER", "ID_OTHER"],
    ]
    groups[0].append("FRAME_BATCH_TOO_LARGE")
    for names in groups:
        values = [getattr(w, n) for n in names]
        assert all(type(v) is int for v in values)
        assert len(set(values)) == len(values)
    assert w.DEFAULT_MAX_DEPTH == 100
    assert w.DEFAULT_MAX_BATCH == 256


# --- ids ----------------------------------------------------------------------------------

ID_CASES = [
    # (lexeme, class, kind)
    ('"abc"', w.ID_STRING, w.REQUEST),
    ('""', w.ID_STRING, w.REQUEST),
    ('"x\\u00e9y"', w.ID_STRING, w.REQUEST),
    ('"x\\u00E9y"', w.ID_STRING, w.REQUEST),
    ('"a\\"b\\\\c\\/d\\n"', w.ID_STRING, w.REQUEST),
    ('"\\ud83d\\ude00"', w.ID_STRING, w.REQUEST),
    ('"é😀"', w.ID_STRING, w.REQUEST),
    ("0", w.ID_INT, w.REQUEST),
    ("-0", w.ID_INT, w.REQUEST),
    ("7", w.ID_INT, w.REQUEST),
    ("9007199254740991", w.ID_INT, w.REQUEST),
    ("-9007199254740991", w.ID_INT, w.REQUEST),
    ("9007199254740992", w.ID_UNSAFE_NUMBER, w.INVALID),
    ("-9007199254740992", w.ID_UNSAFE_NUMBER, w.INVALID),
    ("9" * 300, w.ID_UNSAFE_NUMBER, w.INVALID),
    ("1.5", w.ID_UNSAFE_NUMBER, w.INVALID),
    ("1.0", w.ID_UNSAFE_NUMBER, w.INVALID),
    ("1e3", w.ID_UNSAFE_NUMBER, w.INVALID),
    ("1E2", w.ID_UNSAFE_NUMBER, w.INVALID),
    ("1e400", w.ID_UNSAFE_NUMBER, w.INVALID),
    ("-0.0", w.ID_UNSAFE_NUMBER, w.INVALID),
    ("null", w.ID_NULL, w.INVALID),
    ("true", w.ID_OTHER, w.INVALID),
    ("false", w.ID_OTHER, w.INVALID),
    ("{}", w.ID_OTHER, w.INVALID),
    ("[]", w.ID_OTHER, w.INVALID),
    ('{"a":[1]}', w.ID_OTHER, w.INVALID),
]


@pytest.mark.parametrize(("lexeme", "id_class", "kind"), ID_CASES)
def test_request_ids(lexeme: str, id_class: int, kind: int) -> None:
    e = single(request(lexeme))
    assert e.id_class == id_class
    assert e.kind == kind
    assert e.method == "m"
    if kind == w.REQUEST:
        assert e.raw_id == lexeme.encode()
        assert e.reason is None
        reply = w.encode_result(e.raw_id, None)
        assert lexeme.encode() in reply
        assert json.loads(reply)["id"] == json.loads(lexeme)
    else:
        assert e.raw_id is None
        assert e.reason is not None and "id" in e.reason
        reply = w.encode_error(e.raw_id, -32600, e.reason)
        assert json.loads(reply)["id"] is None


def test_escaped_string_id_is_kept_as_written() -> None:
    e = single(request('"x\\u00e9y"'))
    assert e.raw_id == b'"x\\u00e9y"'
    assert len(e.raw_id) == 10


@pytest.mark.parametrize(
    ("body", "initialize"),
    [
        (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}', True),
        (b'{"jsonrpc":"2.0","id":1,"method":"\\u0069nitialize"}', True),
        (b'{"jsonrpc":"2.0","method":"initialize"}', False),  # a notification
        (b'{"jsonrpc":"2.0","id":1,"method":"initialized"}', False),
        (b'[{"jsonrpc":"2.0","id":1,"method":"initialize"}]', False),
        (b'{"jsonrpc":"2.0","id":1,"method":7}', False),
        (b'{"jsonrpc":"2.0","id":1,"result":{}}', False),
        (b"{", False),
    ],
)
def test_frame_initialize_matches_its_entry(body: bytes, initialize: bool) -> None:
    frame = w.decode(body)
    assert frame.initialize is initialize
    entries = frame.entries
    assert initialize == (
        frame.kind == w.FRAME_SINGLE
        and entries[0].kind == w.REQUEST
        and entries[0].method == "initialize"
    )


def test_notification() -> None:
    e = single('{"jsonrpc":"2.0","method":"notifications/initialized"}')
    assert e.kind == w.NOTIFICATION
    assert e.id_class == w.ID_ABSENT
    assert e.raw_id is None
    assert e.has_params is False
    assert e.params() is None
    assert e.reason is None


def test_whitespace_and_escapes() -> None:
    body = (
        ' \r\n\t{ "json\\u0072pc" : "2\\u002e0" ,\n "\\u0069d" :\t42 , "method" : '
        '"tools\\/call" , "params" : { "a" : [ 1 , 2 ] } } \n'
    )
    e = single(body)
    assert e.kind == w.REQUEST
    assert e.raw_id == b"42"
    assert e.method == "tools/call"
    assert e.params() == {"a": [1, 2]}
    assert e.raw().startswith(b"{") and e.raw().endswith(b"}")
    assert json.loads(e.raw()) == json.loads(body)


@pytest.mark.parametrize("member", ["jsonrpc", "id", "method", "params", "result", "error"])
def test_duplicate_members(member: str) -> None:
    body = (
        '{"jsonrpc":"2.0","id":1,"method":"m","params":{},"result":1,"error":{},'
        f'"{member}":null}}'
    )
    e = single(body)
    assert e.kind == w.INVALID
    assert e.raw_id is None
    assert e.reason == f'duplicate member "{member}"'


def test_unknown_keys_are_ignored_even_repeated() -> None:
    e = single('{"jsonrpc":"2.0","x":1,"x":[2],"id":"a","method":"m","_meta":{}}')
    assert e.kind == w.REQUEST


INVALID_CASES = [
    # (body, raw_id, word in reason)
    ('{"id":1,"method":"m"}', b"1", "jsonrpc"),
    ('{"jsonrpc":"1.0","id":1,"method":"m"}', b"1", "2.0"),
    ('{"jsonrpc":2.0,"id":"a","method":"m"}', b'"a"', "2.0"),
    ('{"jsonrpc":"2.0","id":1,"method":7}', b"1", "method"),
    ('{"jsonrpc":"2.0","id":1,"method":"m","params":5}', b"1", "params"),
    ('{"jsonrpc":"2.0","id":1,"method":"m","params":null}', b"1", "params"),
    ('{"jsonrpc":"2.0","id":1,"method":"m","params":"s"}', b"1", "params"),
    ('{"jsonrpc":"2.0","id":1}', b"1", "method"),
    ("{}", None, "jsonrpc"),
    ('{"jsonrpc":"2.0","id":1,"result":1,"error":{}}', b"1", "both"),
    ('{"jsonrpc":"2.0","result":1}', None, "id"),
    ('{"jsonrpc":"2.0","id":null,"result":1}', None, "id"),
    ('{"jsonrpc":"2.0","id":null,"method":"m"}', None, "id"),
    ('{"jsonrpc":"2.0","id":2.5,"method":"m"}', None, "id"),
]


@pytest.mark.parametrize(("body", "raw_id", "word"), INVALID_CASES)
def test_invalid_entries(body: str, raw_id: bytes | None, word: str) -> None:
    e = single(body)
    assert e.kind == w.INVALID
    assert e.raw_id == raw_id
    assert e.reason is not None and word in e.reason


@pytest.mark.parametrize("body", ["1", '"req"', "null", "true", "-5.5"])
def test_non_object_single(body: str) -> None:
    e = single(body)
    assert e.kind == w.INVALID
    assert e.reason == "request must be a JSON object"
    assert e.raw_id is None
    assert e.id_class == w.ID_ABSENT
    assert e.raw() == body.encode()


def test_responses() -> None:
    e = single('{"jsonrpc":"2.0","id":"r","result":{"ok":[true]}}')
    assert e.kind == w.RESPONSE
    assert e.is_error is False
    assert e.result() == {"ok": [True]}
    assert e.raw_id == b'"r"'
    e = single('{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}')
    assert e.kind == w.RESPONSE
    assert e.is_error is True
    assert e.raw_id is None
    assert e.id_class == w.ID_NULL
    assert e.result() == {"code": -32700, "message": "x"}
    e = single('{"jsonrpc":"2.0","id":"r","method":"m"}')
    assert e.result() is None


def test_params_values() -> None:
    body = (
        '{"jsonrpc":"2.0","id":1,"method":"m","params":{"big":123456789012345678901234567890,'
        '"f":1.5,"inf":1e400,"s":"\\u00e9\\ud83d\\ude00","n":null,"l":[true,false,-0]}}'
    )
    p = single(body).params()
    assert p == {
        "big": 123456789012345678901234567890,
        "f": 1.5,
        "inf": math.inf,
        "s": "é😀",
        "n": None,
        "l": [True, False, 0],
    }
    assert single(request("1", extra=',"params":[1,"a"]')).params() == [1, "a"]


# --- frames -------------------------------------------------------------------------------

PARSE_ERRORS = [
    b"",
    b"   \n",
    b"{",
    b"[",
    b'{"jsonrpc":"2.0",}',
    b"[1,]",
    b"{} {}",
    b"{}x",
    b"nul",
    b"NaN",
    b"Infinity",
    b"01",
    b"1.",
    b".5",
    b"+1",
    b"{'a':1}",
    b'{"a" 1}',
    b'"\\x"',
    b'"\\ud800"',
    b'"a\x01b"',
    b"\xef\xbb\xbf{}",
    b"\xff\xfe",
    b'{"a":"\xc3"}',
    b"\xed\xa0\x80",
]


@pytest.mark.parametrize("body", PARSE_ERRORS)
def test_parse_errors(body: bytes) -> None:
    f = w.decode(body)
    assert f.kind == w.FRAME_PARSE_ERROR
    assert f.entries == []
    assert isinstance(f.error, str) and f.error


def test_parse_error_message() -> None:
    f = w.decode(b'{"jsonrpc":"2.0","method":"ab')
    assert f.error is not None
    assert f.error.startswith("invalid JSON at byte ")
    assert "EOF while parsing a string" in f.error
    assert "UTF-8" in (w.decode(b"\xff").error or "")


def test_truncation_at_every_offset() -> None:
    body = (
        b'[{"jsonrpc":"2.0","id":"a\\"b","method":"tools/call","params":{"x":[1.5e3,null,true]}},'
        b'{"jsonrpc":"2.0","id":-0,"result":{"t":"\xc3\xa9"}}]'
    )
    assert w.decode(body).kind == w.FRAME_BATCH
    for cut in range(len(body)):
        f = w.decode(body[:cut])
        assert f.kind == w.FRAME_PARSE_ERROR, cut
        assert f.error


def test_batches() -> None:
    one = request("1")
    assert w.decode(b"[]").kind == w.FRAME_EMPTY_BATCH
    assert w.decode(b" [ ] ").entries == []
    f = w.decode(f"[{one}, 5, {one}]".encode())
    assert f.kind == w.FRAME_BATCH
    assert [e.kind for e in f.entries] == [w.REQUEST, w.INVALID, w.REQUEST]
    body = ("[" + ",".join([one] * 256) + "]").encode()
    assert len(w.decode(body).entries) == 256
    body = ("[" + ",".join([one] * 257) + "]").encode()
    f = w.decode(body)
    assert f.kind == w.FRAME_BATCH_TOO_LARGE
    assert f.entries == []
    assert f.error is not None and "256" in f.error
    f = w.decode(("[" + ",".join([one] * 4) + "]").encode(), max_batch=3)
    assert f.kind == w.FRAME_BATCH_TOO_LARGE
    assert f.error is not None and "3" in f.error
    assert w.decode(("[" + ",".join([one] * 3) + "]").encode(), max_batch=3).kind == w.FRAME_BATCH


def test_depth_limit() -> None:
    def nest(levels: int) -> bytes:
        return request("1", extra=',"params":' + "[" * levels + "]" * levels).encode()

    assert w.decode(nest(99)).kind == w.FRAME_SINGLE  # object + 99 arrays = 100 levels
    f = w.decode(nest(100))
    assert f.kind == w.FRAME_PARSE_ERROR
    assert f.error == "nesting depth exceeds 100"
    assert w.decode(nest(10), max_depth=11).kind == w.FRAME_SINGLE
    assert w.decode(nest(10), max_depth=10).kind == w.FRAME_PARSE_ERROR
    assert w.decode(b"[" * 1_000_000).kind == w.FRAME_PARSE_ERROR
    assert w.decode(b'{"a":' * 200_000).error == "nesting depth exceeds 100"
    deep = single(nest(99)).params()
    for _ in range(98):
        deep = deep[0]
    assert deep == []


def test_large_body_is_decoded() -> None:
    # Large enough to be scanned with the GIL released.
    big = "x" * 100_000
    e = single(request('"big"', extra=f',"params":{{"s":"{big}"}}'))
    assert e.params() == {"s": big}


def test_entry_keeps_body_alive() -> None:
    body = bytes(request('"keep"', extra=',"params":{"a":1}'), "ascii")
    e = w.decode(body).entries[0]
    del body
    assert e.raw_id == b'"keep"'
    assert e.params() == {"a": 1}


def test_decode_rejects_non_bytes() -> None:
    with pytest.raises(TypeError):
        w.decode("{}")  # type: ignore[arg-type]


# --- encoding -----------------------------------------------------------------------------


def test_envelopes() -> None:
    assert w.encode_result(b'"a"', {"x": 1}) == b'{"jsonrpc":"2.0","id":"a","result":{"x":1}}'
    assert w.encode_result(b"-0", None) == b'{"jsonrpc":"2.0","id":-0,"result":null}'
    assert (
        w.encode_error(None, -32700, "Parse error")
        == b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}'
    )
    assert (
        w.encode_error(b"3", -32602, 'bad "x"', None)
        == b'{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad \\"x\\"","data":null}}'
    )
    assert (
        w.encode_error(b"3", 1, "m", data={"k": [1]})
        == b'{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"m","data":{"k":[1]}}}'
    )
    assert (
        w.encode_request(b"1", "tools/call", {"name": "add"})
        == b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add"}}'
    )
    assert w.encode_request(b'"p"', "ping") == b'{"jsonrpc":"2.0","id":"p","method":"ping"}'
    assert (
        w.encode_notification("notifications/progress", {"p": 0.5})
        == b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"p":0.5}}'
    )
    assert w.encode_notification("x") == b'{"jsonrpc":"2.0","method":"x"}'
    assert w.encode_notification("x", None) == b'{"jsonrpc":"2.0","method":"x","params":null}'


def test_encode_batch() -> None:
    assert w.encode_batch([b"{}", b"1"]) == b"[{},1]"
    assert w.encode_batch([b"{}"]) == b"[{}]"
    assert w.encode_batch([]) == b"[]"
    assert w.encode_batch((b"1", b"2")) == b"[1,2]"  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        w.encode_batch([b"{}", "x"])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        w.encode_batch(b"[]")  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [b"", b"x", b"{}", b"1,2", b'"', b"true"])
def test_raw_id_sanity_check(bad: bytes) -> None:
    with pytest.raises(ValueError):
        w.encode_result(bad, None)
    with pytest.raises(ValueError):
        w.encode_error(bad, 1, "m")
    with pytest.raises(ValueError):
        w.encode_request(bad, "m")


class Color(enum.IntEnum):
    RED = 1


class Name(enum.StrEnum):
    ADD = "add"


class MyFloat(float):
    pass


class MyInt(int):
    def __str__(self) -> str:
        return "nope"

    __repr__ = __str__


class MyDict(dict):  # type: ignore[type-arg]
    pass


class MyList(list):  # type: ignore[type-arg]
    pass


Point = collections.namedtuple("Point", ["x", "y"])

DUMPS_CASES: list[tuple[Any, bytes]] = [
    (None, b"null"),
    (True, b"true"),
    (False, b"false"),
    (0, b"0"),
    (-1, b"-1"),
    (2**63 - 1, b"9223372036854775807"),
    (-(2**63), b"-9223372036854775808"),
    (2**64 - 1, b"18446744073709551615"),
    (2**64, b"18446744073709551616"),
    (-(2**64) - 5, b"-18446744073709551621"),
    (10**50, b"1" + b"0" * 50),
    (1.5, b"1.5"),
    (1.0, b"1.0"),
    (-0.0, b"-0.0"),
    (0.1, b"0.1"),
    (1e16, b"1e+16"),
    (-1.5e300, b"-1.5e+300"),
    (1e-7, b"1e-7"),
    (2.5e-5, b"0.000025"),
    (math.nan, b"null"),
    (math.inf, b"null"),
    (-math.inf, b"null"),
    ("", b'""'),
    ("é😀\u2028", '"é😀\u2028"'.encode()),
    ('"\\/\n\r\t\b\f\x00\x1f\x7f', b'"\\"\\\\/\\n\\r\\t\\b\\f\\u0000\\u001f\x7f"'),
    ([], b"[]"),
    ({}, b"{}"),
    ((1, "a"), b'[1,"a"]'),
    ({"a": [1, {"b": None}], "c": (True,)}, b'{"a":[1,{"b":null}],"c":[true]}'),
    (w.RawJSON(b'{"pre":"encoded"}'), b'{"pre":"encoded"}'),
    ([w.RawJSON(b"1"), w.RawJSON(b"[]")], b"[1,[]]"),
    (Color.RED, b"1"),
    (Name.ADD, b'"add"'),
    (MyFloat(2.5), b"2.5"),
    (MyInt(2**70), str(2**70).encode()),
    (MyInt(3), b"3"),
    (MyDict(a=1), b'{"a":1}'),
    (MyList([1]), b"[1]"),
    (Point(1, 2), b"[1,2]"),
    ({Name.ADD: 1}, b'{"add":1}'),
    ([True, 1, 1.0], b"[true,1,1.0]"),
]


@pytest.mark.parametrize(("obj", "want"), DUMPS_CASES)
def test_dumps(obj: Any, want: bytes) -> None:
    assert w.dumps(obj) == want
    reply = w.encode_result(b"1", obj)
    assert reply == b'{"jsonrpc":"2.0","id":1,"result":' + want + b"}"


@pytest.mark.parametrize(
    "obj", [{1, 2}, object(), b"bytes", bytearray(b"x"), {1: "a"}, {None: 1}, [1, {(1,): 2}]]
)
def test_dumps_type_errors(obj: Any) -> None:
    with pytest.raises(TypeError):
        w.dumps(obj)


def test_dumps_type_error_names_type() -> None:
    with pytest.raises(TypeError, match="set"):
        w.dumps({1})
    with pytest.raises(TypeError, match="dict keys must be str"):
        w.dumps({1: 2})


def test_dumps_depth() -> None:
    ok: Any = []
    for _ in range(254):
        ok = [ok]
    assert w.dumps(ok) == b"[" * 255 + b"]" * 255
    with pytest.raises(ValueError):
        w.dumps([ok])
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    with pytest.raises(ValueError):
        w.dumps(cyclic)
    d: dict[str, Any] = {}
    d["self"] = d
    with pytest.raises(ValueError):
        w.dumps(d)


def test_dumps_lone_surrogate_is_value_error() -> None:
    with pytest.raises(ValueError):
        w.dumps("a\ud800b")
    with pytest.raises(ValueError):
        w.dumps({"\udfff": 1})
    with pytest.raises(ValueError):
        w.encode_error(None, 1, "\ud800")


def test_raw_json() -> None:
    r = w.RawJSON(b"[1]")
    assert r.data == b"[1]"
    assert "RawJSON" in repr(r)
    with pytest.raises(TypeError):
        w.RawJSON("[1]")  # type: ignore[arg-type]


# --- properties ---------------------------------------------------------------------------


def exercise(frame: w.Frame) -> None:
    """Every accessor of a frame and its entries; none may raise."""
    assert frame.kind in (
        w.FRAME_SINGLE,
        w.FRAME_BATCH,
        w.FRAME_PARSE_ERROR,
        w.FRAME_EMPTY_BATCH,
        w.FRAME_BATCH_TOO_LARGE,
    )
    repr(frame)
    if frame.kind in (w.FRAME_PARSE_ERROR, w.FRAME_BATCH_TOO_LARGE):
        assert frame.error
        assert frame.entries == []
    for e in frame.entries:
        repr(e)
        assert e.kind in (w.REQUEST, w.NOTIFICATION, w.RESPONSE, w.INVALID)
        assert (e.reason is not None) == (e.kind == w.INVALID)
        e.method, e.id_class, e.has_params, e.is_error  # noqa: B018
        json.loads(e.raw())
        e.params()
        e.result()
        if e.raw_id is not None:
            json.loads(e.raw_id)
            assert e.id_class in (w.ID_STRING, w.ID_INT)
            json.loads(w.encode_result(e.raw_id, None))
            json.loads(w.encode_error(e.raw_id, -32600, e.reason or "x"))


@FAST
@given(st.binary(max_size=200))
def test_arbitrary_bytes_never_crash(body: bytes) -> None:
    exercise(w.decode(body))


VALID = (
    b'[{"jsonrpc":"2.0","id":"a\\u00e9","method":"tools/call","params":{"name":"add",'
    b'"arguments":{"a":1,"b":[2.5e3,null,true,{"c":"d"}]}}},'
    b'{"jsonrpc":"2.0","id":7,"result":{"x":[]}},{"jsonrpc":"2.0","method":"n"}]'
)


@FAST
@given(st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.binary(max_size=3)), max_size=4))
def test_mutated_messages_never_crash(edits: list[tuple[int, bytes]]) -> None:
    body = bytearray(VALID)
    for pos, repl in edits:
        body[pos : pos + 1] = repl
    frame = w.decode(bytes(body), max_depth=6, max_batch=2)
    exercise(frame)
    if frame.kind != w.FRAME_PARSE_ERROR:
        # Whatever decode accepts, a strict JSON parser accepts too.
        json.loads(bytes(body))


json_ids = st.one_of(
    st.integers(-(2**53) + 1, 2**53 - 1),
    st.text(max_size=20),
)


@FAST
@given(json_ids, st.booleans(), st.sampled_from(["tools/call", "é/\u2028", 'a"b\\c']))
def test_request_id_round_trip(id_value: int | str, ascii_only: bool, method: str) -> None:
    id_lexeme = json.dumps(id_value, ensure_ascii=ascii_only)
    method_lexeme = json.dumps(method, ensure_ascii=ascii_only)
    body = request(id_lexeme, method_lexeme, ',"params":{"k":[1]}').encode()
    e = single(body)
    assert e.kind == w.REQUEST
    assert e.method == method
    assert e.raw_id == id_lexeme.encode()
    assert e.id_class == (w.ID_INT if isinstance(id_value, int) else w.ID_STRING)
    reply = w.encode_result(e.raw_id, e.params())
    assert id_lexeme.encode() in reply
    assert json.loads(reply) == {"jsonrpc": "2.0", "id": id_value, "result": {"k": [1]}}
    batch = w.encode_batch([reply, w.encode_error(e.raw_id, -1, "x")])
    assert [r["id"] for r in json.loads(batch)] == [id_value, id_value]


json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(st.text(max_size=8), children, max_size=5),
    ),
    max_leaves=30,
)


@FAST
@given(json_values)
def test_dumps_matches_orjson(value: Any) -> None:
    out = w.dumps(value)
    assert json.loads(out) == json.loads(orjson.dumps(value)) == value
    assert w.decode(w.encode_result(b"1", value)).entries[0].result() == value


@FAST
@given(
    st.dictionaries(st.text(max_size=30), json_values, max_size=6),
    st.booleans(),
    st.sampled_from([(",", ":"), (", ", ": "), (" ,\n", " :\t")]),
)
def test_params_match_json_loads(
    params: dict[str, Any], ascii_only: bool, separators: tuple[str, str]
) -> None:
    # Escapes (ascii_only writes \uXXXX, surrogate pairs included), whitespace, long and
    # non-ASCII keys: params() builds what a JSON parser builds, every time afresh.
    text = json.dumps(params, ensure_ascii=ascii_only, separators=separators)
    e = single(request("1", extra=f',"params":{text}'))
    first = e.params()
    assert first == json.loads(text)
    again = e.params()
    assert again == first
    assert again is not first


def test_params_keys_and_numbers() -> None:
    body = (
        '{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1,"a":2,"k\\u0065y":-12,'
        '"a_key_longer_than_the_cache_holds_by_far":[123456789012345678,1234567890123456789,'
        '-9223372036854775808,-0.0,1E2,2.5e-3,0.1],"\u00e9":"","":{}}}'
    )
    p = single(body).params()
    assert p == {
        "a": 2,
        "key": -12,
        "a_key_longer_than_the_cache_holds_by_far": [
            123456789012345678,
            1234567890123456789,
            -9223372036854775808,
            -0.0,
            100.0,
            0.0025,
            0.1,
        ],
        "é": "",
        "": {},
    }
    assert math.copysign(1.0, p["a_key_longer_than_the_cache_holds_by_far"][3]) == -1.0
    # Cached keys are the interned strings a Python constant is.
    key = next(iter(single(request("2", extra=',"params":{"name":1}')).params()))
    assert key is sys.intern("name")
    # Many distinct keys (cache slots are reused) still come out right.
    keys = [f"k{i}" for i in range(3000)]
    text = json.dumps({k: i for i, k in enumerate(keys)})
    assert single(request("3", extra=f',"params":{text}')).params() == json.loads(text)


@FAST
@given(st.one_of(json_values, st.integers(), st.floats(1e15, 1e300), st.floats(-1e-3, 1e-3)))
def test_dumps_writes_what_pydantic_writes(value: Any) -> None:
    """The encoder writes JSON values byte for byte as pydantic does (floats with a signed
    exponent, the same string escapes): a model's structured content reads the same whether
    the extension spliced pydantic's JSON or the general path encoded the model's dump, and
    as the official SDK (which writes its messages with pydantic) sends it."""
    assert w.dumps(value) == pydantic_core.to_json(value)


@FAST
@given(st.integers(), st.floats())
def test_dumps_any_number(i: int, f: float) -> None:
    assert json.loads(w.dumps(i)) == i
    out = json.loads(w.dumps(f))
    if math.isfinite(f):
        assert out == f
    else:
        assert out is None
