"""The 2024-11-05 HTTP+SSE transport, for clients that still speak it.

``GET <sse_path>`` opens an event stream whose first event is ``endpoint``, naming the URL
to POST to (``<sse_message_path>?session_id=<id>``). Each POST there is answered ``202
Accepted``; its replies, and everything else the server sends the client, go out as
``message`` events on that stream. The stream is the session: when it closes, the session
ends and its in-flight requests are cancelled.

Bodies go through the same :class:`~jetmcp.core.dispatch.Dispatcher` as Streamable HTTP, with the
stream as the exchange's sink, so every revision rule (batching, ``initialize``) holds here
too. The revision before ``initialize`` is 2024-11-05, this transport's own.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from jetmcp import _wire
from jetmcp.core.call import Outgoing, Session
from jetmcp.core.exchange import HttpExchange
from jetmcp.core.inflight import InFlight
from jetmcp.core.reply import Reply
from jetmcp.errors import INVALID_REQUEST, SERVER_ERROR
from jetmcp.protocol import revisions
from jetmcp.state import new_session_id
from jetmcp.state.streams import SSE_HEADERS, Listener, encode_event
from jetmcp.transports._http import (
    ACCEPT_SSE,
    GONE,
    JSON_HEADERS,
    RETRY_AFTER,
    HttpError,
    accept_flags,
    first,
    is_json,
    method_not_allowed,
    reply_status,
)
from jetmcp.transports.sse import hold_open

if TYPE_CHECKING:
    from jetmcp.core.principal import Principal
    from jetmcp.transports.http import McpHttpApp

log = logging.getLogger("jetmcp.http_sse")

_JSON = JSON_HEADERS
_GONE = GONE
#: The revision of a connection before its ``initialize``.
TRANSPORT_REVISION = revisions.BY_VERSION["2024-11-05"]


class SseConnection:
    """One client's event stream: the sink of every exchange it POSTs, and its session's
    ``outbound``."""

    __slots__ = ("id", "inflight", "listener", "outgoing", "principal", "session", "tasks")

    def __init__(
        self, connection_id: str, transport: Any, principal: Principal | None = None
    ) -> None:
        self.id = connection_id
        #: Whoever opened the stream (None without auth): only they may POST to it.
        self.principal = principal
        self.listener = Listener(transport, connection_id)
        self.session: Session | None = None
        self.inflight = InFlight()
        #: Its server-to-client requests: answers POSTed for this connection only.
        self.outgoing = Outgoing()
        #: Requests still being worked on (their replies go out when they finish).
        self.tasks: set[asyncio.Task[None]] = set()

    @property
    def closed(self) -> bool:
        return self.listener.closed

    async def send(self, message: bytes) -> None:
        """Write one ``message`` event; nothing once the stream is gone."""
        transport = self.listener.transport
        if transport is None:
            return
        try:
            await transport.send_bytes(encode_event(message, event="message"))
        except _GONE:
            self.listener.close()

    def close(self) -> None:
        """End the stream, cancel what is still running, and forget the session."""
        self.listener.close()
        self.inflight.cancel_all()
        for task in list(self.tasks):
            task.cancel()


class LegacySse:
    """The two paths of the HTTP+SSE transport, served by :class:`McpHttpApp`."""

    def __init__(self, app: McpHttpApp) -> None:
        self.app = app
        self.settings = app.settings
        self.dispatcher = app.dispatcher
        self.sse_path = self.settings.sse_path
        self.message_path = self.settings.sse_message_path
        self.connections: dict[str, SseConnection] = {}

    def serves(self, path: str) -> bool:
        return path == self.sse_path or path == self.message_path

    async def handle(self, scope: Any, proto: Any, principal: Principal | None = None) -> None:
        method = scope.method
        if scope.path == self.sse_path:
            if method == "GET":
                await self._stream(scope, proto, principal)
            else:
                method_not_allowed(proto, method, "GET")
        elif method == "POST":
            await self._message(scope, proto, principal)
        else:
            method_not_allowed(proto, method, "POST")

    # GET: the event stream -----------------------------------------------------------

    async def _stream(self, scope: Any, proto: Any, principal: Principal | None) -> None:
        accept = first(scope.headers, "accept")
        if accept is not None and not accept_flags(accept) & ACCEPT_SSE:
            raise HttpError(406, INVALID_REQUEST, "Not Acceptable: this is a text/event-stream")
        settings = self.settings
        if len(self.connections) >= min(settings.max_sse_streams, settings.max_sessions):
            raise HttpError(503, SERVER_ERROR, "Too many open streams; retry later", [RETRY_AFTER])
        connection_id = new_session_id()
        transport = proto.response_stream(200, SSE_HEADERS)
        conn = SseConnection(connection_id, transport, principal)
        self.connections[connection_id] = conn
        # A stream nobody initializes is a session that never starts: let it go.
        handshake = asyncio.get_running_loop().call_later(
            settings.sse_handshake_seconds, _unless_initialized, conn
        )
        try:
            endpoint = f"{self.message_path}?session_id={connection_id}"
            try:
                await transport.send_bytes(encode_event(endpoint.encode(), event="endpoint"))
            except _GONE:
                return
            await hold_open(conn.listener, transport, proto, settings.keepalive_seconds)
        finally:
            handshake.cancel()
            self.connections.pop(connection_id, None)
            conn.close()

    # POST: the messages --------------------------------------------------------------

    async def _message(self, scope: Any, proto: Any, principal: Principal | None) -> None:
        query = parse_qs(scope.query_string or "")
        ids = query.get("session_id")
        if not ids:
            raise HttpError(400, INVALID_REQUEST, "Missing session_id")
        conn = self.connections.get(ids[0])
        if conn is None or conn.closed or not _same(conn.principal, principal):
            raise HttpError(404, INVALID_REQUEST, "Session not found")
        headers = scope.headers
        if not is_json(first(headers, "content-type")):
            raise HttpError(415, INVALID_REQUEST, "Content-Type must be application/json")
        body = await self.app.read_body(headers, proto)
        settings = self.settings
        frame = _wire.decode(body, settings.max_depth, settings.max_batch)
        session = conn.session
        ex = HttpExchange(  # by position (see Exchange.__init__)
            session.revision if session is not None else TRANSPORT_REVISION,
            session,
            conn,
            conn.inflight,
            False,  # answer_cancelled
            None,  # headers
            False,  # sniff_meta
            conn.outgoing,
            principal,  # auth
        )
        ex.http_headers = headers  # the POST's headers, decoded only if a tool reads them
        pending = self.dispatcher.start(frame, ex)
        new = pending.session if isinstance(pending, Reply) else None
        if new is not None:
            new.id = conn.id
            new.outbound = conn
            conn.session = new
        if pending is None:
            proto.response_empty(202, [])
        elif isinstance(pending, bytes):
            status = reply_status(pending, ex.revision.error_status)
            if status != 200:
                # A body that could not be read as messages: say so to this POST.
                proto.response_bytes(status, JSON_HEADERS, pending)
                return
            await conn.send(pending)
            proto.response_empty(202, [])
        else:
            task = asyncio.ensure_future(self._finish(conn, pending))
            conn.tasks.add(task)
            task.add_done_callback(conn.tasks.discard)
            proto.response_empty(202, [])

    async def _finish(
        self, conn: SseConnection, pending: Coroutine[Any, Any, bytes | None]
    ) -> None:
        try:
            reply = await pending
        except asyncio.CancelledError:
            return
        if reply is not None:
            await conn.send(reply)


def _same(owner: Principal | None, principal: Principal | None) -> bool:
    if owner is None or principal is None:
        return owner is principal
    return owner.key == principal.key


def _unless_initialized(conn: SseConnection) -> None:
    if conn.session is None:
        log.debug("closing /sse stream %s: no initialize in time", conn.id)
        conn.close()


__all__ = ["LegacySse", "SseConnection"]
