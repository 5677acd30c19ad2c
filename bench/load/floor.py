"""The floor: the ceiling plus what no MCP server can skip for each request-shape workload.

``rsgi_app`` reads the body and answers the same canned reply as ``ceiling.rsgi_app``, but
first does, in the cheapest way Python has, the work no MCP server on Granian can skip:

- it reads what the specification makes every Streamable HTTP server check before it
  answers, through Granian's API as any RSGI app must: the method and path, whether an
  ``Origin`` came (it MUST be validated), ``MCP-Protocol-Version`` (an unsupported one is
  answered 400), and at 2026-07-28 ``Mcp-Method`` and ``Mcp-Name``, which MUST equal the
  body's method and tool name (compared with the values this module read from each body at
  import);
- the tool's own function, with its arguments already at hand, and for the pydantic tool
  what pydantic itself must do (validate the arguments' JSON into the parameter model, write
  the returned model as the indented text content and as the structured result).

No JSON-RPC is read, no envelope is written, no other header is looked at (no Host, Accept,
Content-Type or Content-Length, which jetmcp checks too): any MCP server on Granian does all
of this and more, so its rate here is the most such a server can reach on this machine.

    granian --interface rsgi --working-dir bench/load floor:rsgi_app

The tools are ``bench/load/jetmcp_server.py``'s, written again without any framework.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

from bodies import REQUEST_SHAPES, canned_reply
from pydantic import BaseModel

_RSGI_HEADERS = [("content-type", "application/json")]
#: The revisions the bench servers serve: the MCP-Protocol-Version values answered.
_VERSIONS = frozenset({"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"})
_MODERN = "2026-07-28"


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


def _routing(body: bytes) -> tuple[str, str] | None:
    """The ``Mcp-Method`` and ``Mcp-Name`` a 2026-07-28 single ``tools/call`` in ``body``
    must carry (None for a batch, which names no single request)."""
    message = json.loads(body)
    if isinstance(message, list):
        return None
    return message["method"], message["params"]["name"]


_WORK: dict[bytes, tuple[Callable[[], object], ...]] = {
    w.body: _works(w.body) for w in REQUEST_SHAPES.values()
}
_ROUTING: dict[bytes, tuple[str, str] | None] = {
    w.body: _routing(w.body) for w in REQUEST_SHAPES.values()
}


def _refuse(proto: Any, status: int) -> None:
    proto.response_empty(status, [])


async def rsgi_app(scope: Any, proto: Any) -> None:
    if scope.method != "POST" or scope.path != "/mcp":
        return _refuse(proto, 405)
    headers = scope.headers
    version = headers.get("mcp-protocol-version")
    if "origin" in headers:
        return _refuse(proto, 403)
    if version not in _VERSIONS:
        return _refuse(proto, 400)
    body: bytes = await proto()
    if version == _MODERN:
        routing = _ROUTING.get(body)
        if routing is not None and routing != (headers.get("mcp-method"), headers.get("mcp-name")):
            return _refuse(proto, 400)
    for work in _WORK.get(body, ()):
        work()
    proto.response_bytes(200, _RSGI_HEADERS, canned_reply(body))
