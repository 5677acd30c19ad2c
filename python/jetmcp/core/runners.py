"""The era runners: how one JSON-RPC entry is served in the legacy era (2024-11-05 ..
2025-11-25: an ``initialize`` handshake, sessions) and in the stateless one (2026-07-28:
every request checked on its own, results completed with ``resultType`` and the server's
identity).

Both share one skeleton (:class:`Runner`): the params checked, the handler looked up in the
runner's own method table (its built-in methods, then the server's handlers, for the methods
the revision table says the revision has), the call, the result encoded, a failure mapped to
an error reply. :class:`~jetmcp.core.dispatch.Dispatcher` picks the runner from the revision once
per body; this module is the only place besides the revision table that tells the eras
apart. The runners pick no route (:mod:`jetmcp.core.route` does) and hold no reference to
the dispatcher: what they read of it is a :class:`Shared` handed in.
"""

from __future__ import annotations

import logging
import types
from collections.abc import Awaitable, Coroutine, Generator
from typing import TYPE_CHECKING, Any

from orjson import loads

from jetmcp import _wire
from jetmcp.core.call import (
    LOG_RANK,
    Call,
    CallContext,
    EncodedResult,
    Handler,
    Outgoing,
    Result,
    Timed,
    after_write,
)
from jetmcp.core.inflight import is_request_id
from jetmcp.core.mrtr import InputRequired, InputRound, RoundCall
from jetmcp.core.reply import FAILED, OK, UNDELIVERED, Reply
from jetmcp.core.threads import SyncCall
from jetmcp.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    McpError,
)
from jetmcp.protocol import modern, revisions
from jetmcp.protocol.meta import META_PROTOCOL_VERSION
from jetmcp.protocol.revisions import Revision

if TYPE_CHECKING:
    from jetmcp.core.call import Session
    from jetmcp.core.exchange import Exchange
    from jetmcp.server.app import Server
    from jetmcp.server.tools import Tool
    from jetmcp.state.base import Relay

_MODERN_BY_VERSION = revisions.MODERN_BY_VERSION
log = logging.getLogger("jetmcp")

_REQUEST = _wire.REQUEST
_NOTIFICATION = _wire.NOTIFICATION
_RESPONSE = _wire.RESPONSE
_encode_result = _wire.encode_result
_encode_error = _wire.encode_error
_dumps = _wire.dumps
#: What an ``async def`` function gives back.
_Coroutine = types.CoroutineType
#: Result types with no ``__await__`` (built-in, exact types: no subclass can add one), told
#: apart from an awaitable by one set lookup (:meth:`Runner.outcome`).
#: The code of the coroutine a synchronous tool's call in the thread pool gives back.
_POOLED = SyncCall.threaded.__code__
_SETTLED = frozenset({dict, list, tuple, str, bytes, int, float, bool, type(None)})
#: The ``_meta`` key that makes a stdio request a 2026-07-28 one, as it stands in the bytes.
_MODERN_KEY = f'"{META_PROTOCOL_VERSION}"'.encode()


@types.coroutine
def resume(coro: Coroutine[Any, Any, Any], yielded: Any) -> Generator[Any, Any, Any]:
    """Go on with a coroutine already stepped once (it yielded ``yielded``), as if it were
    awaited from its start: what the task sends or throws in goes to it."""
    while True:
        try:
            sent = yield yielded
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:
            try:
                yielded = coro.throw(exc)
            except StopIteration as done:
                return done.value
        else:
            try:
                yielded = coro.send(sent)
            except StopIteration as done:
                return done.value


