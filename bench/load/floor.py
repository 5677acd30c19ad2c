"""The floor: the ceiling plus each issue-11 workload's own tool work, and nothing else.

``rsgi_app`` reads the body and answers the same canned reply as ``ceiling.rsgi_app``, but
first does the work no MCP server can skip for that request, in the cheapest way Python
has: the tool's own function, with its arguments already at hand, and for the pydantic tool
what pydantic itself must do (validate the arguments' JSON into the parameter model, write
the returned model as the indented text content and as the structured result). No JSON-RPC
is read, no envelope is written, no revision is checked: any MCP server on Granian does all
of this and more, so its rate here is the most such a server can reach on this machine.

    granian --interface rsgi --working-dir bench/load floor:rsgi_app

The tools are ``bench/load/jetmcp_server.py``'s, written again without any framework.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

from bodies import ISSUE11, canned_reply
from pydantic import BaseModel

_RSGI_HEADERS = [("content-type", "application/json")]


class Point(BaseModel):
    x: float
    y: float


class ScaleArgs(BaseModel):
    """``scale``'s parameters as one model (how every pydantic-based server validates them)."""

    point: Point
    factor: float


def add(a: int, b: int) -> int:
    return a + b


async def scale(point: Point, factor: float) -> Point:
    return Point(x=point.x * factor, y=point.y * factor)


class _Context:
    """The least a Context can be: ``info`` that sends nothing (no log level was set)."""

    __slots__ = ()

    async def info(self, message: str) -> None:
        return None


async def add_log(a: int, b: int, ctx: _Context) -> int:
    await ctx.info("adding")
    return a + b


_CONTEXT = _Context()


def _finish(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that never suspends to its end, with no event loop turn."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("the tool waited")


def _add_work(arguments: dict[str, Any]) -> Callable[[], object]:
    a, b = arguments["a"], arguments["b"]
    return lambda: add(a, b)


def _add_log_work(arguments: dict[str, Any]) -> Callable[[], object]:
    a, b = arguments["a"], arguments["b"]
    return lambda: _finish(add_log(a, b, _CONTEXT))


def _scale_work(arguments: dict[str, Any]) -> Callable[[], object]:
    raw = json.dumps(arguments, separators=(",", ":")).encode()
    validate = ScaleArgs.__pydantic_validator__.validate_json
    to_json = Point.__pydantic_serializer__.to_json

    def work() -> object:
        args = validate(raw)
        result = _finish(scale(args.point, args.factor))
        return to_json(result, indent=2), to_json(result)

    return work


_MAKERS: dict[str, Callable[[dict[str, Any]], Callable[[], object]]] = {
    "add": _add_work,
    "add_log": _add_log_work,
    "scale": _scale_work,
}


def _works(body: bytes) -> tuple[Callable[[], object], ...]:
    """The tool work of each request in ``body`` (read once, at import, not per request)."""
    message = json.loads(body)
    calls = message if isinstance(message, list) else [message]
    return tuple(
        _MAKERS[call["params"]["name"]](call["params"]["arguments"])
        for call in calls
        if call.get("method") == "tools/call"
    )


_WORK: dict[bytes, tuple[Callable[[], object], ...]] = {
    w.body: _works(w.body) for w in ISSUE11.values()
}


async def rsgi_app(scope: Any, proto: Any) -> None:
    body: bytes = await proto()
    for work in _WORK.get(body, ()):
        work()
    proto.response_bytes(200, _RSGI_HEADERS, canned_reply(body))
