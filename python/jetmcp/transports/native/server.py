"""The native engine's server: the listening socket on uvloop, the connections it holds, the
usual POST's header verdicts, the caps and timeouts of every connection, and the drain.

- **Connections** (``max_connections``): when a new client comes in with every slot taken,
  the connection stalled longest reading a request head or body is closed (408) to make
  room, else the one idle longest between requests; with neither, the new client is
  answered 503 at once. A slow or stalled body never makes a new client wait.
- **Timeouts**, watched every quarter second: a request head that takes longer than
  ``header_timeout_seconds`` or a body longer than ``body_timeout_seconds`` is answered
  408 and the connection closed; a connection idle between requests past
  ``idle_timeout_seconds`` (and a new one that sends nothing within the header timeout)
  is closed.
- **Drain** (:meth:`NativeServer.drain`, on SIGTERM/SIGINT): no new connections, idle ones
  closed, every response from then on closes its connection; the app's own shutdown ends
  the SSE streams and, after ``shutdown_grace_seconds``, answers what still runs. The
  server returns once every connection is closed (a little after the grace at the latest).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import time
from collections.abc import Callable, Coroutine
from typing import Any

from jetmcp import _wire
from jetmcp.protocol.revisions import R2026_07_28 as _MODERN
from jetmcp.settings import Settings
from jetmcp.transports._http import post_flags
from jetmcp.transports.http import LEGACY_EXACT, MODERN_EXACT, McpHttpApp
from jetmcp.transports.native.connection import (
    HttpConnection,
    NativeProto,
    NativeScope,
    RequestHeaders,
    _text,
)

log = logging.getLogger("jetmcp.http")

#: The headers a usual POST's verdict depends on.
_GATE = (b"host", b"content-type", b"accept", b"origin", b"mcp-protocol-version")
#: Verdicts kept (sets of header values; clients send the same few again and again).
_MAX_VERDICTS = 4096
_IDLE = _wire.HTTP1_IDLE
_FRAME_SINGLE = _wire.FRAME_SINGLE
_HEAD = _wire.HTTP1_HEAD
_BODY = _wire.HTTP1_BODY
#: Seconds between two looks of the timeout watch (at most).
_TICK = 0.25
#: Seconds past the grace a drain waits for connections before it closes them.
_DRAIN_MARGIN = 2.0


class NativeServer:
    """Serves ``target`` (the RSGI app ``jetmcp run`` builds: :class:`McpHttpApp`, its
    observed subclass, or either with custom routes) on uvloop."""

    def __init__(self, target: Any, app: McpHttpApp, settings: Settings) -> None:
        self.target = target
        self.settings = settings
        self.loop = asyncio.get_running_loop()
        #: The app whose usual POST is answered in the callback, or None when every request
        #: goes through ``target`` (auth, observers, which must see each request).
        self.lane: McpHttpApp | None = app if type(app) is McpHttpApp and app.lane else None
        self.path = settings.path.encode("latin-1")
        self.path_text = settings.path
        self.stateless = settings.stateless
        self.max_depth = settings.max_depth
        self.max_batch = settings.max_batch
        self.connections: set[HttpConnection] = set()
        self.tasks: set[asyncio.Task[Any]] = set()
        self.clock = time.monotonic()
        self.scheme = "http"
        #: A connection's write buffer above which it is not read (backpressure).
        self.write_high = settings.max_write_buffer_bytes
        lane = self.lane
        #: The answer to a complete request, in the extension (:meth:`_general` and the
        #: methods after it are the Python rest of its path).
        self.native = _wire.NativeLane(
            self,
            lane,
            None if lane is None else lane.dispatcher.answer,
            self.path,
            _GATE,
            self.stateless,
            self.max_depth,
            self.max_batch,
            self.loop,
            _MODERN,
            settings.max_body_bytes,
            _MAX_VERDICTS,
        )
        #: ``answer(connection, request)``: True when ``request`` was answered at once,
        #: False when a task finishes it (:meth:`HttpConnection.later`).
        self.answer = self.native.answer
        self._listener: asyncio.AbstractServer | None = None
        self._idle = asyncio.Event()
        self._watch: asyncio.TimerHandle | None = None

    @property
    def draining(self) -> bool:
        """Whether the server drains: no new connections, every response closes its own."""
        return self.native.draining

    # -- serving -------------------------------------------------------------------------

    async def serve(self, sock: socket.socket, tls: ssl.SSLContext | None = None) -> None:
        """Serve on ``sock`` (bound and listening) until :meth:`drain` has finished."""
        if tls is not None:
            self.scheme = "https"
        self._listener = await self.loop.create_server(
            lambda: HttpConnection(self),
            sock=sock,
            ssl=tls,
            backlog=self.settings.backlog,
        )
        self._watch = self.loop.call_later(_TICK, self._tick)
        try:
            await self._listener.wait_closed()
            await self._idle.wait()
        finally:
            if self._watch is not None:
                self._watch.cancel()

    def drain(self) -> None:
        """Stop gracefully (see the module docs); a second call changes nothing."""
        if self.draining:
            return
        self.native.drain()
        if self._listener is not None:
            self._listener.close()
        for connection in list(self.connections):
            if connection.busy is None and connection.conn.phase == _IDLE:
                connection.transport.close()
        grace = self.settings.shutdown_grace_seconds + _DRAIN_MARGIN
        self.loop.call_later(grace, self._abort_all)
        self._check_idle()

    def _abort_all(self) -> None:
        for connection in list(self.connections):
            connection.transport.abort()
        self._idle.set()

    def _check_idle(self) -> None:
        if self.draining and not self.connections:
            self._idle.set()

    # -- connections ---------------------------------------------------------------------

    def admit(self, connection: HttpConnection) -> None:
        """Take a new connection, making room for it when every slot is taken."""
        connection.since = self.clock
        if len(self.connections) >= self.settings.max_connections:
            victim = self._victim()
            if victim is None:
                connection.expire(503, "Too many connections; retry later")
                return
            victim.expire(408 if victim.stalled else 0, "Request not received in time")
            self.connections.discard(victim)
        self.connections.add(connection)

    def _victim(self) -> HttpConnection | None:
        """The connection stalled longest reading a request, else the one idle longest."""
        stalled: HttpConnection | None = None
        idle: HttpConnection | None = None
        for c in self.connections:
            if c.busy is not None:
                continue
            phase = c.conn.phase
            if phase in (_HEAD, _BODY):
                if stalled is None or c.since < stalled.since:
                    stalled = c
            elif phase == _IDLE and (idle is None or c.since < idle.since):
                idle = c
        return stalled or idle

    def forget(self, connection: HttpConnection) -> None:
        self.connections.discard(connection)
        self._check_idle()

    def _tick(self) -> None:
        """The timeout watch (see the module docs)."""
        now = self.clock = time.monotonic()
        s = self.settings
        for c in list(self.connections):
            mark = (c.conn.phase, c.served)
            if mark != c.mark:
                c.mark = mark
                c.since = now
                continue
            if c.busy is not None:
                continue
            waited = now - c.since
            phase = mark[0]
            if phase == _HEAD:
                if waited > s.header_timeout_seconds:
                    c.expire(
                        408,
                        f"Request header not received within {s.header_timeout_seconds:g} seconds",
                    )
            elif phase == _BODY:
                if s.body_timeout_seconds > 0 and waited > s.body_timeout_seconds:
                    c.expire(
                        408, f"Request body not received within {s.body_timeout_seconds:g} seconds"
                    )
            elif phase == _IDLE:
                limit = s.header_timeout_seconds
                if c.served and s.idle_timeout_seconds > 0:
                    limit = s.idle_timeout_seconds
                if waited > limit:
                    c.expire(0, "")
        self._watch = self.loop.call_later(_TICK, self._tick)

    # -- requests ------------------------------------------------------------------------

    def _general(self, connection: HttpConnection, request: _wire.Http1Request) -> bool:
        """A request that is no usual POST: a task of the app's RSGI entry point."""
        proto = NativeProto(connection, request.body, request.method == b"HEAD")
        scope = NativeScope(request, connection.client, connection.here, self.scheme)
        return connection.later(self.target.__rsgi__(scope, proto), proto)

    def _eager_rest(
        self,
        lane: McpHttpApp,
        connection: HttpConnection,
        request: _wire.Http1Request,
        body: bytes,
        frame: _wire.Frame,
        revision: Any,
        verdict: tuple[int, Any],
        routing: Any,
        done: Any,
    ) -> bool:
        """A single call the extension handed back (a value Python shapes, an exception,
        an ``async`` tool still running, a tool that takes a Context): the dispatcher's
        task, whose first step runs now, most often to the reply."""
        proto = NativeProto(connection, body, False)
        work = lane.lane_eager(frame, revision, verdict[0], routing, done, proto, request)
        return connection.eager(work, proto)

    def _usual(
        self,
        lane: McpHttpApp,
        connection: HttpConnection,
        request: _wire.Http1Request,
        verdict: tuple[int, Any],
    ) -> bool:
        """A usual POST that may name a session: :meth:`McpHttpApp.lane_post` as under
        Granian."""
        accept, revision = verdict
        proto = NativeProto(connection, request.body, False)
        headers = RequestHeaders(request)
        routing = None if revision is not None else request.routing()
        try:
            rest = lane.lane_post((accept, revision, routing, headers), request.body, proto, False)
        except Exception as exc:
            lane.refuse(exc, "POST", self.path_text, proto)
            return True
        if rest is None:
            return True
        return connection.later(self._finish(lane, rest, proto), proto)

    def _hot(
        self,
        lane: McpHttpApp,
        connection: HttpConnection,
        request: _wire.Http1Request,
        verdict: tuple[int, Any],
        routing: Any,
        frame: _wire.Frame,
        done: Any,
    ) -> bool:
        """The rest of :meth:`McpHttpApp.lane_post` for a POST of :meth:`answer`'s hot
        path that it did not answer at once: from the decoded frame (and what the
        dispatcher gave for a single call, ``done``), exactly as ``lane_post`` goes on."""
        if frame.initialize:
            # lane_post from the body, as for a POST that may name a session (the routing it
            # reads again is the one given here).
            return self._usual(lane, connection, request, verdict)
        accept, revision = verdict
        proto = NativeProto(connection, request.body, False)
        if revision is None:
            revision = _MODERN
        step = lane.lane_start
        if frame.kind == _FRAME_SINGLE:
            step = lane.lane_resume
        args = (frame, revision, None, accept, None, routing, proto, done, False, request)
        return connection.later(self._step(lane, step, args, proto), proto)

    async def _step(
        self,
        lane: McpHttpApp,
        step: Callable[..., Coroutine[Any, Any, None] | None],
        args: tuple[Any, ...],
        proto: NativeProto,
    ) -> None:
        """``step(*args)`` inside the request's task, then what it returns (one coroutine:
        :func:`~jetmcp.transports.http.later` and :meth:`_finish` together)."""
        try:
            rest = step(*args)
            if rest is not None:
                await rest
        except Exception as exc:
            lane.refuse(exc, "POST", self.path_text, proto)

    async def _finish(self, lane: McpHttpApp, rest: Any, proto: NativeProto) -> None:
        try:
            await rest
        except Exception as exc:
            lane.refuse(exc, "POST", self.path_text, proto)

    def _judge(self, request: _wire.Http1Request) -> tuple[int, Any] | None:
        """:meth:`McpHttpApp._usual` on the parsed header bytes: one allowed Host, no
        Origin, JSON in, an Accept that takes a reply and an ``MCP-Protocol-Version`` that
        names a served revision exactly (the body's size the state machine checked). The
        accept flags and revision (None: a 2026-07-28 one) of a usual POST, else None; made
        once per set of gate values (``native`` keeps up to ``_MAX_VERDICTS`` of them)."""
        lane = self.lane
        assert lane is not None
        hosts = request.header_all(b"host")
        if len(hosts) != 1 or request.header(b"origin") is not None:
            return None
        host = _text(hosts[0])
        if host is None or not lane.guard.host_allowed(host):
            return None
        raw = (request.header(b"content-type"), request.header(b"accept"))
        texts = [None if v is None else _text(v) for v in raw]
        if any(v is not None and t is None for v, t in zip(raw, texts, strict=True)):
            return None
        accept = post_flags(texts[0], texts[1])
        if accept <= 0:
            return None
        version_raw = request.header(b"mcp-protocol-version")
        version = None if version_raw is None else _text(version_raw)
        if version is None:
            return None
        revision = LEGACY_EXACT.get(version)
        if revision is None and version not in MODERN_EXACT:
            return None
        return accept, revision


__all__ = ["NativeServer"]
