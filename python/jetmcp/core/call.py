"""Per-request and per-session state handed from the transports, through the dispatcher,
to the method handlers."""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from orjson import loads

from jetmcp._wire import Plans, RawJSON, dumps, encode_notification, encode_request
from jetmcp.errors import INTERNAL_ERROR, REQUEST_TIMEOUT, McpError
from jetmcp.protocol.meta import META_CLIENT_CAPABILITIES, META_LOG_LEVEL
from jetmcp.protocol.revisions import Revision

if TYPE_CHECKING:
    from jetmcp.core.principal import Principal

#: What a method handler gives back: the result object itself when it needed no waiting,
#: else an awaitable of it. Answering in place lets the dispatcher skip a task.
Result = dict[str, Any] | Awaitable[dict[str, Any]]
#: A method handler: params (``{}`` when absent) and the call, to a result.
Handler = Callable[[dict[str, Any], "Call"], Result]


def after_write(write: Awaitable[None] | None) -> Result:
    """``{}``, once a shared store's ``write`` (if any) landed: a write the store refused
    raises its McpError, which the request answers."""
    if write is None:
        return {}

    async def landed() -> dict[str, Any]:
        await write
        return {}

    return landed()


#: Store writes nobody awaits (a notification's), kept referenced until they finish.
_BACKGROUND: set[asyncio.Future[None]] = set()


def _in_background(write: Awaitable[None] | None) -> None:
    """Run a store write no request can await (``notifications/initialized`` has no answer
    to carry an error): a failure is logged as a warning, never dropped silently."""
    if write is None:
        return
    task = asyncio.ensure_future(write)
    _BACKGROUND.add(task)
    task.add_done_callback(_background_done)


def _background_done(task: asyncio.Future[None]) -> None:
    _BACKGROUND.discard(task)
    if not task.cancelled() and task.exception() is not None:
        logging.getLogger("jetmcp.state").warning("a session write was lost: %s", task.exception())


class Timed:
    """A handler's awaitable result that carries its own deadline: ``seconds`` instead of
    the server's request timeout (a tool's ``timeout``), or ``math.inf`` for a request that
    waits by design (``subscriptions/listen``, ``tasks/result``). Awaiting it awaits the
    result, so code that knows nothing of deadlines can still use it."""

    __slots__ = ("awaitable", "seconds")

    def __init__(self, awaitable: Awaitable[dict[str, Any]], seconds: float) -> None:
        self.awaitable = awaitable
        self.seconds = seconds

    def __await__(self) -> Any:
        return self.awaitable.__await__()


class EncodedResult(dict[str, Any]):
    """A result that stays as it is once built (a listing served again and again), with its
    JSON made once: the dispatcher writes that instead of encoding the dict on every reply.
    It is still a dict for anything that reads it; nothing may change it."""

    __slots__ = ("json",)

    def __init__(self, value: dict[str, Any]) -> None:
        super().__init__(value)
        self.json = RawJSON(dumps(value))


class Sink(Protocol):
    """Where messages related to one request go (its SSE stream, stdout, or nowhere)."""

    async def send(self, message: bytes) -> None: ...


class NullSink:
    """Drops messages: used where the transport cannot carry them (plain JSON replies)."""

    __slots__ = ()

    async def send(self, message: bytes) -> None:
        return None


NULL_SINK = NullSink()


class CallContext(Protocol):
    """What the core needs of the Context a server gives the tools that take one (the class
    is the server's: ``Server.context_class``): the call it serves."""

    def __init__(self, call: Call, server: Any) -> None: ...

    @property
    def call(self) -> Call: ...


