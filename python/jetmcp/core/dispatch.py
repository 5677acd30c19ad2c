"""The one dispatcher: a decoded frame in, one reply value (or nothing) out.

The flow runs one way::

    bytes -> frame (_wire.decode) -> plan (Routes.plan) -> run (Plans.run / a handler)
          -> shape (protocol.tool_result's Tool.shape, an era runner)
          -> encode (_wire.encode_*) -> transport

Both transports call :meth:`Dispatcher.start`; they decide the revision and the session
beforehand and write what it gives back afterwards, mapping a :class:`Reply`'s kind to an
HTTP status (or to nothing, on stdio). Nothing here knows HTTP.

Calls of plain tools are planned and run by the extension (:meth:`jetmcp._wire.Routes.plan`):
the extension reads and checks the arguments first, running nothing, then calls the tool
functions and writes their replies, handing back to Python only what it does not shape itself
(an :class:`~jetmcp._wire.Outcome`: a return value, an exception, or the coroutine of an
``async`` tool, which is awaited like any handler's). It never calls jetmcp's own Python.
Everything else goes to the era runner the revision picks (:mod:`jetmcp.core.runners`), in request
order either way.

When the transport awaits what :meth:`Dispatcher.start` gives back in the task that called
it (HTTP: :attr:`Exchange.eager`), the first step of a single request's coroutine runs inside
``start``: a handler that finishes without suspending is answered at once, and only one that
really waits pays for deadlines and caps. For an ``async`` tool the extension calls, it
takes that step itself (``step``, allowed by :meth:`Dispatcher.may_step`), so a value
returned at once is written as a synchronous tool's; the outcome of one that suspends says
so, and the rest is awaited, never stepped again.

The HTTP transport's usual POST asks :meth:`Dispatcher.answer` first and needs no
:class:`Exchange` for a call the extension answers. Anything else goes on in
:meth:`Dispatcher.resume` with a :class:`LazyExchange`: a tool that takes a Context runs
with it, and the exchange is made only if the tool touches its call. At 2026-07-28 the
extension makes that Context itself (:meth:`jetmcp._wire.Plans.run_context`: a bare
instance of the class the era runner's :class:`~jetmcp._wire.Shape` names, its slots set;
no jetmcp Python runs between planning and the tool).

Handlers may return their result directly (work that never waits) or an awaitable. In a
batch, direct results are taken in place and only awaitables become tasks that run
concurrently (``asyncio.gather``); the reply lists every entry in request order. Only
requests that wait pay for limits: each awaitable is bounded by a deadline (the server's
request timeout, or its handler's own: :class:`~jetmcp.core.call.Timed`) kept in
:class:`~jetmcp.core.deadlines.Deadlines`, and by caps on how many wait at once, in all and per
session; past a cap a request is answered at once, never queued.
"""

from __future__ import annotations

import asyncio
import logging
import types
from collections.abc import Awaitable, Coroutine
from functools import partial
from typing import TYPE_CHECKING, Any

from jetmcp import _wire
from jetmcp.core import threads
from jetmcp.core.call import Outgoing, Timed
from jetmcp.core.deadlines import NO_DEADLINE, STOP_TIMEOUT, Deadlines
from jetmcp.core.exchange import Exchange, Started
from jetmcp.core.inflight import InFlight, Running
from jetmcp.core.reply import (
    BUSY,
    FAILED,
    INVALID,
    OK,
    PARSE_ERROR,
    SESSION_BUSY,
    STOPPING,
    TOO_LARGE,
    Reply,
)
from jetmcp.core.route import Router
from jetmcp.core.runners import (
    LegacyRunner,
    ModernRunner,
    Pending,
    Runner,
    Shared,
    carries_modern_meta,
    resume,
)
from jetmcp.errors import (
    HEADER_MISMATCH,
    INVALID_REQUEST,
    REQUEST_CANCELLED,
    REQUEST_TIMEOUT,
    SERVER_ERROR,
    McpError,
)
from jetmcp.protocol import revisions
from jetmcp.protocol.revisions import Revision
from jetmcp.settings import (
    MAX_INFLIGHT,
    MAX_SESSION_INFLIGHT,
    REQUEST_TIMEOUT_SECONDS,
    Settings,
)

if TYPE_CHECKING:
    from jetmcp.server.app import Server
    from jetmcp.state.base import Relay

log = logging.getLogger("jetmcp")

