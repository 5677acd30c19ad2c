"""The Streamable HTTP transport as an ASGI application, to mount in Starlette or FastAPI or
to serve with any ASGI server (uvicorn, hypercorn, granian's ASGI mode).

It is the same transport :class:`~jetmcp.transports.http.McpHttpApp` that ``jetmcp run``
serves over RSGI: each ASGI request is presented to it as an RSGI scope and protocol
object, so status codes, sessions, streams and limits are the same by construction. What
RSGI does not have, ASGI gets here: the lifespan (startup/shutdown events, entered once
however many apps share the server, and on the first request when nobody sent them, as a
mount inside another app's lifespan never does) and the path of a mount (matched relative
to ``root_path``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from jetmcp.server.lifespan import LifespanScope

if TYPE_CHECKING:
    from jetmcp.server.app import Server
    from jetmcp.transports.http import McpHttpApp

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class _Headers:
    """Request headers as RSGI gives them: lower-case names; ``get`` the first value of a
    name, ``get_all`` every value, ``items`` every ``(name, value)`` in order, repeats
    included."""

    __slots__ = ("_all", "_map", "_pairs")

    def __init__(self, raw: list[tuple[bytes, bytes]]) -> None:
        found: dict[str, str] = {}
        every: dict[str, list[str]] = {}
        pairs: list[tuple[str, str]] = []
        for name, value in raw:
            key, text = name.decode("latin-1").lower(), value.decode("latin-1")
            found.setdefault(key, text)
            every.setdefault(key, []).append(text)
            pairs.append((key, text))
        self._map = found
        self._all = every
        self._pairs = pairs

    def get(self, name: str, default: Any = None) -> Any:
        return self._map.get(name, default)

    def get_all(self, name: str) -> list[str]:
        return list(self._all.get(name, ()))

    def items(self) -> list[tuple[str, str]]:
        return list(self._pairs)

    def keys(self) -> Any:
        return self._map.keys()

    def __contains__(self, name: object) -> bool:
        return name in self._map


class _RsgiScope:
    __slots__ = ("authority", "headers", "method", "path", "proto", "query_string")

    def __init__(self, scope: Scope) -> None:
        self.proto = "http"
        #: HTTP/2's ``:authority``; ASGI servers fold it into ``host``.
        self.authority: str | None = None
        self.method = str(scope.get("method", "GET"))
        path = str(scope.get("path", "/"))
        root = str(scope.get("root_path", "") or "")
        if root and path.startswith(root):
            path = path[len(root) :] or "/"
        self.path = path
        self.headers = _Headers(list(scope.get("headers") or []))
        self.query_string = (scope.get("query_string") or b"").decode("latin-1")


def _raw_headers(headers: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    return [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]


class _Stream:
    """What RSGI's ``response_stream`` returns: writes go out as ASGI body chunks."""

    __slots__ = ("_headers", "_send", "_started", "_status")

    def __init__(self, send: Send, status: int, headers: list[tuple[str, str]]) -> None:
        self._send = send
        self._status = status
        self._headers = headers
        self._started = False

    async def start(self) -> None:
        if not self._started:
            self._started = True
            await self._send(
                {
                    "type": "http.response.start",
                    "status": self._status,
                    "headers": _raw_headers(self._headers),
                }
            )

    async def send_bytes(self, data: bytes) -> None:
        await self.start()
        await self._send({"type": "http.response.body", "body": data, "more_body": True})

    async def send_str(self, data: str) -> None:
        await self.send_bytes(data.encode())

    async def end(self) -> None:
        await self.start()
        await self._send({"type": "http.response.body", "body": b"", "more_body": False})


