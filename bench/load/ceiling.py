"""The ceiling: Granian answering a fixed JSON-RPC reply with no MCP at all.

``rsgi_app`` (RSGI) and ``asgi_app`` (ASGI) read the whole request body, pick the canned
reply for it (tools/call, tools/list or a batch of 10, by a byte peek) and send it. Whatever
an MCP server on Granian does on top of this costs throughput; this is the upper bound.

    granian --interface rsgi --working-dir bench/load ceiling:rsgi_app
    granian --interface asgi --working-dir bench/load ceiling:asgi_app
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from bodies import canned_reply

_RSGI_HEADERS = [("content-type", "application/json")]
_ASGI_HEADERS = [(b"content-type", b"application/json")]


async def rsgi_app(scope: Any, proto: Any) -> None:
    body: bytes = await proto()
    proto.response_bytes(200, _RSGI_HEADERS, canned_reply(body))


async def asgi_app(
    scope: dict[str, Any],
    receive: Callable[[], Awaitable[dict[str, Any]]],
    send: Callable[[dict[str, Any]], Awaitable[None]],
) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    chunks: list[bytes] = []
    more = True
    while more:
        message = await receive()
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
    reply = canned_reply(b"".join(chunks))
    await send({"type": "http.response.start", "status": 200, "headers": _ASGI_HEADERS})
    await send({"type": "http.response.body", "body": reply})