class Pending:
    """A handler's awaitable, with what its reply needs once it settles: the revision it
    runs at and the runner that encodes it. ``tool``: the awaitable is what an ``async``
    tool's function gave back (started by the extension), so its value (or exception) is
    still to be shaped by that tool, as :meth:`Tool.call` would have."""

    __slots__ = ("awaitable", "context", "revision", "runner", "stepped", "tool")

    def __init__(
        self,
        awaitable: Awaitable[Any],
        revision: Revision,
        runner: Runner,
        tool: Tool | None = None,
        context: CallContext | None = None,
        stepped: bool = False,
    ) -> None:
        # Made by position on the waiting paths: a class called with keywords builds a dict
        # of them for each call.
        self.awaitable = awaitable
        self.revision = revision
        self.runner = runner
        self.tool = tool
        #: A 2026-07-28 tool's Context, whose call's input round a question it asks ends.
        self.context = context
        #: Whether the awaitable's first step already ran (the extension took it): what is
        #: left is awaited, never stepped again.
        self.stepped = stepped

    def asked(self, exc: BaseException) -> dict[str, Any] | None:
        """The ``InputRequiredResult`` when ``exc`` is a question the tool's round asks;
        else None (the exception is not this Pending's to answer)."""
        if self.context is not None and isinstance(exc, InputRequired):
            return _round_of(self.context.call).result(exc.requests)
        return None

    def settled(self, value: Any) -> dict[str, Any]:
        """The result for what the awaitable gave."""
        tool = self.tool
        if tool is None:
            result: dict[str, Any] = value
            return result
        return tool.shape(value, self.revision)

    def failed(self, exc: Exception) -> dict[str, Any]:
        """The result for what the awaitable raised (re-raised when it is the handler's
        error rather than a tool's failure)."""
        if self.tool is None:
            raise exc
        return self.tool.failure(exc, self.revision)


class Shared:
    """What the era runners read of the dispatcher that holds them, handed in so that they
    need no reference to it: the server, the limits the dispatcher was given, the table of
    session-less server-to-client requests, the relay to other processes (set by a
    transport whose sessions live in a shared store) and the extension's shapes per
    revision (shared with :class:`~jetmcp.core.route.Router`)."""

    __slots__ = (
        "max_batch",
        "max_client_data_bytes",
        "modern_batch",
        "outgoing",
        "relay",
        "server",
        "shapes",
    )

    def __init__(
        self,
        server: Server,
        modern_batch: bool,
        max_batch: int,
        max_client_data_bytes: int,
    ) -> None:
        self.server = server
        self.modern_batch = modern_batch
        self.max_batch = max_batch
        self.max_client_data_bytes = max_client_data_bytes
        self.outgoing = Outgoing()
        self.relay: Relay | None = None
        #: Per revision: the server's identity it was built at, and the shape.
        self.shapes: dict[str, tuple[int, _wire.Shape]] = {}


#: The delivery of what a client sent for another worker of its session (an answer, a
#: cancellation): None once it landed, else the error reply saying it may not have.
Relayed = Coroutine[Any, Any, Reply | None]
#: What serving one entry gives: its reply now, a pending handler, a delivery to await
#: before the (empty) answer, or nothing owed.
Served = bytes | Pending | Relayed | None


