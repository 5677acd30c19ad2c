"""Whole listings are encoded once per revision and written again for each request
(``EncodedResult``); the bytes must be what encoding the result would give, each reply must
carry its own id, and a registry change must show at once."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from jetmcp import Server, _wire
from jetmcp.core.call import EncodedResult
from jetmcp.core.dispatch import Dispatcher
from jetmcp.core.exchange import Exchange
from jetmcp.protocol import revisions


def build() -> Server:
    server = Server("lists")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.prompt()
    def greet(name: str) -> str:
        return f"Hello, {name}!"

    @server.resource("demo://readme")
    def readme() -> str:
        return "read me"

    return server


def ask(dispatcher: Dispatcher, method: str, revision: revisions.Revision, rid: int) -> Any:
    body = orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": method})
    reply = dispatcher.start(_wire.decode(body), Exchange(revision, None))
    assert isinstance(reply, bytes)
    return reply


@pytest.mark.parametrize("revision", revisions.LEGACY, ids=lambda r: r.version)
@pytest.mark.parametrize(
    ("method", "field"),
    [("tools/list", "tools"), ("prompts/list", "prompts"), ("resources/list", "resources")],
)
def test_encoded_once_and_the_same_bytes(
    revision: revisions.Revision, method: str, field: str
) -> None:
    server = build()
    dispatcher = Dispatcher(server)
    first = ask(dispatcher, method, revision, 1)
    second = ask(dispatcher, method, revision, 22)
    result = server.handlers[method]({}, _call(revision))
    assert type(result) is EncodedResult
    assert result is server.handlers[method]({}, _call(revision))
    assert first == _wire.encode_result(b"1", dict(result))
    assert second == _wire.encode_result(b"22", dict(result))
    assert [item["name"] for item in orjson.loads(second)["result"][field]]


def test_a_change_shows_at_once() -> None:
    server = build()
    dispatcher = Dispatcher(server)
    revision = revisions.LATEST_LEGACY

    def names() -> list[str]:
        reply = orjson.loads(ask(dispatcher, "tools/list", revision, 1))
        return [t["name"] for t in reply["result"]["tools"]]

    assert names() == ["add"]

    @server.tool()
    def sub(a: int, b: int) -> int:
        return a - b

    assert names() == ["add", "sub"]
    server.remove_tool("add")
    assert names() == ["sub"]


def test_pages_and_hints_are_not_cached() -> None:
    """A paginated server and the 2026-07-28 result (with caching hints) build each reply."""
    server = build()
    server.page_size = 1
    dispatcher = Dispatcher(server)
    reply = orjson.loads(ask(dispatcher, "tools/list", revisions.LATEST_LEGACY, 1))
    assert "nextCursor" not in reply["result"]
    assert type(server.handlers["tools/list"]({}, _call(revisions.LATEST_LEGACY))) is dict
    modern = server.handlers["tools/list"]({}, _call(revisions.R2026_07_28))
    assert type(modern) is dict and "ttlMs" in modern


def _call(revision: revisions.Revision) -> Any:
    from jetmcp.core.call import NULL_SINK, Call

    return Call("tools/list", b"1", revision, None, NULL_SINK, None)