#: The syslog levels of ``logging/setLevel``, least severe first.
LOG_LEVELS: tuple[str, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
LOG_RANK: dict[str, int] = {name: i for i, name in enumerate(LOG_LEVELS)}


class Session:
    """A legacy-era session: what ``initialize`` negotiated with one client.

    The client's capabilities and info are kept as the JSON they were given in (bounded by
    ``Settings.max_client_data_bytes`` at ``initialize``) and read into fresh dicts when
    asked for: a session costs the memory of those bytes, never the much larger object graph
    a crafted ``initialize`` could expand into.
    """

    __slots__ = (
        "__weakref__",
        "_caps_json",
        "_info_json",
        "_initialized",
        "_log_level",
        "extra",
        "id",
        "outbound",
        "outgoing",
        "principal",
        "revision",
        "subscriptions",
        "sync",
    )

    def __init__(
        self,
        session_id: str | None,
        revision: Revision,
        client_capabilities: dict[str, Any] | bytes | None = None,
        client_info: dict[str, Any] | bytes | None = None,
    ) -> None:
        self.id = session_id
        self.revision = revision
        self._caps_json = _as_json(client_capabilities)
        self._info_json = _as_json(client_info)
        self._initialized = False
        self._log_level: str | None = None
        #: Resource URIs this session subscribed to (``resources/subscribe``).
        self.subscriptions: set[str] = set()
        #: Fields a store keeps for the session besides the ones above (name -> str), kept
        #: as they are: the record is a dict, so a later field needs no change here.
        self.extra: dict[str, str] = {}
        #: Told of every change to :attr:`initialized`, :attr:`log_level` and the
        #: subscriptions (``sync(session, field, value)``) by a store shared between
        #: processes; None for a session that lives in one process only.
        #: It may return an awaitable: the write itself, which raises McpError when the store
        #: refused it (awaited by the request that made the change, so its client learns).
        self.sync: Callable[[Session, str, Any], Awaitable[None] | None] | None = None
        #: Where messages not tied to a request go: stdout on stdio, the session's GET
        #: streams over HTTP. The transport sets it; nowhere until then.
        self.outbound: Sink = NULL_SINK
        #: The server-to-client requests sent to this session: only an answer the same
        #: session sends back can reach them.
        self.outgoing = Outgoing()
        #: The :attr:`Principal.key <jetmcp.auth.Principal.key>` of whoever opened the
        #: session (None without auth): only the same principal may use it. A plain string,
        #: so every session store keeps it as it is.
        self.principal: str | None = None

    @property
    def initialized(self) -> bool:
        """Whether the client sent ``notifications/initialized``."""
        return self._initialized

    @initialized.setter
    def initialized(self, value: bool) -> None:
        self._initialized = value
        _in_background(self._synced("initialized", value))

    def _synced(self, field: str, value: Any) -> Awaitable[None] | None:
        return self.sync(self, field, value) if self.sync is not None else None

    @property
    def log_level(self) -> str | None:
        """The minimum level of ``notifications/message`` to send; None sends every level."""
        return self._log_level

    @log_level.setter
    def log_level(self, value: str | None) -> None:
        _in_background(self.set_log_level(value))

    def set_log_level(self, value: str | None) -> Awaitable[None] | None:
        """``logging/setLevel``: what :attr:`log_level` does, returning the shared store's
        write (None without one) for the request to await."""
        self._log_level = value
        return self._synced("logLevel", value)

    def subscribe(self, uri: str) -> Result:
        """``resources/subscribe``: updates of ``uri`` are sent to this session. Returns the
        answer, ``{}``, once a shared store's write landed (awaitable then): a write the
        store refused is the client's error, never a subscription silently lost."""
        self.subscriptions.add(uri)
        return after_write(self._synced("subscribe", uri))

    def unsubscribe(self, uri: str) -> Result:
        self.subscriptions.discard(uri)
        return after_write(self._synced("unsubscribe", uri))

    def record(self) -> dict[str, str | bytes]:
        """The session as a flat record (field -> text or JSON bytes), for a store that
        keeps it outside the process; :meth:`from_record` reads it back."""
        out: dict[str, str | bytes] = dict(self.extra)
        out["revision"] = self.revision.version
        out["capabilities"] = self._caps_json
        out["clientInfo"] = self._info_json
        out["initialized"] = "1" if self._initialized else "0"
        if self._log_level is not None:
            out["logLevel"] = self._log_level
        if self.principal is not None:
            out["principal"] = self.principal
        return out

    @classmethod
    def from_record(cls, session_id: str, record: dict[str, bytes]) -> Session | None:
        """A session read back from :meth:`record`'s fields (None when they name no
        revision this server serves)."""
        from jetmcp.protocol import revisions

        revision = revisions.lookup(record.get("revision", b"").decode())  # a legacy one
        if revision is None:
            return None
        session = cls(
            session_id,
            revision,
            record.get("capabilities", b"{}"),
            record.get("clientInfo", b"{}"),
        )
        session.update(record)
        return session

    def update(self, record: dict[str, bytes]) -> None:
        """Take the mutable fields of a record (read back from a store) as they are now."""
        self._initialized = record.get("initialized") == b"1"
        level = record.get("logLevel")
        self._log_level = level.decode() if level else None
        principal = record.get("principal")
        self.principal = principal.decode() if principal else None
        known = ("revision", "capabilities", "clientInfo", "initialized", "logLevel", "principal")
        self.extra = {k: v.decode() for k, v in record.items() if k not in known}

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """The capabilities the client declared at ``initialize`` (a fresh dict)."""
        value: dict[str, Any] = loads(self._caps_json)
        return value

    @property
    def client_info(self) -> dict[str, Any]:
        """The ``clientInfo`` the client sent at ``initialize`` (a fresh dict)."""
        value: dict[str, Any] = loads(self._info_json)
        return value

    @property
    def client_data_size(self) -> int:
        """Bytes of client data this session keeps (capabilities and info as JSON)."""
        return len(self._caps_json) + len(self._info_json)


def _as_json(value: dict[str, Any] | bytes | None) -> bytes:
    if value is None:
        return b"{}"
    return value if isinstance(value, bytes) else dumps(value)


_MAX_SAFE_INTEGER = 2**53 - 1


class Outgoing:
    """Server-to-client requests of one client scope (a session, a stdio process, an
    HTTP+SSE connection, or the session-less requests of an HTTP endpoint) still waiting for
    the client's answer.

    An answer is looked up only in the table of the scope it arrived in, so one client can
    never answer another's request. Ids are drawn at random for each request (128 bits), so
    nobody can name a request they were not sent, not even in the shared session-less scope.
    """

    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending: dict[str, asyncio.Future[Any]] = {}

    def __len__(self) -> int:
        return len(self._pending)

    def open(
        self, method: str, params: dict[str, Any] | None
    ) -> tuple[str, bytes, asyncio.Future[Any]]:
        """A new request: its id, its encoded message, and the future its answer sets."""
        request_id = secrets.token_urlsafe(16)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        raw_id = dumps(request_id)
        message = (
            encode_request(raw_id, method, params)
            if params is not None
            else encode_request(raw_id, method)
        )
        return request_id, message, future

    def close(self, request_id: str) -> None:
        self._pending.pop(request_id, None)

    def resolve(self, request_id: Any, is_error: bool, value: Any) -> bool:
        """Hand the client's answer to its waiter; False when nobody waits for that id."""
        future = self._pending.pop(request_id, None) if isinstance(request_id, str) else None
        if future is None or future.done():
            return False
        if is_error:
            error = value if isinstance(value, dict) else {}
            code = error.get("code")
            message = error.get("message")
            # Exact int within JSON's safe range: a bool is not a code, and a code past 64 bits
            # could not be encoded again in the reply that passes it on.
            exc = McpError(
                code if type(code) is int and abs(code) <= _MAX_SAFE_INTEGER else INTERNAL_ERROR,
                message if isinstance(message, str) else "error from the client",
            )
            if "data" in error:
                exc.data = error["data"]
            future.set_exception(exc)
        else:
            future.set_result(value)
        return True


def log_wanted(level: str, floor: object) -> bool:
    """Whether a message at ``level`` goes to a client whose request named ``floor`` as its
    log level (a revision whose requests carry it): nothing when it named none."""
    return isinstance(floor, str) and LOG_RANK.get(level, 0) >= LOG_RANK.get(floor, 0)


class Call:
    """One request being served."""

    __slots__ = (
        "_meta",
        "_plans",
        "auth",
        "http_headers",
        "method",
        "outgoing",
        "raw_id",
        "revision",
        "session",
        "sink",
    )

    def __init__(
        self,
        method: str,
        raw_id: bytes | None,
        revision: Revision,
        session: Session | None,
        sink: Sink,
        meta: dict[str, Any] | None,
        outgoing: Outgoing | None = None,
        auth: Principal | None = None,
        http_headers: Any = None,
    ) -> None:
        self.method = method
        self.raw_id = raw_id
        self.revision = revision
        self.session = session
        self.sink = sink
        self._meta = meta
        #: The extension's plans of this request when its ``_meta`` is still to be read
        #: from them (:meth:`meta_from`).
        self._plans: Plans | None = None
        #: Where this call's server-to-client requests wait for their answers (None: the
        #: transport cannot carry them).
        self.outgoing = outgoing
        #: Who sent the request (its verified bearer token), None without auth.
        self.auth = auth
        #: The HTTP request's headers as the engine holds them, None off HTTP
        #: (:attr:`jetmcp.core.exchange.Exchange.http_headers`).
        self.http_headers = http_headers

    @property
    def meta(self) -> dict[str, Any] | None:
        """The request's ``params._meta`` (None without one)."""
        plans = self._plans
        if plans is not None:
            self._plans = None
            self._meta = plans.meta(0)
        return self._meta

    @meta.setter
    def meta(self, meta: dict[str, Any] | None) -> None:
        self._plans = None
        self._meta = meta

    def meta_from(self, plans: Plans) -> None:
        """Read :attr:`meta` from the only entry of ``plans`` (planned by the extension) if
        and when it is asked for: most tools never ask, and :meth:`wants_log` reads just
        the log level from them."""
        self._plans = plans

    @property
    def request_id(self) -> Any:
        """The request id as a JSON value (str or int); None for a notification."""
        return None if self.raw_id is None else loads(self.raw_id)

    @property
    def progress_token(self) -> Any:
        return None if self.meta is None else self.meta.get("progressToken")

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """What the client declared: per request on 2026-07-28 (never cached), else at
        initialize."""
        if self.revision.per_request_capabilities:
            caps = (self.meta or {}).get(META_CLIENT_CAPABILITIES)
            return caps if isinstance(caps, dict) else {}
        return self.session.client_capabilities if self.session is not None else {}

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification related to this request (on its stream, when it has one)."""
        if self.sink is NULL_SINK:
            return
        await self.sink.send(encode_notification(method, params if params is not None else {}))

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        timeout: float | None = 300.0,  # noqa: ASYNC109 - a bound every caller gets by default
    ) -> Any:
        """Send a server-to-client request on this request's stream and wait for the answer.

        Raises :class:`McpError` when the transport cannot carry it, for the client's error
        answer, and (code -32001) when no answer came within ``timeout`` seconds; the client
        is then sent ``notifications/cancelled`` for it.
        """
        outgoing = self.outgoing
        if outgoing is None or self.sink is NULL_SINK:
            raise McpError(
                INTERNAL_ERROR,
                f"cannot send {method} to the client: this request has no stream to carry it",
            )
        request_id, message, future = outgoing.open(method, params)
        try:
            await self.sink.send(message)
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            await self.notify(
                "notifications/cancelled", {"requestId": request_id, "reason": "timed out"}
            )
            raise McpError(REQUEST_TIMEOUT, f"the client did not answer {method} in time") from None
        finally:
            outgoing.close(request_id)

    def wants_log(self, level: str) -> bool:
        """Whether a ``notifications/message`` at ``level`` should be sent for this call."""
        if self.revision.per_request_log_level:
            # A planned call reads just the member from the extension's plan.
            plans = self._plans
            meta = self._meta
            floor = plans.log_level(0) if plans is not None else (meta or {}).get(META_LOG_LEVEL)
            return log_wanted(level, floor)
        else:
            floor = self.session.log_level if self.session is not None else None
            if floor is None:
                return True
        return LOG_RANK.get(level, 0) >= LOG_RANK.get(floor, 0)


__all__ = [
    "LOG_LEVELS",
    "NULL_SINK",
    "Call",
    "CallContext",
    "EncodedResult",
    "Handler",
    "NullSink",
    "Result",
    "Session",
    "Sink",
    "Timed",
    "dumps",
]