_REQUEST = _wire.REQUEST
_INVALID = _wire.INVALID
_FRAME_SINGLE = _wire.FRAME_SINGLE
_FRAME_BATCH = _wire.FRAME_BATCH
_FRAME_PARSE_ERROR = _wire.FRAME_PARSE_ERROR
_FRAME_EMPTY_BATCH = _wire.FRAME_EMPTY_BATCH
_Outcome = _wire.Outcome
_Plans = _wire.Plans
#: ``Settings.max_client_data_bytes``'s default.
DEFAULT_MAX_CLIENT_DATA_BYTES = 16 * 1024
_encode_error = _wire.encode_error
_current_task = asyncio.current_task
_Coroutine = types.CoroutineType


class Dispatcher(Router):
    """Runs the methods of one :class:`~jetmcp.server.app.Server` for any transport (the
    route of a ``tools/call`` is picked by its base, :class:`~jetmcp.core.route.Router`)."""

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
        #: What the era runners read of this dispatcher: the most a session keeps of what
        #: its client sent at ``initialize``; batches at 2026-07-28 (jetmcp's
        #: ``io.jetmcp/batch`` extension) and their bound; the session-less
        #: server-to-client requests; the relay.
        self.shared = shared = Shared(server, modern_batch, max_batch, max_client_data_bytes)
        #: Seconds a waiting request may take unless its handler says otherwise (a tool's
        #: ``timeout``); 0 or less: no limit.
        self.request_timeout = request_timeout if request_timeout > 0 else NO_DEADLINE
        #: Requests that may wait at once, in all and per session (or stdio process).
        self.max_inflight = max_inflight
        self.max_session_inflight = max_session_inflight
        #: Every request waiting now, with its deadline.
        self.deadlines = Deadlines()
        #: Whether the extension may plan and run calls of plain tools (off while every
        #: request must pass through the runners, e.g. to get a trace span of its own).
        self.planning = True
        #: How many requests the extension answered (what metrics report as the fast path).
        self.fast = 0
        #: When not None, the indices of the entries the extension answered in the last
        #: array some of whose entries it did not (metrics label each entry by its path).
        self.fast_entries: list[int] | None = None
        #: The era runners; the revision picks one (:meth:`runner`).
        self.modern = ModernRunner(shared)
        self.legacy = LegacyRunner(shared, self.modern)
        #: The extension's :class:`~jetmcp._wire.Shape` per revision, with the server's
        #: :attr:`~jetmcp.server.app.Server.identity` it was built at.
        self._shapes = shared.shapes
        #: :meth:`can_step` of a request with no session, as the extension asks it before it
        #: runs an ``async`` tool's coroutine in a task of its own (:meth:`Router.answer`).
        self.may_step_now = partial(self.can_step, None)

    @property
    def max_client_data_bytes(self) -> int:
        """The most a session keeps of what its client sent at ``initialize``."""
        return self.shared.max_client_data_bytes

    @property
    def modern_batch(self) -> bool:
        """Whether batches are taken at 2026-07-28 (jetmcp's ``io.jetmcp/batch``)."""
        return self.shared.modern_batch

    @property
    def max_batch(self) -> int:
        """The most entries a batch may hold."""
        return self.shared.max_batch

    @property
    def outgoing(self) -> Outgoing:
        """Server-to-client requests of session-less requests (a session, an HTTP+SSE
        connection or a stdio process has its own table: see :class:`Exchange`)."""
        return self.shared.outgoing

    @property
    def relay(self) -> Relay | None:
        """Where a session's answers and cancellations go when what they concern runs in
        another process (sessions in a shared store); None: nowhere."""
        return self.shared.relay

    @relay.setter
    def relay(self, relay: Relay | None) -> None:
        self.shared.relay = relay

    @classmethod
    def from_settings(cls, server: Server, settings: Settings) -> Dispatcher:
        """The dispatcher of a transport, with the limits ``settings`` give (and the
        ``--sync-tool-*`` ones set on this process's pool of synchronous tools, which
        serves the server's synchronous tools from now on)."""
        threads.serve(server, settings)
        return cls(
            server,
            modern_batch=settings.modern_batch,
            max_batch=settings.max_batch,
            max_client_data_bytes=settings.max_client_data_bytes,
            request_timeout=settings.request_timeout_seconds,
            max_inflight=settings.max_inflight,
            max_session_inflight=settings.max_session_inflight,
        )

    def runner(self, revision: Revision) -> Runner:
        """The era runner of ``revision``."""
        return self.modern if revision.modern else self.legacy

    # ------------------------------------------------------------------ frames

    def start(self, frame: _wire.Frame, ex: Exchange) -> Started:
        """Do all the work that needs no waiting now; return the reply (``bytes``, or a
        :class:`Reply` when it says more), None when nothing is owed, or a coroutine that
        finishes it when some handler has to wait (the caller awaits it in the request's
        own task, or runs it in a task)."""
        kind = frame.kind
        if kind == _FRAME_SINGLE:
            step = self.may_step(ex)
            return self.resume(frame, ex, self.answer(frame, ex.revision, ex.headers, step), step)

        if kind == _FRAME_PARSE_ERROR:
            return Reply(_encode_error(None, -32700, f"Parse error: {frame.error}"), PARSE_ERROR)
        # Arrays: the revision decides first, whatever they hold (seed 000); at 2026-07-28
        # the io.jetmcp/batch extension does (seed 002). A stdio array is a 2026-07-28 one
        # when a request in it says so (a single message is told apart by its runner).
        if ex.sniff_meta and ex.revision.sessions and carries_modern_meta(frame):
            ex.revision = revisions.R2026_07_28
        revision = ex.revision
        if not (self.shared.modern_batch and revision.batch_extension) and not revision.batching:
            return _encode_error(
                None,
                INVALID_REQUEST,
                f"Batches are not supported in protocol revision {revision.version}",
            )
        if ex.headers is not None and ex.headers.routes:
            return Reply(
                _encode_error(
                    None,
                    HEADER_MISMATCH,
                    "Header mismatch: a batch names no single request, so it carries no "
                    "Mcp-Method, Mcp-Name or Mcp-Param-* header",
                ),
                FAILED,
                HEADER_MISMATCH,
            )
        if kind == _FRAME_EMPTY_BATCH:
            return _encode_error(None, INVALID_REQUEST, "Invalid Request: empty batch")
        if kind != _FRAME_BATCH:
            return Reply(
                _encode_error(None, INVALID_REQUEST, f"Invalid Request: {frame.error}"), TOO_LARGE
            )
        return self.batch(frame, ex)

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

    def _wait(self, pending: Pending, entry: _wire.Entry, ex: Exchange) -> Started:
        """A single request whose handler has to be awaited: its first step now when the
        caller awaits in this very task (:attr:`Exchange.eager`), the rest in
        :meth:`_finish`."""
        if not pending.stepped and ex.eager and type(pending.awaitable) is _Coroutine:
            done = self._step(pending, entry, ex)
            if done is not None:
                return done
        return self._finish(pending, entry, self._register(entry, ex), ex, True)

    def _step(self, pending: Pending, entry: _wire.Entry, ex: Exchange) -> bytes | None:
        """Run the first step of a single request's coroutine now (the caller is the task
        that will await the rest: :attr:`Exchange.eager`): its reply when it finished, else
        None with the rest left in ``pending`` for :meth:`_finish`. Nothing runs while a cap
        on waiting requests is reached (:meth:`_finish` refuses the request then)."""
        if not self.may_step(ex):
            return None
        coro: Coroutine[Any, Any, Any] = pending.awaitable  # type: ignore[assignment]
        raw_id: bytes = entry.raw_id  # type: ignore[assignment]  # a REQUEST has one
        runner = pending.runner
        try:
            try:
                first = coro.send(None)
            except StopIteration as done:
                result = pending.settled(done.value)
            except Exception as exc:
                result = pending.failed(exc)
            except BaseException as exc:
                asked = pending.asked(exc)  # a question that ends the tool's round
                if asked is None:
                    raise
                result = asked
            else:
                pending.awaitable = resume(coro, first)
                return None
            return runner.encode(raw_id, result, pending.revision)
        except McpError as exc:
            return runner.error(raw_id, exc, True)
        except Exception:
            log.exception("handler for %s failed", entry.method)
            return runner.internal_error(raw_id, True)

    def may_step(self, ex: Exchange) -> bool:
        """Whether a single request's coroutine may take its first step now, in the task
        that will await the rest (:attr:`Exchange.eager`): not while a cap on waiting
        requests is reached (:meth:`_finish` refuses the request then, before it runs)."""
        return ex.eager and self.can_step(ex.inflight)

    def can_step(self, inflight: InFlight | None) -> bool:
        """:meth:`may_step` of an eager exchange whose session keeps ``inflight``."""
        return self.deadlines.count < self.max_inflight and (
            inflight is None or inflight.waiting < self.max_session_inflight
        )

    def _register(self, entry: _wire.Entry, ex: Exchange) -> Running | None:
        if ex.inflight is None or entry.raw_id is None:
            return None
        return ex.inflight.register(entry.raw_id)

    # ------------------------------------------------------------------ waiting

    async def _finish(
        self,
        pending: Pending,
        entry: _wire.Entry,
        running: Running | None,
        ex: Exchange,
        single: bool,
    ) -> bytes | None:
        """Await a handler that had to wait, cancellable by the client meanwhile, within the
        caps on waiting requests (refused at once past them) and its deadline. ``single``:
        the body's only message, whose reply says how it ended (:class:`Reply`)."""
        raw_id = entry.raw_id
        assert raw_id is not None
        inflight = ex.inflight
        awaitable: Awaitable[dict[str, Any]] = pending.awaitable
        seconds = self.request_timeout
        if type(awaitable) is Timed:
            seconds = awaitable.seconds
            awaitable = awaitable.awaitable
        deadlines = self.deadlines
        if inflight is None:
            if deadlines.count >= self.max_inflight:
                _drop(awaitable)
                return self._busy_reply(raw_id, single, None)
        elif (
            deadlines.count >= self.max_inflight
            or inflight.waiting >= self.max_session_inflight
            or (running is not None and running.cancelled)
        ):
            _drop(awaitable)
            if running is not None:
                inflight.release(running)
                if running.cancelled:
                    return self._cancelled_reply(raw_id, ex)
            return self._busy_reply(raw_id, single, inflight)
        task: asyncio.Task[Any] = _current_task()  # type: ignore[assignment]  # in a task
        deadlines.add(task, seconds)
        if inflight is not None:
            inflight.waiting += 1
            if running is not None:
                running.task = task
        runner = pending.runner
        try:
            try:
                try:
                    value = await awaitable
                except Exception as exc:
                    result = pending.failed(exc)
                except BaseException as exc:
                    asked = pending.asked(exc)  # a question that ends the tool's round
                    if asked is None:
                        raise
                    result = asked
                else:
                    result = pending.settled(value)
                # Inside: a result the encoder refuses (an int past Python's digit limit) is
                # an internal error, as for a synchronous tool.
                return runner.encode(raw_id, result, pending.revision)
            except asyncio.CancelledError:
                why = deadlines.take_stop(task)
                if why:
                    return self._stopped_reply(raw_id, single, why, seconds)
                if running is None or not running.cancelled:
                    raise
                task.uncancel()
                return self._cancelled_reply(raw_id, ex)
            except McpError as exc:
                return runner.error(raw_id, exc, single)
            except Exception:
                log.exception("handler for %s failed", entry.method)
                return runner.internal_error(raw_id, single)
        finally:
            deadlines.remove(task, seconds)
            if inflight is not None:
                inflight.waiting -= 1
                if running is not None:
                    inflight.release(running)

    def _busy_reply(self, raw_id: bytes, single: bool, inflight: InFlight | None) -> bytes:
        """The answer to a request past a cap on waiting requests: the server's or its
        session's (a batch entry says so in its own error only)."""
        if inflight is not None and inflight.waiting >= self.max_session_inflight:
            kind = SESSION_BUSY
            message = (
                f"Too many requests in flight on this session (at most "
                f"{self.max_session_inflight}); retry later"
            )
        else:
            kind = BUSY
            message = (
                f"Server busy: too many requests in flight (at most {self.max_inflight}); "
                "retry later"
            )
        body = _encode_error(raw_id, SERVER_ERROR, message)
        return Reply(body, kind, SERVER_ERROR) if single else body

    def _stopped_reply(self, raw_id: bytes, single: bool, why: int, seconds: float) -> bytes:
        """The answer to a request stopped by its deadline (-32001) or by the server
        shutting down (-32000)."""
        if why == STOP_TIMEOUT:
            return _encode_error(
                raw_id, REQUEST_TIMEOUT, f"Request timed out after {seconds:g} seconds"
            )
        body = _encode_error(raw_id, SERVER_ERROR, "Server shutting down; retry later")
        return Reply(body, STOPPING, SERVER_ERROR) if single else body

    def _cancelled_reply(self, raw_id: bytes, ex: Exchange) -> bytes | None:
        if ex.answer_cancelled:
            return _encode_error(raw_id, REQUEST_CANCELLED, "Request cancelled")
        return None


def _drop(pending: Awaitable[Any]) -> None:
    """Let go of a handler's awaitable that will not be awaited (a coroutine is closed, a
    future cancelled), so it neither runs nor warns."""
    if isinstance(pending, Coroutine | types.GeneratorType):
        pending.close()
    elif isinstance(pending, asyncio.Future):
        pending.cancel()


__all__ = [
    "BUSY",
    "FAILED",
    "INVALID",
    "OK",
    "PARSE_ERROR",
    "SESSION_BUSY",
    "STOPPING",
    "TOO_LARGE",
    "Dispatcher",
    "Reply",
]
