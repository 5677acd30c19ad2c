"""Wire-core benchmark: frame + answer a batch of ``tools/call`` requests.

Not part of the test suite (``testpaths`` is ``tests/``). ``bench/conftest.py`` builds the
release extension first (``maturin develop --release``) and the header names the build::

    .venv/bin/pytest bench/test_parser_bench.py --benchmark-only -q

Each group (``batch-1``, ``batch-10``, ``batch-100``) times the same body through:

* ``jetmcp_server``: what a jetmcp server does with the body: ``_wire.decode`` and
  ``Dispatcher.start``, which has the extension read each call's arguments, call the tool
  (``add(a, b)``, as in the load benchmark) and write each reply with the raw id spliced
  back (:meth:`jetmcp._wire.Routes.plan`, then ``Plans.run_all``). More work than the
  parser alone: the tool runs.
* ``jetmcp``: ``_wire.decode``, ``params()`` on every entry (what the Python dispatcher
  does for calls it cannot route), ``encode_result`` per entry, ``encode_batch``.
* ``jetmcp_no_params``: the same without ``params()``, i.e. the wire core's own share.
* ``orjson_loads_dumps``: ``orjson.loads`` + ``orjson.dumps`` of the same bytes (the floor
  for "parse it and write it back" with the fastest general-purpose JSON library).
* ``orjson_replies``: ``orjson.loads``, one reply dict per entry, ``orjson.dumps`` of the list
  (the same work as ``jetmcp`` done with orjson, without any JSON-RPC validation).
* ``mcp_sdk``: what the official SDK does per message: ``pydantic_core.from_json`` then
  ``jsonrpc_message_adapter.validate_python`` per entry (the SDK takes no arrays), and a
  ``JSONRPCResponse(...).model_dump_json(by_alias=True, exclude_unset=True)`` per reply,
  joined into an array: the SDK's decode + encode.
* ``mcp_sdk_validate_only``: the decode half of that alone (no replies), for reference.
"""

from __future__ import annotations

from typing import Any

import orjson
import pydantic_core
import pytest
from mcp_types import JSONRPCRequest, JSONRPCResponse, jsonrpc_message_adapter

from jetmcp import Server, _wire
from jetmcp.core.dispatch import Dispatcher
from jetmcp.core.exchange import Exchange
from jetmcp.protocol import revisions

SIZES = [1, 10, 100]

RESULT: dict[str, Any] = {"content": [{"type": "text", "text": "3"}], "isError": False}


def make_body(n: int) -> bytes:
    entries = [
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call",'
        b'"params":{"name":"add","arguments":{"a":1,"b":2}}}' % i
        for i in range(1, n + 1)
    ]
    if n == 1:
        return entries[0]
    return b"[" + b",".join(entries) + b"]"


def jetmcp_round(body: bytes) -> bytes:
    frame = _wire.decode(body)
    replies = []
    for entry in frame.entries:
        entry.params()
        replies.append(_wire.encode_result(entry.raw_id, RESULT))  # type: ignore[arg-type]
    if frame.kind == _wire.FRAME_SINGLE:
        return replies[0]
    return _wire.encode_batch(replies)


_server = Server("bench")


@_server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


_dispatcher = Dispatcher(_server, max_batch=1000)
#: The revision of the load benchmark's batches (2025-03-26 has batches and no
#: structuredContent, so the reply is the ``RESULT`` the other rows write).
_REVISION = revisions.R2025_03_26


def jetmcp_server(body: bytes) -> bytes:
    reply = _dispatcher.start(_wire.decode(body, 100, 1000), Exchange(_REVISION, None))
    assert type(reply) is bytes
    return reply


def jetmcp_no_params(body: bytes) -> bytes:
    """Framing and replies only: a server whose handler takes no arguments."""
    frame = _wire.decode(body)
    replies = [_wire.encode_result(e.raw_id, RESULT) for e in frame.entries]  # type: ignore[arg-type]
    if frame.kind == _wire.FRAME_SINGLE:
        return replies[0]
    return _wire.encode_batch(replies)


def orjson_loads_dumps(body: bytes) -> bytes:
    return orjson.dumps(orjson.loads(body))


def orjson_replies(body: bytes) -> bytes:
    data = orjson.loads(body)
    if isinstance(data, list):
        return orjson.dumps([{"jsonrpc": "2.0", "id": m["id"], "result": RESULT} for m in data])
    return orjson.dumps({"jsonrpc": "2.0", "id": data["id"], "result": RESULT})


def mcp_sdk_round(body: bytes) -> bytes:
    data = pydantic_core.from_json(body)
    items = data if isinstance(data, list) else [data]
    replies = []
    for item in items:
        message = jsonrpc_message_adapter.validate_python(item, by_name=False)
        assert isinstance(message, JSONRPCRequest)
        reply = JSONRPCResponse(jsonrpc="2.0", id=message.id, result=RESULT)
        replies.append(reply.model_dump_json(by_alias=True, exclude_unset=True).encode())
    if not isinstance(data, list):
        return replies[0]
    return b"[" + b",".join(replies) + b"]"


def mcp_sdk_validate_only(body: bytes) -> bytes:
    data = pydantic_core.from_json(body)
    items = data if isinstance(data, list) else [data]
    for item in items:
        message = jsonrpc_message_adapter.validate_python(item, by_name=False)
        assert isinstance(message, JSONRPCRequest)
    return body


IMPLEMENTATIONS = {
    "jetmcp_server": jetmcp_server,
    "jetmcp": jetmcp_round,
    "jetmcp_no_params": jetmcp_no_params,
    "orjson_loads_dumps": orjson_loads_dumps,
    "orjson_replies": orjson_replies,
    "mcp_sdk": mcp_sdk_round,
    "mcp_sdk_validate_only": mcp_sdk_validate_only,
}


@pytest.mark.parametrize("impl", list(IMPLEMENTATIONS))
@pytest.mark.parametrize("n", SIZES)
def test_round_trip(benchmark: Any, n: int, impl: str) -> None:
    body = make_body(n)
    fn = IMPLEMENTATIONS[impl]
    # Every implementation answers each request with the same id.
    out = orjson.loads(fn(body))
    replies = out if isinstance(out, list) else [out]
    if impl not in ("orjson_loads_dumps", "mcp_sdk_validate_only"):
        assert [r["id"] for r in replies] == list(range(1, n + 1))
        assert all(r["result"] == RESULT for r in replies)
    benchmark.group = f"batch-{n}"
    benchmark.name = impl
    benchmark(fn, body)


@pytest.mark.parametrize("n", SIZES)
def test_decode_only(benchmark: Any, n: int) -> None:
    """The framing pass alone (no params, no replies)."""
    body = make_body(n)
    benchmark.group = f"decode-only-{n}"
    benchmark(_wire.decode, body)


@pytest.mark.parametrize("n", SIZES)
def test_orjson_loads_only(benchmark: Any, n: int) -> None:
    body = make_body(n)
    benchmark.group = f"decode-only-{n}"
    benchmark(orjson.loads, body)
