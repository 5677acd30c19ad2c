"""``Plans.run_context``: the extension runs a planned 2026-07-28 call of a tool that takes a
Context with a Context it makes itself (``Shape(context=...)``), and hands back what
``Plans.run(0, context)`` would, or the exception the tool raised. The dispatcher's answers
through it are held to the general path by ``test_plain_tool_route.py``, ``test_planned_calls.py``
and
``test_http_usual_post.py``; this file holds the method's own contract.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from harness.messages import modern_meta, modern_request
from jetmcp import Context, Server, _wire
from jetmcp.core.dispatch import Dispatcher
from jetmcp.core.exchange import Exchange
from jetmcp.core.mrtr import InputRequired
from jetmcp.protocol import revisions

R_MODERN = revisions.R2026_07_28
SEEN: list[Any] = []


class Point(BaseModel):
    x: int


def build() -> Server:
    server = Server("run-context")

    @server.tool()
    def quiet(n: int, ctx: Context) -> int:
        SEEN.append(ctx)
        return n

    @server.tool()
    def named(n: int, ctx: Context) -> str:
        return f"{n} {ctx.request_id!r} {ctx.protocol_version}"

    @server.tool()
    def fails(n: int, ctx: Context) -> int:
        raise ValueError(f"bad {n}")

    @server.tool()
    def asks(n: int, ctx: Context) -> int:
        raise InputRequired({"q": {"method": "elicitation/create", "params": {}}})

    @server.tool()
    def stops(n: int, ctx: Context) -> int:
        raise KeyboardInterrupt

    @server.tool()
    async def waits(n: int, ctx: Context) -> int:
        await asyncio.sleep(0)
        return n

    @server.tool()
    def paired(n: int, ctx: Context) -> tuple[int, int]:  # a tuple: Python shapes it
        return (n, n)

    @server.tool()
    def moved(p: Point | str, ctx: Context) -> int:  # Python reads its arguments, calls it
        return p.x if isinstance(p, Point) else 0

    @server.tool()
    def plain(n: int) -> int:
        return n

    return server


SERVER = build()
DISPATCHER = Dispatcher(SERVER)


def plans_of(tool: str, arguments: dict[str, Any], version: str = "2026-07-28") -> Any:
    body = _wire.dumps(
        modern_request(
            "tools/call",
            {"name": tool, "arguments": arguments},
            id=7,
            meta=modern_meta(version),
        )
    )
    if version != "2026-07-28":
        # The same version, written with an escape: the extension decodes it.
        body = body.replace(version.encode(), b"2026\\u002d07-28")
    frame = _wire.decode(body)
    return SERVER.routes.answer(frame, DISPATCHER.shape(R_MODERN)), frame


def test_a_quiet_tool_answers_with_a_context_made_as_the_shape_says() -> None:
    SEEN.clear()
    for written in ("2026-07-28", "escaped"):
        plans, frame = plans_of("quiet", {"n": 3}, written)
        assert type(plans) is _wire.Plans
        ex = Exchange(R_MODERN, None)
        reply = plans.run_context(ex, False)
        assert type(reply) is bytes
        assert b'"text":"3"' in reply and b'"id":7' in reply
        ctx = SEEN[-1]
        assert type(ctx) is Context
        # The slots Context.__init__ sets, as Shape documents them; no call made yet.
        assert ctx._made is None and ctx._state is None and ctx._server is SERVER
        assert ctx._plan == (plans, frame, ex, R_MODERN)
    assert len(SEEN) == 2


def test_the_context_makes_its_call_when_the_tool_asks() -> None:
    plans, _ = plans_of("named", {"n": 1})
    reply = plans.run_context(Exchange(R_MODERN, None), False)
    assert type(reply) is bytes
    assert b"1 '7' 2026-07-28" in reply


def test_what_is_not_a_reply_comes_back_with_its_context_and_revision() -> None:
    plans, _ = plans_of("fails", {"n": 2})
    value, ctx, revision, raised = plans.run_context(Exchange(R_MODERN, None), False)
    assert type(value) is _wire.Outcome and value.failed and not raised
    assert isinstance(value.value, ValueError) and str(value.value) == "bad 2"
    assert type(ctx) is Context and revision is R_MODERN

    plans, _ = plans_of("paired", {"n": 2})
    value, _, _, raised = plans.run_context(Exchange(R_MODERN, None), False)
    assert type(value) is _wire.Outcome and value.value == (2, 2) and not raised

    plans, _ = plans_of("waits", {"n": 4})
    value, _, _, raised = plans.run_context(Exchange(R_MODERN, None), True)
    assert type(value) is _wire.Outcome and value.stepped and not raised
    value.value.close()  # the suspended coroutine, not awaited here


@pytest.mark.parametrize("tool", ["asks", "stops"])
def test_what_the_tool_raises_past_exception_comes_back_raised(tool: str) -> None:
    plans, _ = plans_of(tool, {"n": 1})
    value, ctx, revision, raised = plans.run_context(Exchange(R_MODERN, None), False)
    assert raised is True and type(ctx) is Context and revision is R_MODERN
    assert isinstance(value, InputRequired if tool == "asks" else KeyboardInterrupt)


def test_nothing_runs_where_the_extension_makes_no_context() -> None:
    # A tool Python calls itself: planned, but not run here.
    plans, _ = plans_of("moved", {"p": {"x": 1}, "n": 0})
    assert type(plans) is _wire.Plans
    assert plans.run_context(Exchange(R_MODERN, None), False) is None
    assert plans.planned(0)
    # A shape made without context runs none either.
    body = _wire.dumps(modern_request("tools/call", {"name": "quiet", "arguments": {"n": 1}}))
    frame = _wire.decode(body)
    bare = _wire.Shape(True, b"{}", ["2026-07-28"])
    plans = SERVER.routes.answer(frame, bare)
    assert type(plans) is _wire.Plans
    assert plans.run_context(Exchange(R_MODERN, None), False) is None
    # Once it ran, entry 0 is no longer planned.
    plans, _ = plans_of("quiet", {"n": 1})
    plans.run_context(Exchange(R_MODERN, None), False)
    assert plans.run_context(Exchange(R_MODERN, None), False) is None


def test_a_shape_context_needs_a_revision_per_version() -> None:
    with pytest.raises(ValueError, match="one revision per version"):
        _wire.Shape(True, b"{}", ["2026-07-28"], (SERVER, Context, []))
    with pytest.raises(ValueError, match="one revision per version"):
        _wire.Shape(True, None, [], (SERVER, Context, []))
