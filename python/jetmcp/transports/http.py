"""Streamable HTTP, as an RSGI application that Granian serves.

The transport owns status codes, headers, sessions and streams; what a body means is the
dispatcher's business. It hands the raw body to the parser untouched.

A POST is answered with plain JSON unless a handler sends something before its result
(progress, a log line, a server-to-client request): then the reply becomes an SSE stream
(:class:`~jetmcp.transports.sse.PostStream`) that ends with the result. GET opens the
session's standalone stream; DELETE ends the session and its streams. The same app serves
the 2024-11-05 HTTP+SSE transport on its own paths (:mod:`jetmcp.transports.http_sse`).

A request whose ``MCP-Protocol-Version`` is not a legacy revision is a 2026-07-28 one
(:meth:`McpHttpApp._post_modern`): POST only, no session, its routing headers checked
against the body by the dispatcher, and the request cancelled when its client disconnects.

The usual POST takes a short way when auth is off (:attr:`McpHttpApp.lane`): headers whose
values were judged before are admitted in one call (:class:`jetmcp._wire.Gate`, taught by
:meth:`McpHttpApp._usual`), the body is read and decoded, and a single call the extension
answers at once (:meth:`~jetmcp.core.dispatch.Dispatcher.answer`) goes back with no
:class:`~jetmcp.core.exchange.Exchange` made. Anything else on that way (a batch,
``initialize``, a session not held here, a tool whose reply Python shapes) continues exactly
where the general path would be (:meth:`~jetmcp.core.dispatch.Dispatcher.resume`,
:meth:`McpHttpApp._post_frame`); ``tests/parity/test_http_usual_post.py``
holds both to the same bytes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from jetmcp import _wire
from jetmcp.core.call import NULL_SINK, Session
from jetmcp.core.deadlines import STOP_SHUTDOWN
from jetmcp.core.dispatch import Dispatcher
from jetmcp.core.exchange import Exchange, HttpExchange, LazyExchange, Started
from jetmcp.core.reply import Reply
from jetmcp.core.threads import exit_if_abandoned
from jetmcp.errors import INTERNAL_ERROR, INVALID_REQUEST, SERVER_ERROR
from jetmcp.protocol import modern, revisions
from jetmcp.server.app import Server
from jetmcp.server.lifespan import LifespanScope
from jetmcp.settings import Settings
from jetmcp.state import (
    MemorySessionStore,
    SessionLimit,
    SessionStore,
    StateUnavailable,
    new_session_id,
)
from jetmcp.state.streams import Listener, SessionStreams
from jetmcp.transports._http import (
    ACCEPT_SSE,
    GONE,
    JSON_HEADERS,
    RETRY_AFTER,
    HttpError,
    accept_flags,
    check_length,
    first,
    header,
    incomplete_body,
    length_verdict,
    method_not_allowed,
    post_flags,
    post_refusal,
    unreadable,
)
from jetmcp.transports.auth import AuthRefusal, BearerGuard
from jetmcp.transports.body_watch import TooLarge, evict_stalled, read_chunks
from jetmcp.transports.health import HEALTH_PATHS, serve_health
from jetmcp.transports.http_reply import (
    answered,
    asks_for_auth,
    cancelling,
    chained,
    legacy_initialize,
    owned,
    respond,
    revision_of,
)
from jetmcp.transports.origin import OriginGuard
from jetmcp.transports.sse import PostStream, hold_open

if TYPE_CHECKING:
    from jetmcp.core.inflight import InFlight
    from jetmcp.core.principal import Principal
    from jetmcp.transports.http_sse import LegacySse

log = logging.getLogger("jetmcp.http")

_JSON = JSON_HEADERS
_monotonic = time.monotonic
_decode = _wire.decode
_FRAME_SINGLE = _wire.FRAME_SINGLE
_FRAME_PARSE_ERROR = _wire.FRAME_PARSE_ERROR
#: ``MCP-Protocol-Version`` values that name a legacy revision exactly as written.
LEGACY_EXACT: dict[str, revisions.Revision] = {r.version: r for r in revisions.LEGACY}
_LEGACY_EXACT = LEGACY_EXACT
#: ... and those that name a 2026-07-28-era revision exactly.
MODERN_EXACT = frozenset(r.version for r in revisions.MODERN)
_MODERN_EXACT = MODERN_EXACT
_encode_error = _wire.encode_error
_GONE = GONE
_MODERN = revisions.R2026_07_28


async def later(
    call: Callable[..., Coroutine[Any, Any, None] | None], args: tuple[Any, ...]
) -> None:
    """``call(*args)`` from inside the task that awaits this, then what it returns."""
    rest = call(*args)
    if rest is not None:
        await rest


class McpHttpApp:
    """One MCP endpoint over Streamable HTTP for every legacy revision."""

    def __init__(
        self,
        server: Server,
        settings: Settings | None = None,
        store: SessionStore | None = None,
        *,
        manage_lifespan: bool = True,
        guard: BearerGuard | None = None,
    ) -> None:
        self.settings = settings or Settings()
        #: Whether the RSGI worker hooks enter the server's lifespan (False where the
        #: runner holds it open itself: an embedded server, an ASGI app).
        self.manage_lifespan = manage_lifespan
        self.server = server
        self.dispatcher = Dispatcher.from_settings(server, self.settings)
        self.store: SessionStore = (
            store
            if store is not None
            else MemorySessionStore(
                self.settings.max_sessions,
                self.settings.session_idle_seconds,
                self.settings.max_new_sessions,
                self.settings.session_protect_seconds,
            )
        )
        # A store shared between processes relays answers and cancellations to the
        # worker they concern.
        self.dispatcher.relay = getattr(self.store, "relay", None)
        self.path = self.settings.path
        self.guard = OriginGuard(
            self.settings.allowed_hosts, self.settings.allowed_origins, self.settings.host
        )
        if guard is None and asks_for_auth(self.settings, server):
            # Fail closed: an app built without the guard its auth settings ask for would
            # serve everyone.
            raise ValueError(
                "auth is on for this server: build its app with jetmcp.run.serving.make_app, "
                "which puts the bearer guard in front of it"
            )
        #: The OAuth resource server in front of the MCP paths (None: auth is off).
        self.auth: BearerGuard | None = guard
        #: Whether a usual POST takes the short way (:meth:`_usual`, then inline in
        #: :meth:`__rsgi__`): not behind auth. False sends every request down the general
        #: path (which the differential tests compare it with).
        self.lane = self.auth is None
        #: The verdicts of :meth:`_usual`, learned and given again in one call.
        self._gate = _wire.Gate(self.settings.max_body_bytes)
        #: The shutdown that ends listen subscriptions, kept so it is not collected early.
        self._closing: asyncio.Future[None] | None = None
        self._lifespan = LifespanScope(server)
        #: Makes a POST's SSE stream when a handler first needs one (Exchange.opener).
        self._opener = self._open_stream
        #: Body reads under way (the future of each, and when it began by :attr:`_clock`),
        #: oldest first: the watch started by :meth:`__rsgi_init__` cancels those past
        #: ``body_timeout_seconds``.
        self._reading: dict[Any, float] = {}
        #: ``time.monotonic()`` as of the watch's last look (it looks every second or
        #: quarter of the timeout): a read is stamped with it, which is cheaper than the
        #: clock itself, and the watch allows for its lag.
        self._clock = 0.0
        #: Open GET streams of every session (what ``max_streams`` counts).
        self.open_streams = 0
        #: Set once the shutdown grace ran out: what is still being read is refused 503.
        self._stopping = False
        self.legacy: LegacySse | None = None
        if self.settings.sse_path and not self.settings.stateless:
            from jetmcp.transports.http_sse import LegacySse

            self.legacy = LegacySse(self)

    # RSGI entry point -------------------------------------------------------

    async def __rsgi__(self, scope: Any, proto: Any) -> None:
        if scope.proto != "http":
            return
        try:
            usual = None
            if self.lane and scope.method == "POST" and scope.path == self.path:
                # Header values seen before are judged in one call; others in Python.
                usual = self._gate.admit(scope) or self._usual(scope)
            if usual is None:
                await self._route(scope, proto)
                return
            # A usual POST (auth is off): the same reply as _post with fewer steps. A single
            # call the extension answers at once goes straight back (no Exchange is made);
            # an initialize, or a session this process cannot vouch for now, goes on as in
            # _post from the decoded body. Inline: every usual POST pays for
            # a coroutine of its own.
            # _read_sized, inline.
            reading = proto()
            watch = self._reading
            watch[reading] = self._clock
            try:
                body: bytes = await reading
            except asyncio.CancelledError:
                if cancelling():
                    raise
                raise self._body_refusal() from None
            except RuntimeError:  # granian's RSGIProtocolClosed: the body was cut short
                raise incomplete_body() from None
            finally:
                watch.pop(reading, None)
            # in_task given, not defaulted: counted, about 170 instructions per usual POST
            # less than a call that fills the default (bench/results/layout_instructions.md).
            rest = self.lane_post(usual, body, proto, True)
            if rest is not None:
                await rest
        except Exception as exc:
            self.refuse(exc, scope.method, scope.path, proto)

    def refuse(self, exc: Exception, method: str, path: str, proto: Any) -> None:
        """Answer a request that raised ``exc`` (either engine): an auth refusal or an
        :class:`HttpError` as it says, the store being down 503, a bug of ours 500 (the
        detail logged)."""
        if isinstance(exc, AuthRefusal):
            proto.response_bytes(exc.status, exc.headers, exc.body)
        elif isinstance(exc, HttpError):
            exc.send(proto)
        elif isinstance(exc, StateUnavailable):
            log.warning("%s %s: %s", method, path, exc)
            with contextlib.suppress(RuntimeError):  # unless the response already started
                proto.response_bytes(
                    503,
                    [*_JSON, RETRY_AFTER],
                    _encode_error(None, SERVER_ERROR, "Session store unavailable; retry later"),
                )
        else:
            # A bug of ours: the client gets a JSON-RPC error, the log (stderr) the detail.
            log.error("%s %s failed", method, path, exc_info=exc)
            with contextlib.suppress(RuntimeError):  # unless the response already started
                proto.response_bytes(
                    500, _JSON, _encode_error(None, INTERNAL_ERROR, "Internal error")
                )

    def lane_post(
        self,
        usual: tuple[int, revisions.Revision | None, Any, Any],
        body: bytes,
        proto: Any,
        in_task: bool,
    ) -> Coroutine[Any, Any, None] | None:
        """The usual POST once its body is read, for either engine: answered at once
        (None), or else what the caller awaits to finish it. ``usual`` is what the gate
        (:class:`jetmcp._wire.Gate` or :meth:`_usual`) judged of its headers. A single call
        the extension answers at once goes straight back (no Exchange is made); an
        initialize, or a session this process cannot vouch for now, goes on as in
        :meth:`_post` from the decoded body. Raises what :meth:`__rsgi__` answers.

        ``in_task`` False (the native engine, in a socket callback): only a call the
        extension answers at once is answered here; whatever would run a handler's async
        steps is left whole to the returned coroutine, which the caller runs as a task
        (handlers count on running inside one: ``asyncio.timeout``, ``current_task``)."""
        accept, revision, routing, headers = usual
        settings = self.settings
        frame = _decode(body, settings.max_depth, settings.max_batch)
        dispatcher = self.dispatcher
        session = None
        inflight = None
        if revision is None:
            revision = _MODERN
        elif not settings.stateless:
            session_id = headers.get("mcp-session-id")
            if session_id is not None:
                held = self.store.held(session_id)
                if (
                    held is None
                    or held.session.principal is not None
                    or held.session.revision is not revision
                ):
                    return self._post_frame(headers, proto, frame, accept, None)
                session = held.session
                inflight = held.inflight
            elif settings.require_session or "mcp-session-id" in headers:
                return self._post_frame(headers, proto, frame, accept, None)
        if frame.kind == _FRAME_SINGLE:
            # Outside a task no handler's coroutine is stepped: the task steps it.
            step = in_task and dispatcher.can_step(inflight)
            done = dispatcher.answer(frame, revision, routing, step)
            if type(done) is bytes:
                proto.response_bytes(200, _JSON, done)
                return None
            # An initialize goes on as in _post_frame. Asked only here, of a message the
            # extension left (it answers no initialize, and nothing ran): the question costs
            # a usual POST about 300 instructions. Every way above led an initialize to the
            # same _post_frame call (a session it names is looked up there again).
            if done is None and frame.initialize:
                return self._post_frame(headers, proto, frame, accept, None)
            if in_task:
                # Called with its arguments spelled out: a tuple of them and ``*args`` cost a
                # usual POST about 500 instructions more (bench/results/layout_instructions.md).
                return self.lane_resume(
                    frame, revision, session, accept, inflight, routing, proto, done, step, headers
                )
            args = (frame, revision, session, accept, inflight, routing, proto, done, step, headers)
            return later(self.lane_resume, args)
        # An array or a parse error: as _post_frame would (an exact 2026-07-28 version
        # names a served revision, so an array is not refused whole).
        if in_task:
            return self.lane_start(
                frame, revision, session, accept, inflight, routing, proto, None, False, headers
            )
        args = (frame, revision, session, accept, inflight, routing, proto, None, False, headers)
        return later(self.lane_start, args)

    def lane_resume(
        self,
        frame: _wire.Frame,
        revision: revisions.Revision,
        session: Session | None,
        accept: int,
        inflight: InFlight | None,
        routing: Any,
        proto: Any,
        done: Any,
        step: bool,
        request: Any = None,
    ) -> Coroutine[Any, Any, None] | None:
        """:meth:`lane_post` for a single call the extension did not answer at once
        (``request``: the engine's header map, kept for a tool that reads it)."""
        # Its exchange is made only if something asks: a tool that takes a Context and
        # touches nothing of its call answers with none made.
        later = LazyExchange(
            revision,
            self._exchange,
            (revision, session, accept, inflight, routing, None, proto, request),
        )
        pending = self.dispatcher.resume(frame, later, done, step)
        if later.made is None and type(pending) is bytes:
            later.answered = True
            proto.response_bytes(200, _JSON, pending)
            return None
        ex = later.exchange()
        return self._reply(proto, pending, ex)

    async def lane_eager(
        self,
        frame: _wire.Frame,
        revision: revisions.Revision,
        accept: int,
        routing: Any,
        done: _wire.Outcome | _wire.Plans,
        proto: Any,
        request: Any = None,
    ) -> bytes | None:
        """:meth:`lane_resume` for a single call with no session that the extension ran and
        handed back (an :class:`~jetmcp._wire.Outcome`: most often an ``async`` tool's
        coroutine, not stepped) or planned but left to a Context or to Python (its
        :class:`~jetmcp._wire.Plans`), run as the request's task with its first step
        allowed, as :meth:`lane_post` runs it in a task. The reply when it is a plain 200
        made with no exchange by the end of that step (the caller writes it: the native
        engine takes the step inside its socket callback, an eager task); else None, with
        the reply given to ``proto`` as :meth:`lane_resume` gives it."""
        dispatcher = self.dispatcher
        try:
            started: Started
            if type(done) is _wire.Outcome:
                settled = dispatcher.settle(done, frame, revision)
                if type(settled) is bytes:
                    return settled
                ex = self._exchange(revision, None, accept, None, routing, None, proto, request)
                if isinstance(settled, bytes):
                    started = settled  # a Reply: its kind says the status
                else:
                    started = dispatcher._finish(settled, frame.entries[0], None, ex, True)
            else:
                args = (revision, None, accept, None, routing, None, proto, request)
                later = LazyExchange(revision, self._exchange, args)
                started = dispatcher.resume(frame, later, done, dispatcher.can_step(None))
                if later.made is None and type(started) is bytes:
                    later.answered = True
                    return started
                ex = later.exchange()
            rest = self._reply(proto, started, ex)
            if rest is not None:
                await rest
        except Exception as exc:
            self.refuse(exc, "POST", self.settings.path, proto)
        return None

    def lane_start(
        self,
        frame: _wire.Frame,
        revision: revisions.Revision,
        session: Session | None,
        accept: int,
        inflight: InFlight | None,
        routing: Any,
        proto: Any,
        done: Any,
        step: bool,
        request: Any = None,
    ) -> Coroutine[Any, Any, None] | None:
        """:meth:`lane_post` for an array or a parse error."""
        ex = self._exchange(revision, session, accept, inflight, routing, None, proto, request)
        return self._reply(proto, self.dispatcher.start(frame, ex), ex)

    async def _route(self, scope: Any, proto: Any) -> None:
        """Every request but a usual POST (:meth:`_usual`) or a probe: Host, Origin checked,
        sender authenticated if auth is on, served by path, method (raises what __rsgi__ answers)"""
        if scope.path in HEALTH_PATHS:  # never behind the Host/Origin checks or auth
            return await serve_health(self, scope, proto, self._closing)
        refusal = self.guard.refusal(scope)
        if refusal is not None:
            status, why = refusal
            proto.response_bytes(status, _JSON, _encode_error(None, INVALID_REQUEST, why))
            return
        headers = scope.headers
        principal = None
        auth = self.auth
        if auth is not None:
            path = scope.path
            if path in auth.metadata_paths:
                auth.serve_metadata(proto, scope.method)
                return
            if path == self.path or (self.legacy is not None and self.legacy.serves(path)):
                principal = auth.cached(headers)
                if principal is None:
                    principal = await auth.principal(headers)
        if scope.path == self.path:
            method = scope.method
            if method == "POST":
                await self._post(scope, proto, principal)
            elif modern.is_modern_version(header(headers, "mcp-protocol-version")):
                # 2026-07-28 has no GET stream and no session to DELETE.
                method_not_allowed(proto, method, "POST")
            elif method == "GET" and not self.settings.stateless:
                await self._get(scope, proto, principal)
            elif method == "DELETE" and not self.settings.stateless:
                await self._delete(scope, proto, principal)
            else:
                allow = "POST" if self.settings.stateless else "GET, POST, DELETE"
                method_not_allowed(proto, method, allow)
        elif self.legacy is not None and self.legacy.serves(scope.path):
            await self.legacy.handle(scope, proto, principal)
        else:
            proto.response_bytes(404, _JSON, _encode_error(None, INVALID_REQUEST, "Not found"))

    def __rsgi_init__(self, loop: Any) -> None:
        """Enter the server's lifespan before the worker serves anything, start the watch on
        body reads, and stop gracefully when the worker is told to: open SSE streams close at
        once (granian drains in-flight responses before it exits, and a stream left open
        would hold it); requests still running get ``shutdown_grace_seconds`` to finish,
        then are answered with an error."""
        if self.manage_lifespan:
            self._lifespan.start_on(loop)
        start = getattr(self.store, "start_on", None)
        if start is not None:
            start(loop)
        if self.settings.body_timeout_seconds > 0:
            loop.call_soon(self._watch_bodies)
        for signum in (signal.SIGTERM, signal.SIGINT):
            try:
                previous = signal.getsignal(signum)
                signal.signal(signum, chained(previous, loop, self.shutdown))
            except (ValueError, OSError):  # not the main thread: nothing to hook
                return

    def __rsgi_del__(self, loop: Any) -> None:
        """Leave the server's lifespan once the worker has stopped serving."""
        if self.manage_lifespan:
            self._lifespan.stop_on(loop)
        close = getattr(self.store, "close", None)
        if close is not None and not loop.is_closed():
            with contextlib.suppress(Exception):
                loop.run_until_complete(close())
        # Tool calls still running in threads now are abandoned: the exit status says so.
        exit_if_abandoned(f"worker pid {os.getpid()}")

    def shutdown(self) -> None:
        """Begin a graceful stop (see :meth:`__rsgi_init__`); a second call changes nothing."""
        if self._closing is not None:
            return
        self.close_streams()
        asyncio.get_running_loop().call_later(
            self.settings.shutdown_grace_seconds, self.stop_requests
        )

    def stop_requests(self) -> None:
        """The grace period is over: answer every request still waiting with an error
        (-32000, HTTP 503) and refuse the bodies still being read."""
        self._stopping = True
        # A request that still comes in on a connection kept open is refused at once.
        self.dispatcher.max_inflight = 0
        stopped = self.dispatcher.deadlines.stop_all(STOP_SHUTDOWN)
        reading = list(self._reading)
        self._reading.clear()
        for future in reading:
            future.cancel()
        if stopped or reading:
            log.warning(
                "shutdown grace over: stopped %d requests and %d body reads",
                stopped,
                len(reading),
            )

    def _watch_bodies(self) -> None:
        """Cancel the body reads past their limit (they answer 408; the limit is the body
        timeout, or the header timeout when body reads fill half the connection cap: see
        :mod:`jetmcp.transports.body_watch`), then look again in a while."""
        now = self._clock = _monotonic()
        interval = evict_stalled(self._reading, now, self.settings)
        asyncio.get_running_loop().call_later(interval, self._watch_bodies)

    def _body_refusal(self) -> HttpError:
        """What a body read cancelled by the watch (or by the end of the grace) answers."""
        if self._stopping:
            return HttpError(503, SERVER_ERROR, "Server shutting down; retry later", [RETRY_AFTER])
        return HttpError(
            408,
            INVALID_REQUEST,
            f"Request body not received within {self.settings.body_timeout_seconds:g} seconds",
        )

    async def _read_sized(self, proto: Any) -> bytes:
        """The body of a request with a ``Content-Length`` (checked by the caller), within
        ``body_timeout_seconds``. :meth:`__rsgi__` has the same lines inline (a usual POST)."""
        reading = proto()
        watch = self._reading
        watch[reading] = self._clock
        try:
            body: bytes = await reading
        except asyncio.CancelledError:
            if cancelling():
                raise
            raise self._body_refusal() from None
        except RuntimeError:  # granian's RSGIProtocolClosed: the body was cut short
            raise incomplete_body() from None
        finally:
            watch.pop(reading, None)
        return body

    def close_streams(self) -> None:
        """End every open SSE stream of this app (GET streams of every session, legacy
        HTTP+SSE connections) and every 2026-07-28 ``subscriptions/listen`` with its final
        result. Requests still running finish on their own."""
        self._closing = asyncio.ensure_future(self.server.close_subscriptions())
        for session in list(self.server.sessions):
            if isinstance(session.outbound, SessionStreams):
                session.outbound.close()
        if self.legacy is not None:
            for conn in list(self.legacy.connections.values()):
                conn.close()

    # POST -------------------------------------------------------------------

    async def read_body(self, headers: Any, proto: Any) -> bytes:
        """A request's whole body, within ``max_body_bytes`` and ``body_timeout_seconds``
        (the HTTP errors those call for raised as :class:`HttpError`)."""
        length = first(headers, "content-length")
        if length is not None:
            check_length(length, self.settings.max_body_bytes)
            return await self._read_sized(proto)
        return await self._read_chunked(proto)

    async def _read_chunked(self, proto: Any) -> bytes:
        """A body sent without ``Content-Length``, refused (413) once past the limit. Its
        read is watched like :meth:`_read_sized`'s (it counts towards the pressure on the
        connection cap and is cut short with it: 408 past the body timeout, or past the
        header timeout under pressure)."""
        reading = asyncio.ensure_future(read_chunks(proto, self.settings.max_body_bytes))
        watch = self._reading
        watch[reading] = self._clock
        try:
            return await reading
        except asyncio.CancelledError:
            if cancelling():
                raise
            raise self._body_refusal() from None
        except TooLarge as exc:
            raise HttpError(413, INVALID_REQUEST, str(exc)) from None
        except RuntimeError:
            raise incomplete_body() from None
        finally:
            watch.pop(reading, None)

    def _usual(self, scope: Any) -> tuple[int, revisions.Revision | None, Any, Any] | None:
        """Whether a POST to the MCP path is the usual one, judged on its headers alone: one
        allowed Host (agreeing with ``:authority``), no Origin, JSON in, an ``Accept`` that
        takes a reply, a ``Content-Length`` within the limit and an ``MCP-Protocol-Version``
        that names a served revision exactly. If so, its accept flags, its revision (None: a
        2026-07-28 one), its routing headers (2026-07-28) and its header map, for
        :meth:`__rsgi__`'s short way; such a request passes every check of the general
        path. Anything else, None: the general path judges it (and refuses what it must).
        Only without auth (:attr:`lane`).

        The verdict on the header values is taught to the gate (:class:`jetmcp._wire.Gate`),
        which gives it again for the next request that carries them, making the checks that
        vary per request itself."""
        headers = scope.headers
        hosts = headers.get_all("host")
        if len(hosts) != 1:
            return None
        host = hosts[0]
        authority = scope.authority
        if (
            (authority is not None and authority != host)
            or not self.guard.host_allowed(host)
            or "origin" in headers
        ):
            return None
        content_type = first(headers, "content-type")
        accept_header = first(headers, "accept")
        accept = post_flags(content_type, accept_header)
        length = first(headers, "content-length")
        if accept <= 0 or length is None or length_verdict(length, self.settings.max_body_bytes):
            return None
        version = first(headers, "mcp-protocol-version")
        if version is None:
            return None
        revision = _LEGACY_EXACT.get(version)
        if revision is None and version not in _MODERN_EXACT:
            return None
        self._gate.learn(host, content_type, accept_header, version, accept, revision)
        if revision is not None:
            return accept, revision, None, headers
        return accept, None, _wire.Headers.from_map(headers), headers

    async def _post(self, scope: Any, proto: Any, principal: Principal | None = None) -> None:
        """A POST to the MCP path (its Host and Origin checked, its sender authenticated
        when auth is on)."""
        headers = scope.headers
        accept = post_flags(first(headers, "content-type"), first(headers, "accept"))
        if accept <= 0:
            raise post_refusal(accept)
        body = await self.read_body(headers, proto)
        frame = _decode(body, self.settings.max_depth, self.settings.max_batch)
        await self._post_frame(headers, proto, frame, accept, principal)

    async def _post_frame(
        self,
        headers: Any,
        proto: Any,
        frame: _wire.Frame,
        accept: int,
        principal: Principal | None,
    ) -> None:
        """A POST's decoded body: its revision and session found (or refused) from the
        headers, then dispatched and answered."""
        settings = self.settings
        version = first(headers, "mcp-protocol-version")
        # The usual header names a legacy revision exactly: one lookup, no parsing.
        if version is not None:
            header_rev = _LEGACY_EXACT.get(version)
        else:
            header_rev = None
            unreadable(headers, "mcp-protocol-version")
        if header_rev is None and (version in _MODERN_EXACT or modern.is_modern_version(version)):
            if not (frame.initialize and legacy_initialize(frame)):
                rest = self._post_modern(headers, proto, frame, accept, version, principal)
                if rest is not None:
                    await rest
                return
            version = None  # the handshake negotiates in its body

        session = None
        inflight = None
        session_id = None if settings.stateless else first(headers, "mcp-session-id")
        if session_id is not None:
            # A session known here: no coroutine to await.
            held = self.store.held(session_id)
            if held is not None:
                session = owned(held.session, principal)
                inflight = held.inflight
            else:
                session = owned(await self.store.get(session_id), principal)
                inflight = self.store.inflight(session_id)
        elif not settings.stateless:
            unreadable(headers, "mcp-session-id")
        if header_rev is not None and (session is None or header_rev is session.revision):
            revision = header_rev  # what _revision finds for a header that names it exactly
        else:
            revision = revision_of(version, session)

        if (
            session is None
            and settings.require_session
            and not settings.stateless
            and not frame.initialize
        ):
            raise HttpError(400, INVALID_REQUEST, "Missing Mcp-Session-Id header")
        ex = self._exchange(revision, session, accept, inflight, None, principal, proto, headers)
        rest = self._reply(proto, self.dispatcher.start(frame, ex), ex)
        if rest is not None:
            await rest

    def _exchange(
        self,
        revision: revisions.Revision,
        session: Session | None,
        accept: int,
        inflight: InFlight | None,
        routing: _wire.Headers | None,
        principal: Principal | None,
        proto: Any,
        request: Any,
    ) -> Exchange:
        """The exchange of a POST. Its reply turns into an SSE stream only if a handler
        sends something before its result, and only for a client that takes one; otherwise
        notifications are dropped and server-to-client requests refused (NULL_SINK). The
        stream is made only when a handler first asks for it (:meth:`_open_stream`)."""
        ex = HttpExchange(  # by position (see Exchange.__init__)
            revision,
            session,
            None if accept & ACCEPT_SSE else NULL_SINK,  # sink
            inflight,
            True,  # answer_cancelled: a POST that carried a request is always answered
            routing,  # headers
            False,  # sniff_meta
            None,  # outgoing
            principal,  # auth
            True,  # eager
            self._opener,
            proto,  # channel
        )
        ex.http_headers = request  # the engine's header map, decoded only if a tool reads it
        return ex

    def _reply(
        self, proto: Any, pending: Started, ex: Exchange
    ) -> Coroutine[Any, Any, None] | None:
        """Answer a POST with what the dispatcher gave back: at once (None), or else what
        the caller awaits to finish it (:meth:`_reply_later`)."""
        # The usual answer, given at once (unless a handler's first step began a stream).
        if type(pending) is bytes and (ex.opened is None or answered(ex)):
            ex.opener = None  # a handler still running sends into NULL_SINK from now on
            proto.response_bytes(200, _JSON, pending)
            return None
        return self._reply_later(proto, pending, ex)

    async def _reply_later(self, proto: Any, pending: Started, ex: Exchange) -> None:
        """:meth:`_reply` when it cannot answer at once: a new session (the reply to a
        legacy ``initialize``) is stored first and named in ``Mcp-Session-Id``, then the
        reply awaited and sent (:func:`_respond`)."""
        settings = self.settings
        out_headers = _JSON
        new = pending.session if isinstance(pending, Reply) else None
        if new is not None and not settings.stateless and ex.revision.sessions:
            new.id = new_session_id()
            new.outbound = SessionStreams(settings)
            try:
                await self.store.add(new)
            except SessionLimit as exc:
                if not isinstance(pending, bytes | None):
                    pending.close()
                raise HttpError(
                    503,
                    INTERNAL_ERROR,
                    f"Server busy: {exc}; try again later",
                    [("retry-after", str(max(1, round(settings.session_protect_seconds))))],
                ) from None
            out_headers = [*_JSON, ("mcp-session-id", new.id)]
            stream = ex.sink  # made now, if not yet: it must name the new session
            if type(stream) is PostStream:
                stream.session_id = new.id
        await respond(proto, pending, ex, out_headers)

    def _open_stream(self, ex: Exchange) -> PostStream:
        """The sink of a POST whose client takes SSE (``ex.channel``: its RSGI protocol)."""
        return PostStream(self.settings, ex.channel, ex.revision, ex.session)

    def _post_modern(
        self,
        headers: Any,
        proto: Any,
        frame: _wire.Frame,
        accept: int,
        version: Any,
        principal: Principal | None = None,
    ) -> Coroutine[Any, Any, None] | None:
        """A 2026-07-28 POST: no session (``Mcp-Session-Id`` is ignored and none is minted),
        the reply JSON or, once a handler sends a notification, an SSE stream that never
        carries a server request. A client that disconnects cancels its request.

        A single request is checked against its own ``_meta`` by the dispatcher; an array
        names no request, so a header that names no served revision refuses it whole.
        Answered at once, or else what the caller awaits to finish it."""
        if frame.kind != _FRAME_SINGLE and frame.kind != _FRAME_PARSE_ERROR:
            requested = str(version).strip()
            if revisions.lookup_modern(requested) is None:
                exc = modern.unsupported_version(requested)
                body = _encode_error(None, exc.code, exc.message, exc.data)
                proto.response_bytes(400, _JSON, body)
                return None
        routing = _wire.Headers.from_map(headers)
        ex = self._exchange(_MODERN, None, accept, None, routing, principal, proto, headers)
        return self._reply(proto, self.dispatcher.start(frame, ex), ex)

    # GET --------------------------------------------------------------------

    async def _get(self, scope: Any, proto: Any, principal: Principal | None = None) -> None:
        """The session's standalone SSE stream, or the resumption of one of its streams
        (``Last-Event-ID``)."""
        headers = scope.headers
        accept = first(headers, "accept")
        if accept is not None and not accept_flags(accept) & ACCEPT_SSE:
            raise HttpError(406, INVALID_REQUEST, "Not Acceptable: GET serves text/event-stream")
        session_id = header(headers, "mcp-session-id")
        if session_id is None:
            raise HttpError(400, INVALID_REQUEST, "Missing Mcp-Session-Id header")
        session = owned(await self.store.get(session_id), principal)
        revision_of(header(headers, "mcp-protocol-version"), session)
        hub = session.outbound
        if not isinstance(hub, SessionStreams) or hub.closed:
            raise HttpError(404, INVALID_REQUEST, "Session not found")
        try:
            resume = await hub.find_resume(first(headers, "last-event-id"))
        except LookupError:
            raise HttpError(
                400, INVALID_REQUEST, "Last-Event-ID names no stream this session can replay"
            ) from None
        settings = self.settings
        if self.open_streams >= settings.max_streams:
            raise HttpError(503, SERVER_ERROR, "Too many open streams; retry later", [RETRY_AFTER])
        if hub.connections >= settings.max_session_streams and not (
            resume is not None and hub.connected(resume[0])
        ):
            # A resumption of a stream that is open replaces its connection: let it in.
            raise HttpError(
                409,
                INVALID_REQUEST,
                f"Conflict: this session has {hub.connections} open streams, the most allowed",
            )
        self.open_streams += 1
        hub.connections += 1
        try:
            await self._stream(proto, hub, resume, session, session_id)
        finally:
            self.open_streams -= 1
            hub.connections -= 1

    async def _stream(
        self,
        proto: Any,
        hub: SessionStreams,
        resume: tuple[str, int] | None,
        session: Session,
        session_id: str,
    ) -> None:
        """Serve an accepted GET: the hub replays and carries the stream."""
        await hub.serve_get(
            proto,
            resume,
            session.revision.sse_priming,
            lambda listener, transport: self._hold(listener, transport, proto, session_id),
        )

    async def _hold(self, listener: Listener, transport: Any, proto: Any, session_id: str) -> None:
        """Keep a GET stream open until it is closed (by the session, DELETE, a newer
        resumption) or its client leaves; a keep-alive comment goes out on every idle
        ``keepalive_seconds``, which also keeps the session from idling out."""
        await hold_open(
            listener,
            transport,
            proto,
            self.settings.keepalive_seconds,
            lambda: self._alive(session_id),
        )

    async def _alive(self, session_id: str) -> bool:
        return await self.store.get(session_id) is not None

    # DELETE -----------------------------------------------------------------

    async def _delete(self, scope: Any, proto: Any, principal: Principal | None = None) -> None:
        """End the session: its in-flight requests are cancelled, its streams closed."""
        session_id = header(scope.headers, "mcp-session-id")
        if session_id is None:
            raise HttpError(400, INVALID_REQUEST, "Missing Mcp-Session-Id header")
        if self.auth is not None:
            owned(await self.store.get(session_id), principal)
        if not await self.store.remove(session_id):
            raise HttpError(404, INVALID_REQUEST, "Session not found")
        proto.response_empty(204, [])