class Runner:
    """The skeleton of one era: see the module docstring."""

    __slots__ = ("builtins", "context_class", "server", "shared")

    def __init__(self, shared: Shared) -> None:
        self.shared = shared
        self.server = server = shared.server
        #: The Context the server hands a tool that takes one (handed in by the server, so
        #: the core needs nothing of the server's modules).
        self.context_class: type[CallContext] = server.context_class
        #: Methods this runner answers itself, before the server's handlers.
        self.builtins: dict[str, Handler] = {}

    # -- what each era decides ----------------------------------------------------------

    def prepare(
        self, method: str, raw_id: bytes, params: dict[str, Any], ex: Exchange, in_batch: bool
    ) -> tuple[Handler, Call]:
        """Check a request the era's way and find its handler (McpError when refused)."""
        raise NotImplementedError

    def encode(self, raw_id: bytes, result: dict[str, Any], revision: Revision) -> bytes:
        """A handler's result as the reply bytes."""
        raise NotImplementedError

    def shape(self, revision: Revision) -> _wire.Shape:
        """How the extension writes the results of planned calls at ``revision``."""
        raise NotImplementedError

    def new_shape(self, revision: Revision) -> tuple[int, _wire.Shape]:
        """:meth:`shape`, kept in :attr:`Shared.shapes` while the server's identity (which a
        2026-07-28 result carries) is unchanged."""
        found = (self.server.identity, self.shape(revision))
        self.shared.shapes[revision.version] = found
        return found

    def shaped(self, revision: Revision) -> _wire.Shape:
        """The kept :meth:`shape` of ``revision``."""
        found = self.shared.shapes.get(revision.version)
        if found is None or found[0] != self.server.identity:
            found = self.new_shape(revision)
        return found[1]

    def notification(self, entry: _wire.Entry, ex: Exchange) -> Relayed | None:
        """Act on a client notification (nothing is owed for one, unless it was to be
        relayed to another worker and may not have been: :data:`Relayed`)."""
        return None

    def response(self, entry: _wire.Entry, ex: Exchange) -> Relayed | None:
        """Take a client's answer to a server-to-client request (:data:`Relayed` when it
        goes to another worker)."""
        return None

    # -- the skeleton -------------------------------------------------------------------

    def entry(self, entry: _wire.Entry, ex: Exchange, in_batch: bool) -> Served:
        kind = entry.kind
        if kind == _REQUEST:
            return self.request(entry, ex, in_batch)
        if kind == _NOTIFICATION:
            return self.notification(entry, ex)
        if kind == _RESPONSE:
            return self.response(entry, ex)
        return _encode_error(entry.raw_id, INVALID_REQUEST, f"Invalid Request: {entry.reason}")

    def request(
        self,
        entry: _wire.Entry,
        ex: Exchange,
        in_batch: bool,
        params: dict[str, Any] | None = None,
    ) -> Served:
        """Serve one request (``params`` when the caller already built them)."""
        # The hot path of every request: each line here is paid once per entry.
        raw_id: bytes = entry.raw_id  # type: ignore[assignment]  # a REQUEST has both
        method: str = entry.method  # type: ignore[assignment]
        try:
            if params is None:
                params = params_of(entry)
            handler, call = self.prepare(method, raw_id, params, ex, in_batch)
            result = handler(params, call)
            if isinstance(result, dict):
                return self.encode(raw_id, result, call.revision)
            return Pending(result, call.revision, self)
        except McpError as exc:
            return self.error(raw_id, exc, not in_batch)
        except Exception:
            log.exception("handler for %s failed", method)
            return self.internal_error(raw_id, not in_batch)

    def outcome(self, outcome: _wire.Outcome, revision: Revision, single: bool) -> bytes | Pending:
        """The reply to a planned call the extension did not shape itself: a return value
        other than a plain ``int``/``str``/``bool``, or an exception; for an ``async`` tool,
        the call still to await (its coroutine), as a :class:`Pending`."""
        raw_id = outcome.raw_id
        tool = outcome.tool
        value = outcome.value
        failed = outcome.failed
        # What the call gave back decides, not the tool's flag now: a synchronous tool
        # switched between the pool and inline (jetmcp.core.threads) may have been called
        # the other way. A value of a built-in result type is never awaitable (nor a
        # suspended coroutine): the common case is told without looking up ``__await__``;
        # and what a stepped coroutine returned is shaped whatever it is, so it is not
        # looked up either (on a pydantic model, its ``__getattr__`` raising).
        if not failed and type(value) not in _SETTLED:
            if outcome.suspended:
                # Stepped by the extension (never a timed tool): the rest is awaited.
                return Pending(resume(value, outcome.yielded), revision, self, tool, None, True)
            if outcome.running:
                # The task the native engine runs the coroutine in (Routes.answer with a
                # task loop), past its first step: awaited, as the coroutine would be (a
                # deadline or a client's cancel cancels the waiter, and with it the task).
                return Pending(value, revision, self, tool, None, True)
            # A synchronous tool's awaitable is awaited only when it is the pool's own call
            # of it (SyncCall.threaded); one the tool's function returned is its value, as on
            # the general path (and in the SDK).
            if not outcome.stepped and (
                hasattr(value, "__await__")
                if tool.sync is None
                else getattr(value, "cr_code", None) is _POOLED
            ):
                timeout = tool.timeout
                return Pending(
                    value if timeout is None else Timed(value, timeout), revision, self, tool
                )
        try:
            result = tool.failure(value, revision) if failed else tool.shape(value, revision)
            return self.encode(raw_id, result, revision)
        except McpError as exc:
            return self.error(raw_id, exc, single)
        except Exception:
            log.exception("handler for tools/call failed")
            return self.internal_error(raw_id, single)

    def call_planned(
        self, tool: Tool, arguments: dict[str, Any], params: dict[str, Any], call: Call
    ) -> bytes | Pending:
        """A planned call Python makes (``ToolRoute.python_call``): what the ``tools/call``
        handler does once it found the tool, answered as :meth:`request` answers. A call
        that needs nothing of the handler but the tool (no input round to open) is made
        here (:meth:`start_planned`)."""
        raw_id: bytes = call.raw_id  # type: ignore[assignment]  # a request's
        revision = call.revision
        if made_at_once(tool, revision):
            return self.start_planned(tool, arguments, raw_id, revision, call)
        try:
            result = self.server.call_found(tool, arguments, params, call)
            if isinstance(result, dict):
                return self.encode(raw_id, result, revision)
            return Pending(result, revision, self)
        except McpError as exc:
            return self.error(raw_id, exc, True)
        except Exception:
            log.exception("handler for tools/call failed")
            return self.internal_error(raw_id, True)

    def start_planned(
        self,
        tool: Tool,
        arguments: dict[str, Any],
        raw_id: bytes,
        revision: Revision,
        call: Call | None = None,
        step: bool = False,
    ) -> bytes | Pending:
        """A planned call of a :attr:`~Tool.startable` tool, made as its ``Tool.call`` makes
        it (``call`` is needed only by a tool that takes a Context): a synchronous tool's
        reply, or an async one's awaitable, awaited and shaped by the dispatcher as for the
        calls the extension makes (:meth:`outcome`). ``step`` (:meth:`Dispatcher.may_step`):
        the coroutine's first step runs here, as the extension takes it for the tools it
        calls, and what it returns or raises at once is the reply."""
        try:
            started = tool.start(arguments, call, self.server, revision)
            if isinstance(started, dict):
                return self.encode(raw_id, started, revision)
            timeout = tool.timeout
            if timeout is not None:
                return Pending(Timed(started, timeout), revision, self, tool)
            if step and type(started) is _Coroutine:
                try:
                    first = started.send(None)
                except StopIteration as done:
                    return self.encode(raw_id, tool.shape(done.value, revision), revision)
                except Exception as exc:
                    return self.encode(raw_id, tool.failure(exc, revision), revision)
                return Pending(resume(started, first), revision, self, tool, None, True)
            return Pending(started, revision, self, tool)
        except McpError as exc:
            return self.error(raw_id, exc, True)
        except Exception:
            log.exception("handler for tools/call failed")
            return self.internal_error(raw_id, True)

    def asked(self, exc: InputRequired, context: CallContext, revision: Revision) -> bytes:
        """The reply to a call run with ``context`` that asked a question (in its first
        step, if stepped): at a revision with input rounds, answered from its call's
        round; raised again at any other."""
        if not revision.mrtr:
            raise exc
        call = context.call
        raw_id: bytes = call.raw_id  # type: ignore[assignment]  # a request's
        return self.encode(raw_id, _round_of(call).result(exc.requests), revision)

    def ran(self, done: Any, context: CallContext, revision: Revision) -> bytes | Pending:
        """What a call run with ``context`` came to (it ran), as :meth:`outcome` makes
        it: a question it asks later is its round's."""
        if type(done) is bytes:
            return done
        out = self.outcome(done, revision, True)
        if revision.mrtr and type(out) is Pending:
            out.context = context
        return out

    def error(self, raw_id: bytes, exc: McpError, single: bool) -> bytes:
        """The error reply for ``exc``; a :class:`~jetmcp.core.dispatch.Reply` that says it
        failed when it answers the body's only request."""
        try:
            if exc.has_data:
                body = _encode_error(raw_id, exc.code, exc.message, exc.data)
            else:
                body = _encode_error(raw_id, exc.code, exc.message)
        except (TypeError, ValueError, OverflowError):
            # A code past 64 bits or data JSON cannot carry: the request is still answered.
            log.warning("error reply for %r could not be encoded", exc, exc_info=True)
            return self.internal_error(raw_id, single)
        return _failed(body, exc.code) if single else body

    def internal_error(self, raw_id: bytes, single: bool) -> bytes:
        body = _encode_error(raw_id, INTERNAL_ERROR, "Internal error")
        return _failed(body, INTERNAL_ERROR) if single else body

    def lookup(self, method: str, revision: Revision) -> Handler:
        """The handler of ``method``: this runner's own, else the server's, for a method
        the revision has (-32601 otherwise)."""
        handler = self.builtins.get(method)
        if handler is None:
            if revision.serves(method):
                handler = self.server.handlers.get(method)
            if handler is None:
                raise McpError(METHOD_NOT_FOUND, f"Method not found: {method}")
        return handler