class _RsgiProto:
    """The RSGI protocol object of one ASGI request: the body, the response, disconnects."""

    __slots__ = ("_disconnected", "_more", "_receive", "_response", "_send", "stream")

    def __init__(self, receive: Receive, send: Send) -> None:
        self._receive = receive
        self._send = send
        self._more = True
        self._disconnected = False
        self._response: tuple[int, list[tuple[str, str]], bytes] | None = None
        self.stream: _Stream | None = None

    async def _chunks(self) -> AsyncIterator[bytes]:
        while self._more:
            message = await self._receive()
            if message["type"] == "http.disconnect":
                self._disconnected = True
                self._more = False
                return
            self._more = bool(message.get("more_body", False))
            body = message.get("body", b"")
            if body:
                yield body

    async def __call__(self) -> bytes:
        return b"".join([chunk async for chunk in self._chunks()])

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._chunks()

    async def client_disconnect(self) -> None:
        async for _ in self._chunks():
            pass
        while not self._disconnected:
            message = await self._receive()
            if message["type"] == "http.disconnect":
                self._disconnected = True

    def response_bytes(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self._response = (status, headers, body)

    def response_str(self, status: int, headers: list[tuple[str, str]], body: str) -> None:
        self._response = (status, headers, body.encode())

    def response_empty(self, status: int, headers: list[tuple[str, str]]) -> None:
        self._response = (status, headers, b"")

    def response_stream(self, status: int, headers: list[tuple[str, str]]) -> _Stream:
        self.stream = _Stream(self._send, status, headers)
        return self.stream

    async def finish(self) -> None:
        if self.stream is not None:
            await self.stream.end()
            return
        status, headers, body = self._response or (500, [], b"")
        await self._send(
            {"type": "http.response.start", "status": status, "headers": _raw_headers(headers)}
        )
        await self._send({"type": "http.response.body", "body": body})


class SharedLifespan:
    """A server's lifespan entered once for every app and runner that needs it, left when
    the last of them is done."""

    def __init__(self, server: Server) -> None:
        self._scope = LifespanScope(server)
        self._users = 0
        self._lock: asyncio.Lock | None = None

    def _locked(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    @property
    def open(self) -> bool:
        return self._users > 0

    async def enter(self) -> None:
        async with self._locked():
            if self._users == 0:
                await self._scope.start()
            self._users += 1

    async def leave(self) -> None:
        async with self._locked():
            self._users -= 1
            if self._users == 0:
                await self._scope.stop()

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """Held open for as long as the block runs (the SDK's ``session_manager.run()``)."""
        await self.enter()
        try:
            yield
        finally:
            await self.leave()


def shared_lifespan(server: Server) -> SharedLifespan:
    """The one :class:`SharedLifespan` of ``server``."""
    found = getattr(server, "_shared_lifespan", None)
    if found is None:
        found = SharedLifespan(server)
        server._shared_lifespan = found
    return found


class McpAsgiApp:
    """``server`` over Streamable HTTP (and the 2024-11-05 HTTP+SSE paths), as ASGI."""

    def __init__(self, http: McpHttpApp) -> None:
        #: The app every request is served by (built with ``manage_lifespan=False``: the
        #: lifespan is this app's, shared by every app of the server).
        self.http = http
        self.server = server = http.server
        self.settings = http.settings
        self.lifespan = shared_lifespan(server)
        self._started_here = False
        self._lazy: asyncio.Lock | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            if not self.lifespan.open:
                await self._start_lazily()
            proto = _RsgiProto(receive, send)
            await self.http.__rsgi__(_RsgiScope(scope), proto)
            await proto.finish()
        elif kind == "lifespan":
            await self._lifespan(receive, send)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1000})

    async def _start_lazily(self) -> None:
        # A mounted app gets no lifespan events: the lifespan opens before the first request.
        if self._lazy is None:
            self._lazy = asyncio.Lock()
        async with self._lazy:
            if not self.lifespan.open:
                await self.lifespan.enter()

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self.lifespan.enter()
                except Exception as exc:
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                self._started_here = True
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self.http.close_streams()
                if self._started_here:
                    await self.lifespan.leave()
                await send({"type": "lifespan.shutdown.complete"})
                return


__all__ = ["McpAsgiApp", "SharedLifespan", "shared_lifespan"]
