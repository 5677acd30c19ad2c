"""A promoted synchronous tool is timed where it is called, without a wrapper (issue 40, item 3).

In process, a server served (``threads.serve``) through ``Dispatcher.start`` on an event loop:
the extension's route of a promoted tool calls the function itself and times it in Rust
(``ToolRoute.slow_ns``); a slow call, returning or raising, demotes the tool to the pool (its
own reply unchanged); ``Tool.start`` (the Python path) does the same; an ``on_slow`` that
raises never changes the call's outcome. The ordering bounds are generous: a call that sleeps
0.5 s is over a 200 ms bound however loaded the machine, one that does nothing is under it.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from jetmcp import _wire
from jetmcp.core import threads
from jetmcp.core.dispatch import Dispatcher
from jetmcp.core.exchange import Exchange
from jetmcp.protocol import revisions
from jetmcp.server.app import Server
from jetmcp.settings import Settings

REVISION = revisions.lookup("2025-06-18")
assert REVISION is not None
#: A bound no call that does nothing exceeds, and a 0.5 s sleep always does.
FAST_MS = 200.0
SLOW = 0.5


@pytest.fixture
def served() -> Iterator[tuple[Server, Dispatcher]]:
    server = Server("watch")

    @server.tool()
    def nap(seconds: float) -> int:
        time.sleep(seconds)
        return 7

    @server.tool()
    def nap_raise(seconds: float) -> int:
        time.sleep(seconds)
        raise ValueError("woke up cross")

    before = (threads.POLICY.threads, threads.POLICY.promote_after, threads.POLICY.fast_ms)
    threads.serve(server, Settings(sync_tool_promote_after=1, sync_tool_fast_ms=FAST_MS))
    try:
        yield server, Dispatcher(server)
    finally:
        threads.POLICY.configure(*before)


def body(name: str, seconds: float) -> bytes:
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": {"seconds": seconds}},
    }
    return json.dumps(message).encode()


async def answer(dispatcher: Dispatcher, name: str, seconds: float) -> dict[str, Any]:
    reply = dispatcher.start(_wire.decode(body(name, seconds)), Exchange(REVISION, None))
    if asyncio.iscoroutine(reply):
        reply = await reply
    assert type(reply) is bytes
    parsed: dict[str, Any] = json.loads(reply)
    return parsed["result"]


async def promote(server: Server, dispatcher: Dispatcher, name: str) -> None:
    tool = server.tools[name]
    assert tool.is_async and tool.watch_ns is None  # in the pool: not timed inline
    await answer(dispatcher, name, 0)
    await asyncio.sleep(0)  # the switch is made on the loop
    assert not tool.is_async


@pytest.mark.parametrize("name", ["nap", "nap_raise"])
def test_the_extension_times_a_promoted_tool_and_a_slow_call_demotes_it(
    served: tuple[Server, Dispatcher], name: str
) -> None:
    server, dispatcher = served
    tool = server.tools[name]

    async def run() -> None:
        await promote(server, dispatcher, name)
        route = server.routes[name]
        # The route calls the function itself, timed in Rust against the policy's bound.
        assert route is tool.route and route.slow_ns == round(FAST_MS * 1e6)
        assert tool.invoke is tool.fn
        fast = await answer(dispatcher, name, 0)
        await asyncio.sleep(0)
        assert server.routes[name] is route  # a fast call keeps it inline
        slow = await answer(dispatcher, name, SLOW)
        assert slow == fast  # the slow call's own reply is an inline call's
        await asyncio.sleep(0)
        assert tool.is_async and tool.watch_ns is None
        assert server.routes[name] is tool.route is not route
        assert tool.route is not None and tool.route.slow_ns is None

    asyncio.run(run())


def test_python_start_times_a_promoted_tool(served: tuple[Server, Dispatcher]) -> None:
    server, dispatcher = served
    tool = server.tools["nap"]

    async def run() -> None:
        await promote(server, dispatcher, "nap")
        assert tool.start({"seconds": 0}, None, server, REVISION) == await answer(
            dispatcher, "nap", 0
        )
        await asyncio.sleep(0)
        assert not tool.is_async
        tool.start({"seconds": SLOW}, None, server, REVISION)
        await asyncio.sleep(0)
        assert tool.is_async and tool.watch_ns is None

    asyncio.run(run())


def test_a_route_reports_only_slow_calls_and_an_on_slow_error_is_not_the_outcome(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[int] = []
    unraisable: list[BaseException | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: unraisable.append(u.exc_value))

    def report(took: int) -> None:
        seen.append(took)
        raise RuntimeError("the report failed")

    def nap(seconds: float) -> int:
        time.sleep(seconds)
        return 7

    required = object()
    route = _wire.ToolRoute(
        None,
        nap,
        [("seconds", float, required, False)],
        required,
        [int],
        False,
        slow_ns=round(FAST_MS * 1e6),
        on_slow=report,
    )
    assert route.slow_ns == round(FAST_MS * 1e6)
    untimed = _wire.ToolRoute(
        None, nap, [("seconds", float, required, False)], required, [int], False
    )
    assert untimed.slow_ns is None
    server = Server("bare")
    server.routes["nap"] = route
    dispatcher = Dispatcher(server)

    async def run() -> list[dict[str, Any]]:
        return [await answer(dispatcher, "nap", s) for s in (0, SLOW)]

    fast, slow = asyncio.run(run())
    assert fast == slow and fast["content"][0]["text"] == "7" and not fast["isError"]
    assert len(seen) == 1 and seen[0] > FAST_MS * 1e6
    assert len(unraisable) == 1 and isinstance(unraisable[0], RuntimeError)