def made_at_once(tool: Tool, revision: Revision) -> bool:
    """Whether a planned call of ``tool`` at ``revision`` needs nothing of the ``tools/call``
    handler but the tool (:meth:`Runner.start_planned` makes it): a :attr:`~Tool.startable`
    tool, which at a revision with input rounds must take no Context and keep its fast
    twins (a round would have to be opened for it otherwise)."""
    return tool.startable and (not revision.mrtr or (tool.context_param is None and tool.fast))


def _failed(body: bytes, code: int) -> bytes:
    return Reply(body, FAILED, code)


def _round_of(call: Call) -> InputRound:
    """The input round of a 2026-07-28 call (what a question it asked needs answered)."""
    assert isinstance(call, RoundCall)
    inputs = call.inputs
    assert isinstance(inputs, InputRound)
    return inputs


def params_of(entry: _wire.Entry) -> dict[str, Any]:
    params = entry.params()  # None when absent
    if params is None:
        return {}
    if type(params) is not dict:  # JSON gives exactly dict or list
        raise McpError(INVALID_PARAMS, "Invalid params: must be an object")
    return params


# ---------------------------------------------------------------------------- legacy


class LegacyRunner(Runner):
    """2024-11-05 .. 2025-11-25: ``initialize`` opens a session (its revision, the client's
    capabilities); requests run within it, or without one at the revision the transport
    chose; server-to-client requests and their answers stay within the client's scope."""

    __slots__ = ("modern",)

    def __init__(self, shared: Shared, modern_runner: ModernRunner) -> None:
        super().__init__(shared)
        #: Where a stdio request that names a ``_meta`` protocol version goes.
        self.modern = modern_runner
        self.builtins = {"ping": self._ping}
        # An adapted server answers it with its SDK's handler, or -32601 without one.
        if not getattr(self.server, "adapted", False):
            self.builtins["logging/setLevel"] = self._set_level

    def request(
        self,
        entry: _wire.Entry,
        ex: Exchange,
        in_batch: bool,
        params: dict[str, Any] | None = None,
    ) -> Served:
        method = entry.method
        if ex.sniff_meta or method == "initialize":
            raw_id: bytes = entry.raw_id  # type: ignore[assignment]  # a REQUEST has both
            try:
                params = params_of(entry)
                if ex.sniff_meta and modern.has_modern_meta(params):
                    # stdio: this request is a 2026-07-28 one, whatever the session.
                    return self.modern.request(entry, ex, in_batch, params)
                if method == "initialize":
                    if in_batch:
                        raise McpError(
                            INVALID_REQUEST, "Invalid Request: initialize must not be batched"
                        )
                    return self._initialize(raw_id, params, ex)
            except McpError as exc:
                return self.error(raw_id, exc, not in_batch)
        return super().request(entry, ex, in_batch, params)

    def prepare(
        self, method: str, raw_id: bytes, params: dict[str, Any], ex: Exchange, in_batch: bool
    ) -> tuple[Handler, Call]:
        handler = self.lookup(method, ex.revision)
        call = Call(
            method,
            raw_id,
            ex.revision,
            ex.session,
            ex.call_sink,
            params.get("_meta"),
            self._outgoing(ex),
            ex.auth,
            ex.http_headers,
        )
        return handler, call

    def encode(self, raw_id: bytes, result: dict[str, Any], revision: Revision) -> bytes:
        if type(result) is EncodedResult:
            return _encode_result(raw_id, result.json)
        return _encode_result(raw_id, result)

    def planned_call(
        self, entry: _wire.Entry, ex: Exchange, plans: _wire.Plans, revision: Revision | None = None
    ) -> Call:
        """The Call that :meth:`prepare` and ``Tool.call`` would make for a planned
        ``tools/call``, its ``_meta`` read from ``plans`` only if the tool asks."""
        call = Call(
            "tools/call",
            entry.raw_id,
            ex.revision,
            ex.session,
            ex.call_sink,
            None,
            self._outgoing(ex),
            ex.auth,
            ex.http_headers,
        )
        call.meta_from(plans)
        return call

    def shape(self, revision: Revision) -> _wire.Shape:
        return _wire.Shape(revision.structured_output)

    def _outgoing(self, ex: Exchange) -> Outgoing:
        """The server-to-client requests of the client that sent ``ex``."""
        if ex.outgoing is not None:
            return ex.outgoing
        session = ex.session
        return session.outgoing if session is not None else self.shared.outgoing

    # -- the handshake and the built-in methods -------------------------------------------

    def _initialize(self, raw_id: bytes, params: dict[str, Any], ex: Exchange) -> bytes:
        revision = revisions.negotiate(params.get("protocolVersion"))
        session = self._new_session(revision, params)
        if ex.auth is not None:
            session.principal = ex.auth.key
        server = self.server
        server.sessions.add(session)
        ex.revision = revision
        ex.session = session
        result: dict[str, Any] = {
            "protocolVersion": revision.version,
            "capabilities": server.capabilities(revision),
            "serverInfo": server.server_info(revision),
        }
        instructions = server.instructions
        if instructions and (revision.instructions or getattr(server, "adapted", False)):
            # An adapted server says them at every revision, as its SDK does (the
            # 2024-11-05 schema has no such field; SDK clients read it all the same).
            result["instructions"] = instructions
        return Reply(_encode_result(raw_id, result), OK, session=session)

    def _new_session(self, revision: Revision, params: dict[str, Any]) -> Session:
        """The session an ``initialize`` opens; -32602 when the client data it would keep
        (capabilities and clientInfo, as JSON) is over ``max_client_data_bytes``."""
        from jetmcp.core.call import Session

        caps = params.get("capabilities")
        info = params.get("clientInfo")
        session = Session(
            None,
            revision,
            caps if isinstance(caps, dict) else {},
            info if isinstance(info, dict) else {},
        )
        size = session.client_data_size
        limit = self.shared.max_client_data_bytes
        if size > limit:
            raise McpError(
                INVALID_PARAMS,
                f"Invalid params: capabilities and clientInfo take {size} bytes; this server "
                f"keeps at most {limit} per session",
            )
        return session

    def _ping(self, params: dict[str, Any], call: Call) -> dict[str, Any]:
        return {}

    def _set_level(self, params: dict[str, Any], call: Call) -> Result:
        level = params.get("level")
        if not isinstance(level, str) or level not in LOG_RANK:
            raise McpError(INVALID_PARAMS, f"Invalid params: unknown log level {level!r}")
        if call.session is not None:
            return after_write(call.session.set_log_level(level))
        return {}

    # -- what the client sends without asking ---------------------------------------------

    def notification(self, entry: _wire.Entry, ex: Exchange) -> Relayed | None:
        method = entry.method
        if method == "notifications/initialized":
            if ex.session is not None:
                ex.session.initialized = True
        elif method == "notifications/cancelled":
            return cancel(self.shared, entry, ex)
        # Other notifications (progress, roots/list_changed, unknown ones) need no action.
        return None

    def response(self, entry: _wire.Entry, ex: Exchange) -> Relayed | None:
        # An answer to one of our server-to-client requests; nothing is owed back. It is
        # looked up only among the requests of this client's own scope.
        if entry.raw_id is None:
            return None
        answer_id = loads(entry.raw_id)
        value = entry.result()
        if not self._outgoing(ex).resolve(answer_id, entry.is_error, value):
            shared = shared_session(self.shared, ex)
            if shared is not None:
                # The request may wait in another worker of the same session.
                return delivered(shared[0].answer(shared[1], answer_id, entry.is_error, value))
            log.debug("dropped a response that answers no request of its sender")
        return None


