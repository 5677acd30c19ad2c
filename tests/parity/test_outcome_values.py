"""``Runner.outcome`` (a value the extension hands back for Python to shape) answers as the
general path does for every kind of value a synchronous tool returns: the built-in result
types it tells apart without looking up ``__await__`` (``_SETTLED``) and a model.

A synchronous tool that returns an awaitable answers that object as its value on both paths
(not awaited: only the thread pool's own call of a synchronous tool is; 060615c awaited any
awaitable on the fast path).

Two servers hold the same tools; one has every fast path off, so its calls take the general
path. Each call goes through ``Dispatcher.start`` and, when it waits, is awaited."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from pydantic import BaseModel

from harness.messages import request
from jetmcp import Server, _wire
from jetmcp.core import runners
from jetmcp.core.dispatch import Dispatcher
from jetmcp.core.exchange import Exchange
from jetmcp.protocol import revisions


class Pair(BaseModel):
    a: int
    b: str


class _Later:
    """An awaitable a synchronous tool returns (its repr is the same in every process)."""

    def __await__(self) -> Any:
        yield from asyncio.sleep(0).__await__()
        return {"awaited": True}

    def __repr__(self) -> str:
        return "_Later()"


VALUES: dict[str, Any] = {
    "dict": lambda: {"k": [1, 2], "v": None},
    "list": lambda: [1, "two", 3.5],
    # The extension writes dicts, lists, floats and None itself; a tuple and a model are
    # handed to Runner.outcome (a tuple by the _SETTLED shortcut, a model by __await__).
    "tuple": lambda: (1, 2),
    "tuple-nested": lambda: ([1, {"a": 2}], "x"),
    "float": lambda: 2.5,
    "none": lambda: None,
    "nested": lambda: {"a": {"b": [{"c": True}]}},
    "model": lambda: Pair(a=1, b="x"),
}
#: A value that is awaitable (see the module docstring).
AWAITABLE: dict[str, Any] = {"awaitable": _Later}


def _tool(make: Any) -> Any:
    def tool() -> Any:
        return make()

    return tool


def _server(fast: bool) -> Server:
    server = Server("outcome-values", fast_paths=fast)
    for name, make in {**VALUES, **AWAITABLE}.items():
        server.tool(name=name)(_tool(make))
    return server


async def _reply(dispatcher: Dispatcher, body: bytes, revision: revisions.Revision) -> Any:
    started = dispatcher.start(_wire.decode(body), Exchange(revision, None))
    if asyncio.iscoroutine(started):
        started = await started
    return bytes(started) if started is not None else None


@pytest.mark.parametrize(
    "name",
    [*VALUES, *AWAITABLE],
)
@pytest.mark.parametrize("revision", list(revisions.LEGACY), ids=lambda r: r.version)
def test_outcome_answers_as_the_general_path(name: str, revision: revisions.Revision) -> None:
    fast = Dispatcher(_server(True))
    general = Dispatcher(_server(False))
    body = orjson.dumps(request("tools/call", {"name": name, "arguments": {}}, 7))

    async def both() -> tuple[Any, Any]:
        # Three times each: the first calls of a synchronous tool run in the pool, later ones
        # inline once it is promoted; both ways must give the same reply.
        got = [await _reply(fast, body, revision) for _ in range(3)]
        want = [await _reply(general, body, revision) for _ in range(3)]
        return got, want

    got, want = asyncio.run(both())
    assert got == want
    assert b'"isError":true' not in got[-1]


def test_settled_types_have_no_await() -> None:
    """The shortcut's premise: no exact type in ``_SETTLED`` has ``__await__`` (a subclass
    may add one, and is not in the set: the lookup is by exact type)."""
    for kind in runners._SETTLED:
        assert not hasattr(kind, "__await__"), kind

    class Waits(dict[str, Any]):
        def __await__(self) -> Any:
            yield from ()

    assert type(Waits()) not in runners._SETTLED
