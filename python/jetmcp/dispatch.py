"""The one dispatcher: a decoded frame in, one reply (or nothing) out.

Both transports call :meth:`Dispatcher.start`; they only decide the revision and the
session beforehand and write the bytes afterwards (awaiting the coroutine ``start`` gives back
when a handler has to wait), so HTTP and stdio behave the same by construction.

Handlers may return their result directly (work that never waits) or an awaitable. In a
batch, direct results are taken in place and only awaitables become tasks that run
concurrently (``asyncio.gather``); the reply lists every entry in request order.

Only requests that wait pay for limits: each awaitable is bounded by a deadline (the
server's request timeout, or its handler's own: :class:`~jetmcp.call.Timed`) kept in
:class:`~jetmcp.deadlines.Deadlines`, and by caps on how many wait at once, in all and per
session; past a cap a request is answered at once, never queued.

Revision 2026-07-28 (stateless) is a branch of the same machinery: a frame the transport
routes there (``Exchange.revision.modern``), or a stdio line whose requests carry a
``_meta`` protocol version, has each request checked on its own by the rules of
:mod:`jetmcp.protocol.modern` and each result completed with ``resultType`` and the
server's identity.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Coroutine
from typing import TYPE_CHECKING, Any

from orjson import loads

from jetmcp import _wire
from jetmcp.call import (
    LOG_RANK,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    NULL_SINK,
    Call,
    EncodedResult,
    Handler,
    Outgoing,
    Session,
    Sink,
    Timed,
)
from jetmcp.deadlines import NO_DEADLINE, STOP_TIMEOUT, Deadlines
from jetmcp.errors import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    REQUEST_CANCELLED,
    REQUEST_TIMEOUT,
    SERVER_ERROR,
    McpError,
)
from jetmcp.protocol import modern, revisions
from jetmcp.protocol.modern import RoutingHeaders
from jetmcp.protocol.revisions import Revision
from jetmcp.settings import (
    MAX_INFLIGHT,
    MAX_SESSION_INFLIGHT,
    REQUEST_TIMEOUT_SECONDS,
    Settings,
)

if TYPE_CHECKING:
    from jetmcp.server.app import Server
    from jetmcp.server.tools import Tool
    from jetmcp.sessions.base import Relay

log = logging.getLogger("jetmcp")

_REQUEST = _wire.REQUEST
_NOTIFICATION = _wire.NOTIFICATION
_RESPONSE = _wire.RESPONSE
_INVALID = _wire.INVALID
_FRAME_SINGLE = _wire.FRAME_SINGLE
_FRAME_BATCH = _wire.FRAME_BATCH
_FRAME_PARSE_ERROR = _wire.FRAME_PARSE_ERROR
_FRAME_EMPTY_BATCH = _wire.FRAME_EMPTY_BATCH
#: ``Settings.max_client_data_bytes``'s default.
DEFAULT_MAX_CLIENT_DATA_BYTES = 16 * 1024
_encode_result = _wire.encode_result
_encode_error = _wire.encode_error
_route = _wire.route
_route_batch = _wire.route_batch
_route_all = _wire.route_all
#: What the extension may call by itself when none of the server's tools can be.
_NO_ROUTES = _wire.Routes()
#: The ``_meta`` key that makes a stdio request a 2026-07-28 one, as it stands in the bytes.
_MODERN_KEY = f'"{META_PROTOCOL_VERSION}"'.encode()
_current_task = asyncio.current_task


def _initialize_marker(params: dict[str, Any], call: Call) -> dict[str, Any]:
    raise AssertionError("initialize is answered by the dispatcher itself")


_INITIALIZE: Handler = _initialize_marker


def _id_key(value: Any) -> tuple[bool, Any]:
    # "1" and 1 are different ids; the flag keeps them apart in one dict.
    return (isinstance(value, str), value)


def _is_request_id(value: Any) -> bool:
    # Exact types: True == 1.0 == 1 in Python, and a list or an object is not hashable.
    return type(value) is str or type(value) is int


class Running:
    """One request owed an answer: whether the client cancelled it, and the task running it
    (None while it has not started)."""

    __slots__ = ("cancelled", "key", "task")

    def __init__(self, key: tuple[bool, Any]) -> None:
        self.key = key
        self.cancelled = False
        self.task: asyncio.Task[Any] | None = None

    def cancel(self) -> None:
        self.cancelled = True
        if self.task is not None:
            self.task.cancel()


class InFlight:
    """The requests of one client scope (an HTTP session or a stdio process) that are still
    owed an answer, so ``notifications/cancelled`` can stop them.

    A request is registered the moment it is found to wait, before its task first runs, so
    a cancel that arrives right behind it (even in the same read) still finds it. Ids must
    be unique among a client's requests, but nothing stops a client from reusing one: every
    request running under an id is kept, and a cancel of that id stops all of them.
    """

    __slots__ = ("running", "waiting")

    def __init__(self) -> None:
        #: id -> the requests running under it (usually one).
        self.running: dict[tuple[bool, Any], set[Running]] = {}
        #: Requests of this scope waiting now (what the per-session cap counts).
        self.waiting = 0

    def register(self, raw_id: bytes) -> Running:
        key = _id_key(loads(raw_id))
        slot = Running(key)
        slots = self.running.get(key)
        if slots is None:
            self.running[key] = {slot}
        else:
            slots.add(slot)
        return slot

    def release(self, slot: Running) -> None:
        """Forget a request that was answered (or cancelled)."""
        slots = self.running.get(slot.key)
        if slots is not None:
            slots.discard(slot)
            if not slots:
                del self.running[slot.key]

    def cancel(self, request_id: Any) -> bool:
        """Stop every request running under this id; False when there is none (or the value
        cannot be a request id)."""
        if not _is_request_id(request_id):
            return False
        slots = self.running.get(_id_key(request_id))
        if not slots:
            return False
        for slot in list(slots):
            slot.cancel()
        return True

    def cancel_all(self) -> None:
        for slots in list(self.running.values()):
            for slot in list(slots):
                slot.cancel()


class Exchange:
    """One inbound body: what the transport knows about it, and what dispatch changed.

    ``http_status`` is the status a single reply should carry (HTTP only);
    ``new_session`` is set when the body was an ``initialize`` that opened a session.
    A 2026-07-28 body has ``revision.modern``; over HTTP ``headers`` then holds its routing
    headers. ``sniff_meta`` (stdio) serves a line the modern way when its requests carry a
    ``_meta`` protocol version, whatever the session negotiated. ``outgoing`` is where the
    client's answers to server-to-client requests are looked up (and where this body's
    handlers register theirs): the session's own table when None and there is a session,
    else the dispatcher's table for session-less requests.
    """

    __slots__ = (
        "answer_cancelled",
        "headers",
        "http_status",
        "inflight",
        "new_session",
        "outgoing",
        "revision",
        "session",
        "sink",
        "sniff_meta",
    )

    def __init__(
        self,
        revision: Revision,
        session: Session | None,
        sink: Sink = NULL_SINK,
        inflight: InFlight | None = None,
        *,
        answer_cancelled: bool = False,
        headers: RoutingHeaders | None = None,
        sniff_meta: bool = False,
        outgoing: Outgoing | None = None,
    ) -> None:
        self.revision = revision
        self.session = session
        self.sink = sink
        self.inflight = inflight
        #: Whether a cancelled request still gets an error reply. stdio sends nothing for it,
        #: as the spec asks; an HTTP POST that carried a request must be answered all the same.
        self.answer_cancelled = answer_cancelled
        self.new_session: Session | None = None
        self.http_status = 200
        self.headers = headers
        self.sniff_meta = sniff_meta
        self.outgoing = outgoing


class _Modern:
    """A 2026-07-28 handler that has to wait: its result is completed (``resultType``,
    server identity) once it arrives; ``status`` says an error sets the HTTP status (a
    single request, not a batch entry)."""

    __slots__ = ("awaitable", "revision", "status")

    def __init__(self, awaitable: Awaitable[dict[str, Any]], revision: Revision, status: bool):
        self.awaitable = awaitable
        self.revision = revision
        self.status = status

    def __await__(self) -> Any:
        return self.awaitable.__await__()


class Dispatcher:
    """Runs the methods of one :class:`~jetmcp.server.app.Server` for any transport."""

    def __init__(
        self,
        server: Server,
        *,
        modern_batch: bool = True,
        max_batch: int = _wire.DEFAULT_MAX_BATCH,
        max_client_data_bytes: int = DEFAULT_MAX_CLIENT_DATA_BYTES,
        request_timeout: float = REQUEST_TIMEOUT_SECONDS,
        max_inflight: int = MAX_INFLIGHT,
        max_session_inflight: int = MAX_SESSION_INFLIGHT,
    ) -> None:
        self.server = server
        #: The most a session keeps of what its client sent at ``initialize``.
        self.max_client_data_bytes = max_client_data_bytes
        #: Batches at 2026-07-28 (jetmcp's ``io.jetmcp/batch`` extension), and their bound.
        self.modern_batch = modern_batch
        self.max_batch = max_batch
        #: Seconds a waiting request may take unless its handler says otherwise (a tool's
        #: ``timeout``); 0 or less: no limit.
        self.request_timeout = request_timeout if request_timeout > 0 else NO_DEADLINE
        #: Requests that may wait at once, in all and per session (or stdio process).
        self.max_inflight = max_inflight
        self.max_session_inflight = max_session_inflight
        #: Every request waiting now, with its deadline.
        self.deadlines = Deadlines()
        #: Server-to-client requests of session-less requests (a session, an HTTP+SSE
        #: connection or a stdio process has its own table: see :class:`Exchange`).
        self.outgoing = Outgoing()
        #: Where a session's answers and cancellations go when what they concern runs in
        #: another process (sessions in a shared store); None: nowhere.
        self.relay: Relay | None = None
        #: Methods the dispatcher answers itself, looked up before the server's handlers
        #: (``initialize`` maps to a marker: it is answered apart).
        self._builtins: dict[str, Handler] = {
            "initialize": _INITIALIZE,
            "ping": self._ping,
            "logging/setLevel": self._set_level,
        }
        #: Kept bound once: the extension calls it for routed calls it leaves to Python.
        self._on_python = self._routed
        #: What the dispatcher answers itself at 2026-07-28.
        self._modern_builtins: dict[str, Handler] = {"server/discover": self._discover}

    @classmethod
    def from_settings(cls, server: Server, settings: Settings) -> Dispatcher:
        """The dispatcher of a transport, with the limits ``settings`` give."""
        return cls(
            server,
            modern_batch=settings.modern_batch,
            max_batch=settings.max_batch,
            max_client_data_bytes=settings.max_client_data_bytes,
            request_timeout=settings.request_timeout_seconds,
            max_inflight=settings.max_inflight,
            max_session_inflight=settings.max_session_inflight,
        )

    # ------------------------------------------------------------------ frames

    def start(
        self, frame: _wire.Frame, ex: Exchange
    ) -> bytes | Coroutine[Any, Any, bytes | None] | None:
        """Do all the work that needs no waiting now; return the reply, or a coroutine that
        finishes it when some handler has to wait (the caller runs it in a task).

        Calls of plain tools are answered by the extension (:func:`jetmcp._wire.route`),
        every other entry here, in request order either way."""
        kind = frame.kind
        if kind == _FRAME_SINGLE:
            routed = self.route(frame, ex.revision)
            if routed is not None:
                return routed
            entry = frame.entries[0]
            reply = self._run_entry(entry, ex, False)
            if reply is None:
                return None
            if isinstance(reply, bytes):
                if entry.kind == _INVALID:
                    ex.http_status = 400
                return reply
            return self._finish(reply, entry, self._register(entry, ex), ex, True)
        if kind == _FRAME_PARSE_ERROR:
            ex.http_status = 400
            return _encode_error(None, -32700, f"Parse error: {frame.error}")
        # Arrays: the revision decides first, whatever they hold (seed 000); at 2026-07-28
        # the io.jetmcp/batch extension does (seed 002). A stdio array is a 2026-07-28 one
        # when a request in it says so (a single message is told apart in _run_entry).
        if ex.sniff_meta and not ex.revision.modern and _carries_modern_meta(frame):
            ex.revision = revisions.R2026_07_28
        revision = ex.revision
        if not (self.modern_batch if revision.modern else revision.batching):
            return _encode_error(
                None,
                INVALID_REQUEST,
                f"Batches are not supported in protocol revision {revision.version}",
            )
        if revision.modern and ex.headers is not None and ex.headers.routes:
            ex.http_status = 400
            return _encode_error(
                None,
                HEADER_MISMATCH,
                "Header mismatch: a batch names no single request, so it carries no "
                "Mcp-Method, Mcp-Name or Mcp-Param-* header",
            )
        if kind == _FRAME_EMPTY_BATCH:
            return _encode_error(None, INVALID_REQUEST, "Invalid Request: empty batch")
        if kind != _FRAME_BATCH:
            ex.http_status = 413
            return _encode_error(None, INVALID_REQUEST, f"Invalid Request: {frame.error}")
        # At 2026-07-28 every request is checked on its own first: none is routed.
        replies = _route_batch(
            frame,
            _NO_ROUTES if revision.modern else self._routes(),
            revision,
            revision.structured_output,
            self._on_python,
            lambda entry: self._slot(entry, ex),
        )
        if replies is None or isinstance(replies, bytes):
            return replies
        return self._gather(replies, ex)

    def route(self, frame: _wire.Frame, revision: Revision) -> bytes | None:
        """The reply to a single message that calls a plain tool, or to a batch whose
        entries all do (where the revision takes batches), answered in the extension; None
        (nothing ran) otherwise. At 2026-07-28 nothing is routed: every request is checked
        on its own first. A transport may call this before it builds anything for
        :meth:`start`, which routes single messages too."""
        kind = frame.kind
        if revision.modern:
            return None
        if kind == _FRAME_SINGLE:
            answer = _route
        elif kind == _FRAME_BATCH and revision.batching:
            answer = _route_all
        else:
            return None
        return answer(frame, self._routes(), revision, revision.structured_output, self._on_python)

    def _routes(self) -> _wire.Routes:
        """The tools the extension may call, unless ``tools/call`` was given another handler."""
        server = self.server
        if server.handlers.get("tools/call") is server.builtin_call_tool:
            return server.routes
        return _NO_ROUTES

    def _routed(
        self, tool: Tool, raw_id: bytes, revision: Revision, outcome: Any, failed: bool
    ) -> bytes:
        """The reply to a routed call whose outcome the extension leaves to Python: a
        return value other than a plain ``int``/``str``/``bool``, or an exception."""
        try:
            result = tool.failure(outcome, revision) if failed else tool.shape(outcome, revision)
            return _encode_result(raw_id, result)
        except McpError as exc:
            return self._error_reply(raw_id, exc)
        except Exception:
            log.exception("handler for tools/call failed")
            return _encode_error(raw_id, INTERNAL_ERROR, "Internal error")

    def _slot(self, entry: _wire.Entry, ex: Exchange) -> Any:
        """One batch entry the extension did not answer: its reply, None when nothing is
        owed, or (awaitable, entry, in-flight slot) when it has to wait (registered at once,
        so a cancel later in the same batch finds it)."""
        reply = self._run_entry(entry, ex, True)
        if reply is None or type(reply) is bytes:
            return reply
        return (reply, entry, self._register(entry, ex))

    async def _gather(self, slots: list[Any], ex: Exchange) -> bytes | None:
        tasks: list[asyncio.Task[bytes | None]] = []
        for i, slot in enumerate(slots):
            if not isinstance(slot, bytes):
                pending, entry, running = slot
                task = asyncio.create_task(self._finish(pending, entry, running, ex, False))
                tasks.append(task)
                slots[i] = task
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            raise
        parts: list[bytes] = []
        for slot in slots:
            reply = slot if isinstance(slot, bytes) else slot.result()
            if reply is not None:
                parts.append(reply)
        return _wire.encode_batch(parts) if parts else None

    # ------------------------------------------------------------------ entries

    def _run_entry(
        self, entry: _wire.Entry, ex: Exchange, in_batch: bool
    ) -> bytes | Awaitable[dict[str, Any]] | None:
        """Start one entry: bytes when answered at once, an awaitable of the result when the
        handler must wait, None when nothing is owed (notifications, responses)."""
        if ex.revision.modern:
            return self._run_modern(entry, ex, in_batch)
        kind = entry.kind
        if kind == _REQUEST:
            # The hot path of every request: each line here is paid once per entry.
            raw_id: bytes = entry.raw_id  # type: ignore[assignment]  # a REQUEST has both
            method: str = entry.method  # type: ignore[assignment]
            try:
                params = entry.params()  # None when absent
                if params is None:
                    params = {}
                elif type(params) is not dict:  # JSON gives exactly dict or list
                    raise McpError(INVALID_PARAMS, "Invalid params: must be an object")
                elif ex.sniff_meta:
                    meta = params.get("_meta")
                    if type(meta) is dict and META_PROTOCOL_VERSION in meta:
                        # stdio: this request is a 2026-07-28 one, whatever the session.
                        return self._modern_request(entry, ex, in_batch, params)
                handler = self._builtins.get(method)
                if handler is None:
                    handler = self.server.handlers.get(method)
                    if handler is None:
                        raise McpError(METHOD_NOT_FOUND, f"Method not found: {method}")
                elif handler is _INITIALIZE:
                    if in_batch:
                        raise McpError(
                            INVALID_REQUEST, "Invalid Request: initialize must not be batched"
                        )
                    return _encode_result(raw_id, self._initialize(params, ex))
                result = handler(
                    params,
                    Call(
                        method,
                        raw_id,
                        ex.revision,
                        ex.session,
                        ex.sink,
                        params.get("_meta"),
                        self._outgoing(ex),
                    ),
                )
                if isinstance(result, dict):
                    if type(result) is EncodedResult:
                        return _encode_result(raw_id, result.json)
                    return _encode_result(raw_id, result)
                return result
            except McpError as exc:
                return self._error_reply(raw_id, exc)
            except Exception:
                log.exception("handler for %s failed", method)
                return _encode_error(raw_id, INTERNAL_ERROR, "Internal error")
        if kind == _NOTIFICATION:
            self._notification(entry, ex)
            return None
        if kind == _RESPONSE:
            # An answer to one of our server-to-client requests; nothing is owed back. It is
            # looked up only among the requests of this client's own scope.
            if entry.raw_id is not None:
                answer_id = loads(entry.raw_id)
                value = entry.result()
                if not self._outgoing(ex).resolve(answer_id, entry.is_error, value):
                    shared = self._shared_session(ex)
                    if shared is not None:
                        # The request may wait in another worker of the same session.
                        shared[0].answer(shared[1], answer_id, entry.is_error, value)
                    else:
                        log.debug("dropped a response that answers no request of its sender")
            return None
        return _encode_error(entry.raw_id, INVALID_REQUEST, f"Invalid Request: {entry.reason}")

    def _outgoing(self, ex: Exchange) -> Outgoing:
        """The server-to-client requests of the client that sent ``ex``."""
        if ex.outgoing is not None:
            return ex.outgoing
        session = ex.session
        return session.outgoing if session is not None else self.outgoing

    def _shared_session(self, ex: Exchange) -> tuple[Relay, str] | None:
        """The relay and ``ex``'s session id when other processes serve that session too (a
        relay is set and the session is not a connection's own, as an HTTP+SSE one is)."""
        relay = self.relay
        session = ex.session
        if relay is None or ex.outgoing is not None or session is None or session.id is None:
            return None
        return relay, session.id

    def _register(self, entry: _wire.Entry, ex: Exchange) -> Running | None:
        if ex.inflight is None or entry.raw_id is None:
            return None
        return ex.inflight.register(entry.raw_id)

    async def _finish(
        self,
        pending: Awaitable[dict[str, Any]],
        entry: _wire.Entry,
        running: Running | None,
        ex: Exchange,
        single: bool,
    ) -> bytes | None:
        """Await a handler that had to wait, cancellable by the client meanwhile, within the
        caps on waiting requests (refused at once past them) and its deadline. ``single``:
        the body's only message, whose reply may set the HTTP status."""
        raw_id = entry.raw_id
        assert raw_id is not None
        inflight = ex.inflight
        shape: _Modern | None = None
        if type(pending) is _Modern:
            shape = pending
            pending = pending.awaitable
        seconds = self.request_timeout
        if type(pending) is Timed:
            seconds = pending.seconds
            pending = pending.awaitable
        deadlines = self.deadlines
        if inflight is None:
            if deadlines.count >= self.max_inflight:
                _drop(pending)
                return self._busy_reply(raw_id, ex, single, None)
        elif (
            deadlines.count >= self.max_inflight
            or inflight.waiting >= self.max_session_inflight
            or (running is not None and running.cancelled)
        ):
            _drop(pending)
            if running is not None:
                inflight.release(running)
                if running.cancelled:
                    return self._cancelled_reply(raw_id, ex)
            return self._busy_reply(raw_id, ex, single, inflight)
        task: asyncio.Task[Any] = _current_task()  # type: ignore[assignment]  # in a task
        deadlines.add(task, seconds)
        if inflight is not None:
            inflight.waiting += 1
            if running is not None:
                running.task = task
        try:
            try:
                result = await pending
            except asyncio.CancelledError:
                why = deadlines.take_stop(task)
                if why:
                    return self._stopped_reply(raw_id, ex, single, why, seconds)
                if running is None or not running.cancelled:
                    raise
                task.uncancel()
                return self._cancelled_reply(raw_id, ex)
            except McpError as exc:
                if shape is not None and shape.status:
                    ex.http_status = modern.http_status(exc.code)
                return self._error_reply(raw_id, exc)
            except Exception:
                log.exception("handler for %s failed", entry.method)
                return _encode_error(raw_id, INTERNAL_ERROR, "Internal error")
            if shape is not None:
                result = self._complete(result, shape.revision)
            return _encode_result(raw_id, result)
        finally:
            deadlines.remove(task, seconds)
            if inflight is not None:
                inflight.waiting -= 1
                if running is not None:
                    inflight.release(running)

    def _busy_reply(
        self, raw_id: bytes, ex: Exchange, single: bool, inflight: InFlight | None
    ) -> bytes:
        """The answer to a request past a cap on waiting requests: the server's (HTTP 503)
        or its session's (HTTP 429); a batch keeps its 200."""
        if inflight is not None and inflight.waiting >= self.max_session_inflight:
            status = 429
            message = (
                f"Too many requests in flight on this session (at most "
                f"{self.max_session_inflight}); retry later"
            )
        else:
            status = 503
            message = (
                f"Server busy: too many requests in flight (at most {self.max_inflight}); "
                "retry later"
            )
        if single:
            ex.http_status = status
        return _encode_error(raw_id, SERVER_ERROR, message)

    def _stopped_reply(
        self, raw_id: bytes, ex: Exchange, single: bool, why: int, seconds: float
    ) -> bytes:
        """The answer to a request stopped by its deadline (-32001) or by the server
        shutting down (-32000, HTTP 503 when it is the body's only message)."""
        if why == STOP_TIMEOUT:
            return _encode_error(
                raw_id, REQUEST_TIMEOUT, f"Request timed out after {seconds:g} seconds"
            )
        if single:
            ex.http_status = 503
        return _encode_error(raw_id, SERVER_ERROR, "Server shutting down; retry later")

    def _cancelled_reply(self, raw_id: bytes, ex: Exchange) -> bytes | None:
        if ex.answer_cancelled:
            return _encode_error(raw_id, REQUEST_CANCELLED, "Request cancelled")
        return None

    def _error_reply(self, raw_id: bytes, exc: McpError) -> bytes:
        try:
            if exc.has_data:
                return _encode_error(raw_id, exc.code, exc.message, exc.data)
            return _encode_error(raw_id, exc.code, exc.message)
        except (TypeError, ValueError, OverflowError):
            # A code past 64 bits or data JSON cannot carry: the request is still answered.
            log.warning("error reply for %r could not be encoded", exc, exc_info=True)
            return _encode_error(raw_id, INTERNAL_ERROR, "Internal error")

    # ------------------------------------------------------------------ 2026-07-28

    def _run_modern(
        self, entry: _wire.Entry, ex: Exchange, in_batch: bool
    ) -> bytes | Awaitable[dict[str, Any]] | None:
        """:meth:`_run_entry` at 2026-07-28: no session, nothing remembered between
        requests; a client response or a notification other than ``notifications/cancelled``
        (stdio) does nothing."""
        kind = entry.kind
        if kind == _REQUEST:
            return self._modern_request(entry, ex, in_batch)
        if kind == _NOTIFICATION:
            if entry.method == "notifications/cancelled":
                self._notification(entry, ex)
            return None
        if kind == _RESPONSE:
            return None
        return _encode_error(entry.raw_id, INVALID_REQUEST, f"Invalid Request: {entry.reason}")

    def _modern_request(
        self,
        entry: _wire.Entry,
        ex: Exchange,
        in_batch: bool,
        params: dict[str, Any] | None = None,
    ) -> bytes | Awaitable[dict[str, Any]]:
        """Check one request in the order of :mod:`jetmcp.protocol.modern`, then run it
        (``params`` when the caller already built them)."""
        raw_id: bytes = entry.raw_id  # type: ignore[assignment]  # a REQUEST has both
        method: str = entry.method  # type: ignore[assignment]
        try:
            if params is None:
                params = entry.params()
                if params is None:
                    params = {}
                elif type(params) is not dict:
                    raise McpError(INVALID_PARAMS, "Invalid params: must be an object")
            headers = ex.headers
            if headers is not None:
                x_headers = self._tool_headers(params) if method == "tools/call" else ()
                modern.check_headers(headers, method, params, x_headers, in_batch=in_batch)
            version, meta = modern.check_meta(params)
            revision = modern.check_version(version)
            modern.check_method(method, in_batch=in_batch)
            handler = self._modern_builtins.get(method)
            if handler is None:
                handler = self.server.handlers.get(method)
                if handler is None:
                    raise McpError(METHOD_NOT_FOUND, f"Method not found: {method}")
            # No session and no server-to-client requests (outgoing None): MRTR replaces them.
            result = handler(params, Call(method, raw_id, revision, None, ex.sink, meta, None))
            if isinstance(result, dict):
                return _encode_result(raw_id, self._complete(result, revision))
            return _Modern(result, revision, not in_batch)
        except McpError as exc:
            if not in_batch:
                ex.http_status = modern.http_status(exc.code)
            return self._error_reply(raw_id, exc)
        except Exception:
            log.exception("handler for %s failed", method)
            return _encode_error(raw_id, INTERNAL_ERROR, "Internal error")

    def _tool_headers(self, params: dict[str, Any]) -> tuple[modern.XHeader, ...]:
        """The ``x-mcp-header`` properties of the tool a ``tools/call`` names (none for an
        unknown tool: the handler answers that)."""
        name = params.get("name")
        tool = self.server._tools.get(name) if type(name) is str else None
        return modern.x_mcp_headers(tool.input_schema) if tool is not None else ()

    def _complete(self, result: dict[str, Any], revision: Revision) -> dict[str, Any]:
        """A handler's result as a 2026-07-28 result: ``resultType`` (``"complete"`` unless
        the handler chose one) and the server's identity in ``_meta``, next to whatever
        ``_meta`` the handler set. The handler's dict is left as it was."""
        if not revision.result_type:
            return result
        out = dict(result)
        if "resultType" not in out:
            out["resultType"] = "complete"
        info = self.server.server_info(revision)
        meta = out.get("_meta")
        out["_meta"] = (
            {META_SERVER_INFO: info, **meta} if isinstance(meta, dict) else {META_SERVER_INFO: info}
        )
        return out

    def _discover(self, params: dict[str, Any], call: Call) -> dict[str, Any]:
        """``server/discover``: every revision served, the capabilities at this one (with
        the extensions this dispatcher adds), instructions, and caching hints."""
        server = self.server
        caps = server.capabilities(call.revision)
        if self.modern_batch:
            extensions = dict(caps.get("extensions") or {})
            extensions[modern.BATCH_EXTENSION] = {"maxBatch": self.max_batch}
            caps["extensions"] = extensions
        result: dict[str, Any] = {
            "supportedVersions": list(modern.SUPPORTED_VERSIONS),
            "capabilities": caps,
        }
        if server.instructions:
            result["instructions"] = server.instructions
        result.update(_cache_hints(server))
        return result

    # ------------------------------------------------------------------ lifecycle

    def _new_session(self, revision: Revision, params: dict[str, Any]) -> Session:
        """The session an ``initialize`` opens; -32602 when the client data it would keep
        (capabilities and clientInfo, as JSON) is over ``max_client_data_bytes``."""
        caps = params.get("capabilities")
        info = params.get("clientInfo")
        session = Session(
            None,
            revision,
            caps if isinstance(caps, dict) else {},
            info if isinstance(info, dict) else {},
        )
        size = session.client_data_size
        if size > self.max_client_data_bytes:
            raise McpError(
                INVALID_PARAMS,
                f"Invalid params: capabilities and clientInfo take {size} bytes; this server "
                f"keeps at most {self.max_client_data_bytes} per session",
            )
        return session

    def _initialize(self, params: dict[str, Any], ex: Exchange) -> dict[str, Any]:
        revision = revisions.negotiate(params.get("protocolVersion"))
        session = self._new_session(revision, params)
        self.server.sessions.add(session)
        ex.new_session = session
        ex.revision = revision
        ex.session = session
        result: dict[str, Any] = {
            "protocolVersion": revision.version,
            "capabilities": self.server.capabilities(revision),
            "serverInfo": self.server.server_info(revision),
        }
        instructions = self.server.instructions
        if instructions and revision.version != "2024-11-05":
            result["instructions"] = instructions
        return result

    def _ping(self, params: dict[str, Any], call: Call) -> dict[str, Any]:
        return {}

    def _set_level(self, params: dict[str, Any], call: Call) -> dict[str, Any]:
        level = params.get("level")
        if not isinstance(level, str) or level not in LOG_RANK:
            raise McpError(INVALID_PARAMS, f"Invalid params: unknown log level {level!r}")
        if call.session is not None:
            call.session.log_level = level
        return {}

    def _notification(self, entry: _wire.Entry, ex: Exchange) -> None:
        method = entry.method
        if method == "notifications/initialized":
            if ex.session is not None:
                ex.session.initialized = True
        elif method == "notifications/cancelled":
            if ex.inflight is None:
                return
            try:
                params = entry.params() if entry.has_params else None
            except ValueError:  # nested past what entry.params() builds
                params = None
            request_id = params.get("requestId") if type(params) is dict else None
            if not _is_request_id(request_id):
                # Malformed: nothing to cancel, and nothing is owed for a notification.
                log.debug("notifications/cancelled ignored: requestId is not a request id")
                return
            ex.inflight.cancel(request_id)
            shared = self._shared_session(ex)
            if shared is not None:
                shared[0].cancel(shared[1], request_id)
        # Other notifications (progress, roots/list_changed, unknown ones) need no action.