# ---------------------------------------------------------------------------- 2026-07-28


class ModernRunner(Runner):
    """2026-07-28: no session, nothing remembered between requests. Each request is
    checked on its own in the order of :mod:`jetmcp.protocol.modern` (routing headers,
    ``_meta``, version, method) and each result completed with ``resultType`` and the
    server's identity. The server sends no requests (input rounds replace them); a client
    response, or a notification other than ``notifications/cancelled``, does nothing."""

    __slots__ = ()

    def __init__(self, shared: Shared) -> None:
        super().__init__(shared)
        self.builtins = {"server/discover": self._discover}

    def prepare(
        self, method: str, raw_id: bytes, params: dict[str, Any], ex: Exchange, in_batch: bool
    ) -> tuple[Handler, Call]:
        headers = ex.headers
        if headers is not None:
            x_headers = self._tool_headers(params, ex) if method == "tools/call" else ()
            modern.check_headers(headers, method, params, x_headers, in_batch=in_batch)
        version, meta = modern.check_meta(params)
        revision = modern.check_version(version)
        modern.check_method(method, in_batch=in_batch)
        handler = self.lookup(method, revision)
        # No session and no server-to-client requests (outgoing None): MRTR replaces them.
        return handler, Call(
            method, raw_id, revision, None, ex.call_sink, meta, None, ex.auth, ex.http_headers
        )

    def encode(self, raw_id: bytes, result: dict[str, Any], revision: Revision) -> bytes:
        server_info = self.shaped(revision).server_info
        return _encode_result(raw_id, result, server_info)

    def shape(self, revision: Revision) -> _wire.Shape:
        info = _dumps(self.server.server_info(revision))
        served = revisions.MODERN
        # How Plans.run_context makes the Context of a planned call (see Shape).
        context = (self.server, self.context_class, list(served))
        return _wire.Shape(revision.structured_output, info, [r.version for r in served], context)

    def notification(self, entry: _wire.Entry, ex: Exchange) -> Relayed | None:
        if entry.method == "notifications/cancelled":
            return cancel(self.shared, entry, ex)
        return None

    def planned_call(
        self, entry: _wire.Entry, ex: Exchange, plans: _wire.Plans, revision: Revision | None = None
    ) -> Call:
        """The Call that :meth:`prepare` and the ``tools/call`` handler would make for a
        planned call at ``revision`` (the extension checked ``_meta`` and the headers as
        :meth:`prepare` does); its ``_meta`` is read from ``plans`` only if the tool asks (a
        log level check reads just that member)."""
        assert revision is not None
        call = Call(
            "tools/call",
            entry.raw_id,
            revision,
            None,
            ex.call_sink,
            None,
            None,
            ex.auth,
            ex.http_headers,
        )
        call.meta_from(plans)
        return call

    def _tool_headers(self, params: dict[str, Any], ex: Exchange) -> tuple[modern.XHeader, ...]:
        """The ``x-mcp-header`` properties of the tool a ``tools/call`` names (none for an
        unknown tool, or one the caller may not see: the handler answers that)."""
        name = params.get("name")
        tool = self.server._tools.get(name) if type(name) is str else None
        if tool is None or not self.server.visible(tool, ex.auth):
            return ()
        return modern.x_mcp_headers(tool.input_schema)

    def _discover(self, params: dict[str, Any], call: Call) -> dict[str, Any]:
        """``server/discover``: every revision served, the capabilities at this one (with
        the extensions this dispatcher adds), instructions, and caching hints."""
        server = self.server
        shared = self.shared
        caps = server.capabilities(call.revision)
        if shared.modern_batch:
            extensions = dict(caps.get("extensions") or {})
            extensions[modern.BATCH_EXTENSION] = {"maxBatch": shared.max_batch}
            caps["extensions"] = extensions
        result: dict[str, Any] = {
            "supportedVersions": list(modern.SUPPORTED_VERSIONS),
            "capabilities": caps,
        }
        if server.instructions:
            result["instructions"] = server.instructions
        hints: dict[str, Any] = {"ttlMs": 0, "cacheScope": "public"}
        defaults = getattr(server, "cache_defaults", None)
        if isinstance(defaults, dict):
            hints.update((k, defaults[k]) for k in ("ttlMs", "cacheScope") if k in defaults)
        result.update(hints)
        return result


