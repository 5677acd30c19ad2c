"""Custom HTTP routes next to the MCP endpoint under ``jetmcp run`` (RSGI).

A server with ``custom_route``s (a native :class:`jetmcp.Server`'s, or those of an adapted
SDK/fastmcp object: the Starlette routes it holds) is served by :class:`RoutedApp`: the
paths of the MCP app (the endpoint, the 2024-11-05 SSE paths, the OAuth metadata and
metrics paths) go to it as before; a request whose path one of the routes matches goes to a
Starlette app holding them, through :func:`call_asgi`, a small RSGI-to-ASGI bridge; any
other path gets the MCP app's 404. A server without custom routes is served by the MCP app
itself (no wrapper, no cost).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

if TYPE_CHECKING:
    from jetmcp.transports.http import McpHttpApp

log = logging.getLogger("jetmcp.http")

Message = MutableMapping[str, Any]
#: Characters a path keeps unquoted in ``raw_path`` (RFC 3986 ``pchar`` and ``/``).
_PATH_SAFE = "/:@!$&'()*+,;=-._~"


def _address(value: Any) -> tuple[str, int] | None:
    """RSGI's ``"host:port"`` as ASGI's ``(host, port)``."""
    if not isinstance(value, str) or not value:
        return None
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def _header_pairs(headers: Any) -> list[tuple[bytes, bytes]]:
    return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]


def asgi_scope(scope: Any) -> dict[str, Any]:
    """The ASGI HTTP scope of an RSGI one. Granian gives the path percent-decoded, as ASGI's
    ``path`` is; ``raw_path`` (which RSGI does not keep) is that path quoted again."""
    path = str(scope.path)
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": str(getattr(scope, "http_version", "1.1")),
        "server": _address(getattr(scope, "server", None)),
        "client": _address(getattr(scope, "client", None)),
        "scheme": str(getattr(scope, "scheme", "http")),
        "method": str(scope.method),
        "root_path": "",
        "path": path,
        "raw_path": quote(path, safe=_PATH_SAFE).encode("ascii"),
        "query_string": str(scope.query_string or "").encode("latin-1", "replace"),
        "headers": _header_pairs(scope.headers),
        "state": {},
    }


class _Exchange:
    """One ASGI request on an RSGI protocol object: the body in one message (custom routes
    take small bodies), then a disconnect once the client goes; the response as one RSGI
    ``response_bytes`` when its body comes in one message, else streamed."""

    __slots__ = ("_body_sent", "_done", "_headers", "_proto", "_status", "_stream")

    def __init__(self, proto: Any) -> None:
        self._proto = proto
        self._body_sent = False
        self._status = 500
        self._headers: list[tuple[str, str]] = []
        self._stream: Any = None
        self._done = False

    async def receive(self) -> Message:
        if not self._body_sent:
            self._body_sent = True
            body = await self._proto()
            return {"type": "http.request", "body": bytes(body), "more_body": False}
        await self._proto.client_disconnect()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            self._status = int(message["status"])
            self._headers = [
                (bytes(k).decode("latin-1"), bytes(v).decode("latin-1"))
                for k, v in message.get("headers") or ()
            ]
            return
        if kind != "http.response.body" or self._done:
            return
        body = bytes(message.get("body", b""))
        more = bool(message.get("more_body", False))
        if self._stream is None and not more:
            self._proto.response_bytes(self._status, self._headers, body)
            self._done = True
            return
        if self._stream is None:
            self._stream = self._proto.response_stream(self._status, self._headers)
        if body:
            await self._stream.send_bytes(body)
        if not more:
            self._done = True

    def fail(self) -> None:
        """Answer 500 unless a response has begun."""
        if self._stream is None and not self._done:
            with contextlib.suppress(RuntimeError):
                self._proto.response_bytes(
                    500, [("content-type", "text/plain; charset=utf-8")], b"Internal Server Error"
                )
            self._done = True


async def call_asgi(app: Any, scope: Any, proto: Any) -> None:
    """Serve one RSGI HTTP request with the ASGI ``app``."""
    exchange = _Exchange(proto)
    try:
        await app(asgi_scope(scope), exchange.receive, exchange.send)
    except Exception:
        log.exception("%s %s failed", scope.method, scope.path)
        exchange.fail()
        return
    exchange.fail()


class RoutedApp:
    """The MCP app with custom routes beside it (RSGI)."""

    def __init__(self, mcp: McpHttpApp, routes: list[Any]) -> None:
        from starlette.applications import Starlette

        self.mcp = mcp
        self.routes = list(routes)
        #: Starlette's app around the routes: its error handling, ``request.app``, 405s.
        self.asgi = Starlette(routes=self.routes)
        own = {mcp.settings.path}
        if mcp.legacy is not None:
            own.update((mcp.legacy.sse_path, mcp.legacy.message_path))
        if mcp.auth is not None:
            own.update(mcp.auth.metadata_paths)
        metrics = getattr(mcp.settings, "metrics_path", None)
        if metrics:
            own.add(metrics)
        #: Paths the MCP app answers, whatever a custom route says (as the SDKs put their
        #: own routes before the custom ones).
        self.own = frozenset(own)

    def _routed(self, scope: Any) -> bool:
        from starlette.routing import Match

        probe = {
            "type": "http",
            "path": scope.path,
            "root_path": "",
            "method": scope.method,
        }
        for route in self.routes:
            match, _ = route.matches(probe)
            if match is not Match.NONE:
                return True
        return False

    async def __rsgi__(self, scope: Any, proto: Any) -> None:
        if scope.proto == "http" and scope.path not in self.own and self._routed(scope):
            await call_asgi(self.asgi, scope, proto)
            return
        await self.mcp.__rsgi__(scope, proto)

    def __rsgi_init__(self, loop: Any) -> None:
        self.mcp.__rsgi_init__(loop)

    def __rsgi_del__(self, loop: Any) -> None:
        self.mcp.__rsgi_del__(loop)


def with_routes(mcp: McpHttpApp, routes: list[Any]) -> McpHttpApp | RoutedApp:
    """``mcp`` itself when there are no ``routes``, else a :class:`RoutedApp`."""
    return RoutedApp(mcp, routes) if routes else mcp


__all__ = ["RoutedApp", "asgi_scope", "call_asgi", "with_routes"]