def _drop(pending: Awaitable[Any]) -> None:
    """Let go of a handler's awaitable that will not be awaited (a coroutine is closed, a
    future cancelled), so it neither runs nor warns."""
    if isinstance(pending, Coroutine):
        pending.close()
    elif isinstance(pending, asyncio.Future):
        pending.cancel()


def _carries_modern_meta(frame: _wire.Frame) -> bool:
    """Whether a request of a batch names a protocol version in ``params._meta`` (stdio's
    sign of a 2026-07-28 array). The bytes are searched first; only an entry holding the
    key, or an escape that could spell it, has its params built to be sure."""
    for entry in frame.entries:
        if entry.kind != _REQUEST:
            continue
        raw = entry.raw()
        if (_MODERN_KEY in raw or b"\\" in raw) and modern.has_modern_meta(entry.params()):
            return True
    return False


def _cache_hints(server: Server) -> dict[str, Any]:
    """``ttlMs``/``cacheScope`` for ``server/discover``: the server's ``cache_defaults``
    (a dict with either key) when it has them, else immediately stale and public (the
    result holds nothing about the client)."""
    hints: dict[str, Any] = {"ttlMs": 0, "cacheScope": "public"}
    defaults = getattr(server, "cache_defaults", None)
    if isinstance(defaults, dict):
        hints.update((k, defaults[k]) for k in ("ttlMs", "cacheScope") if k in defaults)
    return hints