# ---------------------------------------------------------------------------- both eras


def shared_session(shared: Shared, ex: Exchange) -> tuple[Relay, str] | None:
    """The relay and ``ex``'s session id when other processes serve that session too (a
    relay is set and the session is not a connection's own, as an HTTP+SSE one is)."""
    relay = shared.relay
    session = ex.session
    if relay is None or ex.outgoing is not None or session is None or session.id is None:
        return None
    return relay, session.id


def cancel(shared: Shared, entry: _wire.Entry, ex: Exchange) -> Relayed | None:
    """``notifications/cancelled``: stop the requests of the client's scope running under
    the id it names; malformed params are ignored (nothing is owed for a notification).
    With other workers serving the session, the cancellation is relayed to them too: the
    delivery to await (:data:`Relayed`)."""
    if ex.inflight is None:
        return None
    try:
        params = entry.params() if entry.has_params else None
    except ValueError:  # nested past what entry.params() builds
        params = None
    request_id = params.get("requestId") if type(params) is dict else None
    if not is_request_id(request_id):
        log.debug("notifications/cancelled ignored: requestId is not a request id")
        return None
    ex.inflight.cancel(request_id)
    relayed = shared_session(shared, ex)
    if relayed is not None:
        return delivered(relayed[0].cancel(relayed[1], request_id))
    return None


async def delivered(write: Awaitable[None]) -> Reply | None:
    """Await a relayed write (:class:`~jetmcp.state.base.Relay`): None once it landed, else
    the error reply (-32000, id null) that tells the client it may not have, which an HTTP
    transport answers 503 with ``Retry-After`` instead of 202: a client is never
    told 202 for an answer or a cancellation that Redis refused or did not take in time."""
    try:
        await write
    except McpError as exc:
        log.warning("%s", exc.message)
        return Reply(_encode_error(None, exc.code, exc.message), UNDELIVERED, exc.code)
    return None


def carries_modern_meta(frame: _wire.Frame) -> bool:
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


__all__ = [
    "LegacyRunner",
    "ModernRunner",
    "Pending",
    "Relayed",
    "Runner",
    "Served",
    "Shared",
    "cancel",
    "carries_modern_meta",
    "delivered",
    "made_at_once",
    "params_of",
]
