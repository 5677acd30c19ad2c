"""What a transport hands the dispatcher for one inbound body: the :class:`Exchange` (its
revision, session, sink, auth and routing headers), the :class:`LazyExchange` made only when
something asks for it, and :data:`Started`, what the dispatcher's ``start`` gives back
(:class:`~jetmcp.core.dispatch.Dispatcher`)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from jetmcp.core.call import NULL_SINK, Outgoing, Session, Sink
from jetmcp.core.inflight import InFlight
from jetmcp.protocol.modern import RoutingHeaders
from jetmcp.protocol.revisions import Revision

if TYPE_CHECKING:
    from jetmcp.core.principal import Principal


class Exchange:
    """One inbound body: what the transport knows about it.

    A 2026-07-28 body has ``revision.modern``; over HTTP ``headers`` then holds its routing
    headers. ``sniff_meta`` (stdio) serves a line the modern way when its requests carry a
    ``_meta`` protocol version, whatever the session negotiated. ``outgoing`` is where the
    client's answers to server-to-client requests are looked up (and where this body's
    handlers register theirs): the session's own table when None and there is a session,
    else the dispatcher's table for session-less requests. ``answer_cancelled``: whether a
    cancelled request still gets an error reply (stdio sends nothing for it, as the spec
    asks; an HTTP POST that carried a request must be answered all the same).

    ``sink`` None: the transport's ``opener`` makes it (from ``channel``, the transport's
    own handle on the body) when a handler first needs it, and most never do (a call the
    extension answers has no use for one). :attr:`opened` is what was made, if anything.
    """

    __slots__ = (
        "answer_cancelled",
        "auth",
        "channel",
        "eager",
        "headers",
        "inflight",
        "opened",
        "opener",
        "outgoing",
        "revision",
        "session",
        "sniff_meta",
    )

    def __init__(
        self,
        revision: Revision,
        session: Session | None,
        sink: Sink | None = NULL_SINK,
        inflight: InFlight | None = None,
        answer_cancelled: bool = False,
        # Not keyword-only: the HTTP POST paths pass every argument by position, as calling
        # a class with keywords builds a dict of them for each request (some 200 ns).
        headers: RoutingHeaders | None = None,
        sniff_meta: bool = False,
        outgoing: Outgoing | None = None,
        auth: Principal | None = None,
        eager: bool = False,
        opener: Callable[[Exchange], Sink] | None = None,
        channel: Any = None,
    ) -> None:
        self.revision = revision
        self.session = session
        #: The sink, if anything asked for it (None while nothing has).
        self.opened = sink
        #: Makes the sink when it is None and first asked for (None: it is NULL_SINK).
        self.opener = opener
        self.channel = channel
        self.inflight = inflight
        self.answer_cancelled = answer_cancelled
        self.headers = headers
        self.sniff_meta = sniff_meta
        self.outgoing = outgoing
        #: Who sent the body (its verified bearer token), None without auth.
        self.auth = auth
        #: Whether the caller awaits what :meth:`Dispatcher.start` gives back in the very
        #: task that called it (an HTTP request's): the first step of a single request's
        #: coroutine handler then runs inside ``start``, and a handler that finishes without
        #: suspending is answered at once, with no waiting machinery.
        self.eager = eager

    #: The HTTP request's headers as the engine holds them, decoded only when a tool asks
    #: (:mod:`jetmcp.core.request`): None here (no HTTP request, as on stdio), set on an
    #: :class:`HttpExchange` (a class attribute, so an exchange off HTTP pays nothing).
    http_headers: Any = None

    @property
    def sink(self) -> Sink:
        """Where the body's handlers send what precedes their results (made now, when the
        transport gave an ``opener`` and nothing made it yet)."""
        sink = self.opened
        if sink is None:
            opener = self.opener
            sink = self.opened = NULL_SINK if opener is None else opener(self)
        return sink

    @property
    def call_sink(self) -> Sink:
        """The sink a handler's :class:`~jetmcp.core.call.Call` is given: :attr:`sink` once it
        is made, else this exchange, which makes it on the first message sent (a handler
        that sends nothing costs none)."""
        sink = self.opened
        return self if sink is None else sink

    def exchange(self) -> Exchange:
        """This exchange (what :meth:`LazyExchange.exchange` makes)."""
        return self

    async def send(self, message: bytes) -> None:
        """Send through :attr:`sink` (made now if need be): what :attr:`call_sink` needs."""
        await self.sink.send(message)

    async def close_stream(self, retry_ms: int | None = None) -> None:
        """Close :attr:`sink`'s stream, where it has one (``Context.close_sse_stream``)."""
        close = getattr(self.sink, "close_stream", None)
        if close is not None:
            await close(retry_ms)


class HttpExchange(Exchange):
    """The exchange of an HTTP POST: an :class:`Exchange` whose :attr:`http_headers` the
    transport sets once made (the engine's header map, kept by reference)."""

    __slots__ = ("http_headers",)


class LazyExchange:
    """An :class:`Exchange` made only when something asks for it (:meth:`exchange`): a
    transport's function that makes it and its arguments, and the revision meanwhile.

    :meth:`Dispatcher.resume` takes one where it takes an exchange. A call of a tool that
    takes a Context runs with it; the tool needs a real exchange only when it touches its
    call (to send, or to read its session, auth or ``_meta``), and most never do (a log
    message below the request's level, or no use of the Context at all). Anything else
    :meth:`Dispatcher.resume` does makes the exchange first. :attr:`made` is what was made,
    if anything. Once the transport has answered with no exchange made, :attr:`answered`
    is set, and one made later (a task the tool left behind logs) sends nothing, as an
    exchange does once its reply went out."""

    __slots__ = ("_args", "_make", "answered", "made", "revision")

    def __init__(
        self, revision: Revision, make: Callable[..., Exchange], args: tuple[Any, ...]
    ) -> None:
        self.revision = revision
        self._make = make
        self._args = args
        self.made: Exchange | None = None
        self.answered = False

    def exchange(self) -> Exchange:
        """The exchange, made now if nothing made it yet."""
        ex = self.made
        if ex is None:
            ex = self.made = self._make(*self._args)
            if self.answered:
                ex.opener = None  # its sink is NULL_SINK
        return ex

    @property
    def call_sink(self) -> Sink:
        """:attr:`Exchange.call_sink` of the exchange (made now)."""
        return self.exchange().call_sink

    @property
    def auth(self) -> Principal | None:
        """:attr:`Exchange.auth` of the exchange (made now)."""
        return self.exchange().auth

    @property
    def http_headers(self) -> Any:
        """:attr:`Exchange.http_headers` of the exchange (made now)."""
        return self.exchange().http_headers


#: What :meth:`Dispatcher.start` gives back.
Started = bytes | Coroutine[Any, Any, bytes | None] | None


__all__ = ["Exchange", "HttpExchange", "LazyExchange", "Started"]
