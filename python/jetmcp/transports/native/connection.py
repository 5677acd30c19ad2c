"""One HTTP/1.1 connection of the native engine: an ``asyncio.Protocol`` on uvloop whose
``data_received`` is the extension's (:class:`jetmcp._wire.Http1Protocol`, the base class):
it hands the bytes to the connection's state machine (:class:`jetmcp._wire.Http1Connection`)
and answers what it can inside the callback, with no Python frame of the engine's own
(``NativeServer.native``, a :class:`jetmcp._wire.NativeLane`, and the Python rest of a
request's path after it: :meth:`NativeServer._general` and the methods after it).

A usual POST (auth and observers off, headers judged before: :meth:`NativeServer._judge`)
goes down the same lane as under Granian (:meth:`McpHttpApp.lane_post`): a call the
extension plans and answers is written back before the callback returns, with no
coroutine and no task. An ``async`` tool's coroutine runs as an eager task
(``jetmcp._wire.eager_task``: a real task whose first step runs inside the callback, as
Python 3.12's eager tasks run), so a tool that returns without waiting is answered there
too, with ``current_task``, ``asyncio.timeout`` and its own context as in any task
(``NativeServer.answer``); what else the extension hands back to Python (a value Python
shapes, a tool that takes a Context, a tool that waited) is finished by the dispatcher in
an eager task of its own (:meth:`HttpConnection.eager`). Anything else runs as a task of
the app's RSGI entry point on the same loop, given this connection's request through the
small RSGI-shaped objects below (:class:`NativeScope`, :class:`NativeProto`,
:class:`RequestHeaders`); its reply is written back by this connection. One request is
out at a time: pipelined requests wait, unparsed, until the one before them is answered
(the state machine holds them).

Backpressure: when the transport's write buffer passes its high mark no further request
is parsed and the socket is not read until it drains below the low mark; SSE writes wait
for it too (:meth:`NativeStream.send_bytes`).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Coroutine, Iterator
from functools import partial
from http import HTTPStatus
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from jetmcp import _wire
from jetmcp.errors import INVALID_REQUEST
from jetmcp.transports._http import JSON_HEADERS

if TYPE_CHECKING:
    from jetmcp.transports.native.server import NativeServer

log = logging.getLogger("jetmcp.http")

_JSON_FIELDS = _wire.Http1Fields([(b"content-type", b"application/json")])
#: Header values read as Granian reads them: visible ASCII, spaces and tabs only.
_READABLE = re.compile(rb"[\t\x20-\x7e]*\Z")
_HEAD = _wire.HTTP1_HEAD
_BODY = _wire.HTTP1_BODY
_IDLE = _wire.HTTP1_IDLE
_Http1Error = _wire.Http1Error
_encode_error = _wire.encode_error
#: A task whose first step runs now, in this callback (see :meth:`HttpConnection.eager`).
_eager_task = _wire.eager_task


def _text(value: bytes) -> str | None:
    return value.decode("ascii") if _READABLE.match(value) else None


def _fields(headers: Any) -> Any:
    """RSGI response headers (``(str, str)`` pairs) as the state machine takes them."""
    if headers is JSON_HEADERS:
        return _JSON_FIELDS
    return [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]


class RequestHeaders:
    """A request's headers with the lookups of Granian's header map, read from the parsed
    bytes on demand (no Python string for a header nobody asks for). Names are matched in
    any case; a value with bytes outside visible ASCII reads as absent, as under Granian,
    though ``in`` still sees the header."""

    __slots__ = ("_request",)

    def __init__(self, request: _wire.Http1Request) -> None:
        self._request = request

    def get(self, name: str, default: str | None = None) -> str | None:
        value = self._request.header(name.encode("latin-1"))
        if value is None:
            return default
        text = _text(value)
        return default if text is None else text

    def get_all(self, name: str) -> list[str]:
        values = self._request.header_all(name.encode("latin-1"))
        return [t for t in map(_text, values) if t is not None]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._request.header(name.encode("latin-1")) is not None

    def items(self) -> list[tuple[str, str]]:
        pairs = []
        for name, value in self._request.headers():
            text = _text(value)
            if text is not None:
                pairs.append((name.decode("latin-1").lower(), text))
        return pairs

    def keys(self) -> list[str]:
        return [name for name, _ in self.items()]

    def values(self) -> list[str]:
        return [value for _, value in self.items()]

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self._request.headers())


class NativeScope:
    """What the RSGI app reads of a request (Granian's ``Scope``, HTTP only)."""

    __slots__ = (
        "authority",
        "client",
        "headers",
        "http_version",
        "method",
        "path",
        "query_string",
        "scheme",
        "server",
    )
    proto = "http"
    rsgi_version = "1.5"

    def __init__(self, request: _wire.Http1Request, client: str, server: str, scheme: str) -> None:
        target = request.target.decode("latin-1")
        path, _, query = target.partition("?")
        if "%" in path:
            path = unquote(path)  # decoded once, as Granian (and any ASGI server) gives it
        self.method = request.method.decode("latin-1")
        self.path = path
        self.query_string = query
        self.headers = RequestHeaders(request)
        self.http_version = request.http_version.decode("latin-1")
        self.client = client
        self.server = server
        self.scheme = scheme
        #: HTTP/2's ``:authority``; never set on HTTP/1.1 (the Host header says it).
        self.authority: str | None = None


class NativeStream:
    """The body of a streamed (SSE) response: Granian's ``ResponseStream`` as the app uses
    it. A write to a client that is gone raises ``ConnectionResetError``; a write while the
    client is not reading waits until it reads again."""

    __slots__ = ("_owner",)

    def __init__(self, owner: HttpConnection) -> None:
        self._owner = owner

    async def send_bytes(self, data: bytes) -> None:
        owner = self._owner
        if owner.gone:
            raise ConnectionResetError("the client closed the connection")
        owner.transport.write(owner.conn.stream_data(data))
        if owner.write_paused:
            await owner.drained()

    async def send_str(self, data: str) -> None:
        await self.send_bytes(data.encode())


class NativeProto:
    """One request's side of the RSGI protocol (Granian's ``HTTPProtocol``): its body (read
    whole by the state machine before the request was handed out) and its response, which
    the connection writes."""

    __slots__ = ("_body", "_owner", "head", "started", "stream")

    def __init__(self, owner: HttpConnection, body: bytes, head: bool = False) -> None:
        self._owner = owner
        self._body = body
        #: Whether the request is a HEAD (its answer has no body).
        self.head = head
        #: Whether a response began (only one may).
        self.started = False
        #: The streamed response under way, if one began.
        self.stream: NativeStream | None = None

    def __call__(self) -> asyncio.Future[bytes]:
        done: asyncio.Future[bytes] = self._owner.loop.create_future()
        done.set_result(self._body)
        return done

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[bytes]:
        if self._body:
            yield self._body

    def response_bytes(self, status: int, headers: Any, body: bytes) -> None:
        if self.started:
            raise RuntimeError("the response already started")
        owner = self._owner
        if headers is JSON_HEADERS and owner.busy is self:
            # The usual answer of a task (write_response in short): the connection goes on
            # once the task yields.
            data = owner.conn.respond(status, _JSON_FIELDS, body, owner.server.draining)
            self.started = True
            if not owner.gone:
                owner.transport.write(data)
            owner.busy = None
            owner.loop.call_soon(owner.proceed)
            return
        if headers is not JSON_HEADERS and any(k.lower() == "content-length" for k, _ in headers):
            # The state machine writes Content-Length; a HEAD answer names the GET's own.
            length = next(v for k, v in headers if k.lower() == "content-length")
            headers = [(k, v) for k, v in headers if k.lower() != "content-length"]
            if self.head and not body and length.isdigit():
                body = bytes(int(length))  # not sent: sized only
        self.started = True
        try:
            self._owner.write_response(self, status, headers, body)
        except Exception:
            self.started = False  # what the app answers instead (or the 500) goes out
            raise

    def response_empty(self, status: int, headers: Any) -> None:
        self.response_bytes(status, headers, b"")

    def response_str(self, status: int, headers: Any, body: str) -> None:
        self.response_bytes(status, headers, body.encode())

    def response_stream(self, status: int, headers: Any) -> NativeStream:
        if self.started:
            raise RuntimeError("the response already started")
        self.started = True
        owner = self._owner
        head = owner.conn.start_stream(status, _fields(headers), owner.server.draining)
        if not owner.gone:
            owner.transport.write(head)
        self.stream = NativeStream(owner)
        return self.stream

    async def client_disconnect(self) -> None:
        """Returns once the client has closed the connection."""
        await asyncio.shield(self._owner.lost)


class HttpConnection(_wire.Http1Protocol, asyncio.Protocol):
    """One client connection (see the module docs). ``data_received`` is the extension's
    (:class:`jetmcp._wire.Http1Protocol`, which also keeps ``conn``, ``transport``,
    ``busy``, ``gone``, ``write_paused``, ``read_paused`` and ``served``)."""

    def __init__(self, server: NativeServer) -> None:
        self.server = server
        self.loop = server.loop
        #: Set once the client is gone (what ``client_disconnect`` waits for).
        self.lost: asyncio.Future[None] = self.loop.create_future()
        self._drain: asyncio.Future[None] | None = None
        #: The (phase, requests handed out) the timeout watch saw last, since when
        #: (``NativeServer.clock``).
        self.mark: tuple[int, int] = (_IDLE, 0)
        self.since = server.clock
        self.client = ""
        self.here = ""

    # -- asyncio.Protocol ----------------------------------------------------------------

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        server = self.server
        transport.set_write_buffer_limits(high=server.write_high, low=server.write_high // 4)
        peer = transport.get_extra_info("peername")
        here = transport.get_extra_info("sockname")
        self.client = _address(peer)
        self.here = _address(here)
        server.admit(self)

    def eof_received(self) -> bool | None:
        # The client will send nothing more: what it asked is still answered, then closed;
        # a request it cut short is answered 400.
        if self.busy is None:
            if self.conn.phase in (_HEAD, _BODY):
                self.transport.write(
                    json_close(400, "Incomplete body: the connection ended before it")
                )
            self.transport.close()
            return None
        # A reply can still be written, but the client is gone as far as waiting goes
        # (client_disconnect: a 2026-07-28 request is cancelled, an SSE stream ends).
        if not self.lost.done():
            self.lost.set_result(None)
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        self.gone = True
        if not self.lost.done():
            self.lost.set_result(None)
        drain = self._drain
        if drain is not None and not drain.done():
            drain.set_result(None)
        self.server.forget(self)

    def pause_writing(self) -> None:
        self.write_paused = True
        if not self.read_paused:
            self.read_paused = True
            self.transport.pause_reading()

    def resume_writing(self) -> None:
        self.write_paused = False
        drain = self._drain
        if drain is not None and not drain.done():
            drain.set_result(None)
        self._drain = None
        self.proceed()

    # -- requests ------------------------------------------------------------------------

    def serve(self, request: _wire.Http1Request | None) -> None:
        """Answer ``request`` and the pipelined ones after it, in order, until one needs a
        task (its reply then continues from :meth:`_ended`) or writing must wait."""
        conn = self.conn
        answer = self.server.answer
        while request is not None:
            self.served += 1
            if not answer(self, request):
                return
            if self.gone or self.write_paused:
                return
            try:
                request = conn.next_request()
            except _Http1Error as refused:
                self.refuse(refused)
                return
        # settle(), inline for the usual keep-alive case.
        if conn.closed or self.server.draining:
            self.transport.close()
            return
        interim = conn.take_continue()
        if interim is not None:
            self.transport.write(interim)
        if self.read_paused and not self.write_paused and not conn.wants_pause:
            self.read_paused = False
            self.transport.resume_reading()

    def proceed(self) -> None:
        """Go on with held input once the previous reply is written."""
        if self.busy is not None or self.gone:
            return
        try:
            request = self.conn.next_request()
        except _Http1Error as refused:
            self.refuse(refused)
            return
        if request is not None:
            self.serve(request)
        else:
            self.settle()

    def settle(self) -> None:
        """No request is out: close when the state machine is done, else read again."""
        conn = self.conn
        if conn.closed:
            self.transport.close()
            return
        if self.server.draining:
            self.transport.close()
            return
        interim = conn.take_continue()
        if interim is not None:
            self.transport.write(interim)
        if self.read_paused and not self.write_paused and not conn.wants_pause:
            self.read_paused = False
            self.transport.resume_reading()

    def later(self, work: Coroutine[Any, Any, None], proto: NativeProto) -> bool:
        """Finish a request in a task; its reply is written when it comes. Returns False
        (the request was not answered in the callback)."""
        self.busy = proto
        task = self.loop.create_task(work)
        task.add_done_callback(partial(self._ended, proto))
        self.server.tasks.add(task)
        return False

    def eager(self, work: Coroutine[Any, Any, bytes | None], proto: NativeProto) -> bool:
        """:meth:`later` for a request whose task most often ends in its first step: that
        step runs now, inside the task (``jetmcp._wire.eager_task``), and a reply it returned is
        written at once (True: answered in the callback). Otherwise the task goes on as
        :meth:`later`'s does, answering through ``proto``."""
        self.busy = proto
        task = _eager_task(self.loop, work)
        if task.done() and not task.cancelled() and task.exception() is None:
            reply = task.result()
            if reply is not None:
                self.busy = None
                self.transport.write(
                    self.conn.respond(200, _JSON_FIELDS, reply, self.server.draining)
                )
                return True
        task.add_done_callback(partial(self._ended, proto))
        self.server.tasks.add(task)
        return False

    def _ended(self, proto: NativeProto, task: asyncio.Task[Any]) -> None:
        """A request's task is over: a streamed response ends now, a missing one is 500."""
        self.server.tasks.discard(task)
        reply = None
        if not task.cancelled():
            exc = task.exception()
            if exc is not None:
                log.error("a request failed", exc_info=exc)
            else:
                reply = task.result()  # :meth:`eager`'s reply, when its task was not
        if proto is not self.busy:
            return  # answered already (the connection went on when it was written)
        self.busy = None
        if self.gone:
            return
        if not proto.started:
            proto.started = True
            if type(reply) is bytes:
                self._write(200, JSON_HEADERS, reply)
            else:
                # The app ended without a response (Granian answers such a request 500 too).
                self._write(500, JSON_HEADERS, b"")
        elif proto.stream is not None:
            self.transport.write(self.conn.end_stream())
        self.proceed()

    def write_response(self, proto: NativeProto, status: int, headers: Any, body: bytes) -> None:
        """A whole response to ``proto``'s request; the connection goes on with the next one
        (if a task answered it, once that task yields)."""
        self._write(status, headers, body)
        if proto is self.busy:
            self.busy = None
            self.loop.call_soon(self.proceed)

    def _write(self, status: int, headers: Any, body: bytes) -> None:
        data = self.conn.respond(status, _fields(headers), body, self.server.draining)
        if not self.gone:
            self.transport.write(data)

    async def drained(self) -> None:
        """Returns once the transport's write buffer is below its low mark again."""
        if self._drain is None:
            self._drain = self.loop.create_future()
        await asyncio.shield(self._drain)

    # -- refusals and timeouts -----------------------------------------------------------

    def refuse(self, refused: _wire.Http1Error) -> None:
        """Bad framing: its answer (none for an HTTP/2 preface), then the connection closes.
        The answer carries an id-less JSON-RPC error, as every refusal of the app does."""
        if refused.status is not None and not self.gone:
            self.transport.write(refusal(refused, self.server.settings.max_body_bytes))
        self.transport.close()

    def expire(self, status: int, why: str) -> None:
        """Close a connection that ran out of time (or made room for a new one), telling its
        client why with ``status`` when it was part way through a request (0: say nothing)."""
        if self.gone:
            return
        if status:
            self.transport.write(json_close(status, why))
        self.transport.close()

    @property
    def stalled(self) -> bool:
        """Whether the connection is reading a request head or body (it may be evicted)."""
        return self.busy is None and self.conn.phase in (_HEAD, _BODY)


def refusal(refused: _wire.Http1Error, limit: int) -> bytes:
    """The state machine's answer to bad framing with a JSON-RPC error body in place of its
    plain-text one (same status; the connection closes after it)."""
    if refused.status == 413:
        message = f"Body exceeds {limit} bytes"
    else:
        reason = refused.reason
        message = reason[:1].upper() + reason[1:]
    return json_close(refused.status or 400, message)


def json_close(status: int, message: str) -> bytes:
    """A whole response carrying an id-less JSON-RPC error, closing the connection."""
    body = _encode_error(None, INVALID_REQUEST, message)
    return b"HTTP/1.1 %d %s\r\n%s%d\r\nconnection: close\r\n\r\n%s" % (
        status,
        HTTPStatus(status).phrase.encode(),
        b"content-type: application/json\r\ncontent-length: ",
        len(body),
        body,
    )


def _address(info: Any) -> str:
    if isinstance(info, tuple) and len(info) >= 2:
        return f"{info[0]}:{info[1]}"
    return str(info or "")


__all__ = ["HttpConnection", "NativeProto", "NativeScope", "NativeStream", "RequestHeaders"]
