"""Server-Sent Events for the HTTP transports: encoding, the per-POST stream sink, and the
per-session stream hub with its event log.

Streams and ids
---------------
Every stream of a session has an id: ``p<n>`` for the SSE response of a POST, ``g<n>`` for
a standalone GET stream. Event ids are ``<stream id>-<seq>`` (``seq`` counts from 1; the
priming event of a 2025-11-25 stream is ``-0``), so an id names its stream and a client
resuming with ``Last-Event-ID`` gets only that stream's later events (the spec's "replay
only that stream's messages").

A stream is a logical thing; the HTTP connection carrying it may change. A POST stream closed
early (:meth:`PostStream.close_stream`), or whose client went away, keeps its events in the
session's :class:`EventLog`; a GET with ``Last-Event-ID`` replays them and carries the rest
of that stream live, ending after the request's final response.

Messages not tied to a request go to :class:`SessionStreams` (``session.outbound``): each to
exactly one open GET stream, or, while none is open, parked in the log until the next GET
of the session opens, which delivers them first.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jetmcp.core.call import Session
    from jetmcp.protocol.revisions import Revision
    from jetmcp.settings import Settings

#: Response headers of every SSE stream (the spec asks for ``X-Accel-Buffering: no`` so
#: proxies do not hold events back).
SSE_HEADERS: list[tuple[str, str]] = [
    ("content-type", "text/event-stream"),
    ("cache-control", "no-cache"),
    ("x-accel-buffering", "no"),
]
KEEPALIVE = b": keep-alive\n\n"

# The ways a write to a stream fails once its client is gone: granian raises
# RSGIProtocolClosed (a RuntimeError); sockets may raise OSError.
_GONE = (RuntimeError, OSError)

# Ids for POST streams outside any session (never resumable, but still distinct).
_loose_streams = itertools.count(1)
# Keep-alive writes in flight (a task nobody references may be collected mid-write).
_background: set[asyncio.Task[None]] = set()


# ---------------------------------------------------------------------------- encoding


def encode_event(message: bytes, event_id: str | None = None, event: str | None = None) -> bytes:
    """One SSE event carrying ``message`` as its data.

    Compact JSON has no line breaks; anything else is split into several ``data:`` lines, as
    SSE requires, so a client joins it back exactly.
    """
    head = b""
    if event is not None:
        head = b"event: " + event.encode() + b"\n"
    if event_id is not None:
        head += b"id: " + event_id.encode() + b"\n"
    if b"\n" in message or b"\r" in message:
        lines = message.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        return head + b"".join(b"data: " + line + b"\n" for line in lines) + b"\n"
    return head + b"data: " + message + b"\n\n"


def priming_event(event_id: str) -> bytes:
    """The 2025-11-25 priming event: an id and empty data, so a client can always resume."""
    return b"id: " + event_id.encode() + b"\ndata: \n\n"


def retry_field(retry_ms: int) -> bytes:
    """A ``retry:`` field on its own: how long the client should wait before reconnecting."""
    return b"retry: %d\n\n" % max(0, int(retry_ms))


def split_event_id(value: str | None) -> tuple[str, int] | None:
    """``"<stream>-<seq>"`` to ``(stream, seq)``; None for anything not of that shape."""
    if not value:
        return None
    stream, sep, seq = value.strip().rpartition("-")
    if not sep or not stream or not seq.isdigit() or not seq.isascii():
        return None
    return stream, int(seq)


# ---------------------------------------------------------------------------- event log


class EventLog:
    """What a session's streams sent (for ``Last-Event-ID`` replay), and the messages that
    are waiting for a GET stream to open.

    Bounded in both size (``max_events`` entries in all) and age (``max_age`` seconds):
    the oldest entries go first.
    """

    __slots__ = ("_entries", "max_age", "max_events")

    def __init__(self, max_events: int = 1000, max_age: float = 300.0) -> None:
        self.max_events = max(0, max_events)
        self.max_age = max_age
        # (time, stream id or None while parked, seq, message), oldest first.
        self._entries: deque[tuple[float, str | None, int, bytes]] = deque()

    def __len__(self) -> int:
        return len(self._entries)

    def _add(self, stream: str | None, seq: int, message: bytes) -> None:
        if self.max_events == 0:
            return
        now = time.monotonic()
        entries = self._entries
        entries.append((now, stream, seq, message))
        while len(entries) > self.max_events:
            entries.popleft()
        self._trim(now)

    def _trim(self, now: float) -> None:
        limit = now - self.max_age
        entries = self._entries
        while entries and entries[0][0] < limit:
            entries.popleft()

    def append(self, stream: str, seq: int, message: bytes) -> None:
        """Record event ``<stream>-<seq>``."""
        self._add(stream, seq, message)

    def discard(self, stream: str, seq: int) -> None:
        """Forget event ``<stream>-<seq>`` (it never reached its connection)."""
        entries = self._entries
        for i in range(len(entries) - 1, -1, -1):
            entry = entries[i]
            if entry[1] == stream and entry[2] == seq:
                del entries[i]
                return

    def after(self, stream: str, seq: int) -> list[tuple[int, bytes]] | None:
        """The events of ``stream`` after ``seq``, oldest first; None when the log holds no
        event of that stream at all."""
        self._trim(time.monotonic())
        found = False
        out: list[tuple[int, bytes]] = []
        for _, s, q, message in self._entries:
            if s == stream:
                found = True
                if q > seq:
                    out.append((q, message))
        return out if found else None

    def last_seq(self, stream: str) -> int:
        """The highest seq logged for ``stream`` (0 when none)."""
        best = 0
        for _, s, q, _ in self._entries:
            if s == stream and q > best:
                best = q
        return best

    def park(self, message: bytes) -> None:
        """Keep a message that no stream could take, for the next GET stream."""
        self._add(None, 0, message)

    def unpark(self) -> list[bytes]:
        """Take every parked message, oldest first."""
        self._trim(time.monotonic())
        entries = self._entries
        if not any(entry[1] is None for entry in entries):
            return []
        parked = [entry[3] for entry in entries if entry[1] is None]
        kept = [entry for entry in entries if entry[1] is not None]
        entries.clear()
        entries.extend(kept)
        return parked

    def parked(self) -> int:
        return sum(1 for entry in self._entries if entry[1] is None)

    def clear(self) -> None:
        self._entries.clear()


# ---------------------------------------------------------------------------- connections


class Listener:
    """One open GET connection: the transport it writes to and the signal that ends it."""

    __slots__ = ("closed", "done", "seq", "stream", "transport")

    def __init__(self, transport: Any, stream: str, seq: int = 0) -> None:
        self.transport = transport
        self.stream = stream
        #: The last seq used on this stream.
        self.seq = seq
        self.closed = False
        self.done = asyncio.Event()

    def close(self) -> None:
        """End the connection: its GET handler returns and the stream closes."""
        if not self.closed:
            self.closed = True
            self.transport = None
            self.done.set()


# ---------------------------------------------------------------------------- POST streams

_FRESH = 0  # nothing sent yet: the reply may still be plain JSON
_OPEN = 1  # upgraded; events go to the current connection
_DETACHED = 2  # upgraded, but no connection now (closed early, or its client left)
_DONE = 3  # the final reply went out (or the plain JSON reply did)


class PostStream:
    """The sink of one POST (``Exchange.sink``): upgrades the reply to ``text/event-stream``
    on the first :meth:`send`, so a request that streams nothing is answered with plain JSON.

    On revisions with SSE polling (2025-11-25) the stream opens with a priming event, every
    event carries an id, and the events are kept in the session's event log; a handler may
    then :meth:`close_stream` early and the client picks up the rest (final response
    included) with GET + ``Last-Event-ID``.
    """

    __slots__ = (
        "_hub",
        "_ids",
        "_last_write",
        "_listener",
        "_proto",
        "_revision",
        "_seq",
        "_session",
        "_settings",
        "_state",
        "_timer",
        "_transport",
        "session_id",
        "stream_id",
    )

    def __init__(
        self, settings: Settings, proto: Any, revision: Revision, session: Session | None
    ) -> None:
        self._settings = settings
        self._proto = proto
        self._revision = revision
        self._session = session
        self._state = _FRESH
        #: Set when the POST was an ``initialize`` that minted a session: the header to send.
        self.session_id: str | None = None

    # -- state --------------------------------------------------------------------------

    @property
    def streaming(self) -> bool:
        """Whether the reply became an SSE stream (the final reply must go through
        :meth:`finish`)."""
        return self._state == _OPEN or self._state == _DETACHED

    def mark_done(self) -> None:
        """The reply went out as plain JSON: later sends have nowhere to go."""
        self._state = _DONE

    def _upgrade(self) -> bytes:
        """Start the SSE response; what must be written first (the priming event, if any)."""
        headers = SSE_HEADERS
        if self.session_id is not None:
            headers = [*SSE_HEADERS, ("mcp-session-id", self.session_id)]
        self._transport = self._proto.response_stream(200, headers)
        self._proto = None
        self._state = _OPEN
        self._listener: Listener | None = None
        self._seq = 0
        hub = self._session.outbound if self._session is not None else None
        self._hub: SessionStreams | None = hub if isinstance(hub, SessionStreams) else None
        self._ids = self._revision.sse_priming
        self._timer: asyncio.TimerHandle | None = None
        self._last_write = time.monotonic()
        self._arm_keepalive()
        if not self._ids:
            self.stream_id = ""
            return b""
        if self._hub is not None:
            self.stream_id = self._hub.new_stream_id("p")
            self._hub.register(self)
        else:
            self.stream_id = f"x{next(_loose_streams)}"
        return priming_event(f"{self.stream_id}-0")

    # -- the Sink protocol --------------------------------------------------------------

    async def send(self, message: bytes) -> None:
        """Send one message related to this request (progress, a log line, a server
        request) as an SSE event, opening the stream if it is not open yet."""
        state = self._state
        if state == _DONE:
            return
        prefix = self._upgrade() if state == _FRESH else b""
        await self._emit(message, prefix)

    async def _emit(self, message: bytes, prefix: bytes = b"", final: bool = False) -> None:
        if self._ids:
            self._seq += 1
            seq = self._seq
            event_id: str | None = f"{self.stream_id}-{seq}"
            hub = self._hub
            if hub is not None:
                if hub.remote:
                    await hub.record(self.stream_id, seq, message, final)
                else:
                    hub.log.append(self.stream_id, seq, message)
        else:
            event_id = None
        transport = self._transport
        if transport is None:
            return  # detached: the log has it (when the stream is resumable)
        try:
            await transport.send_bytes(prefix + encode_event(message, event_id))
        except _GONE:
            self._detach(transport)
            return
        self._last_write = time.monotonic()

    async def close_stream(self, retry_ms: int | None = None) -> None:
        """End this request's SSE connection now, telling the client (``retry:``) when to
        reconnect; what the request sends afterwards, its final response included, is kept
        for the client's GET with ``Last-Event-ID``.

        Only where the client can resume: a 2025-11-25 (SSE polling) request within a
        session. Elsewhere it does nothing and the stream stays open.
        """
        state = self._state
        if state == _DONE or not self._revision.sse_priming or self._session is None:
            return
        if not isinstance(self._session.outbound, SessionStreams):
            return
        prefix = self._upgrade() if state == _FRESH else b""
        transport = self._transport
        if transport is None:
            return
        hub = self._hub
        if hub is not None and hub.remote:
            await hub.announce(self.stream_id)
        if retry_ms is None:
            retry_ms = self._settings.sse_retry_ms
        self._detach(transport)
        with contextlib.suppress(*_GONE):
            await transport.send_bytes(prefix + retry_field(retry_ms))
        # The last reference to the transport goes with this frame: granian ends the body.

    async def finish(self, reply: bytes | None) -> None:
        """Send the dispatcher's final reply (one response, or a batch's ordered array) as
        the last event, and end the stream. Only for a reply that is :attr:`streaming`."""
        if self._state == _DONE or self._state == _FRESH:
            return
        if reply is not None:
            await self._emit(reply, final=True)
        elif self._hub is not None and self._hub.remote and self._ids:
            self._hub.ended(self.stream_id)
        self._end()

    def abandon(self) -> None:
        """The request ended without a reply (its task was cancelled): release everything."""
        if self._state != _DONE and self._state != _FRESH:
            if self._hub is not None and self._hub.remote and self._ids:
                self._hub.ended(self.stream_id)
            self._end()
        self._state = _DONE

    def _end(self) -> None:
        self._state = _DONE
        self._transport = None
        self._cancel_keepalive()
        listener = self._listener
        if listener is not None:
            self._listener = None
            listener.close()
        if self._hub is not None and self._ids:
            self._hub.unregister(self)

    # -- connections --------------------------------------------------------------------

    def _detach(self, transport: Any) -> None:
        """Stop writing to ``transport`` (closed early, or its client is gone)."""
        if self._transport is not transport:
            return
        self._transport = None
        if self._state == _OPEN:
            self._state = _DETACHED
        self._cancel_keepalive()
        listener = self._listener
        if listener is not None and listener.transport is transport:
            self._listener = None
            listener.close()

    def attach(self, listener: Listener) -> None:
        """Carry the rest of this stream on a resumed GET connection (replacing, and so
        ending, whatever connection carried it before)."""
        old = self._listener
        self._listener = listener
        self._transport = listener.transport
        if self._state == _DETACHED:
            self._state = _OPEN
        if old is not None and old is not listener:
            old.close()
        # The GET handler holding ``listener`` sends its keep-alives.
        self._cancel_keepalive()

    def release(self, listener: Listener) -> None:
        """``listener``'s connection ended: stop writing to it (the stream stays resumable)."""
        if self._listener is listener:
            self._listener = None
            self._transport = None
            if self._state == _OPEN:
                self._state = _DETACHED
            self._cancel_keepalive()
        listener.close()

    @property
    def resumed(self) -> bool:
        """Whether a resumed GET connection carries this stream now."""
        return self._state != _FRESH and self._listener is not None

    def release_listener(self) -> None:
        """End the resumed GET connection carrying this stream, if any."""
        listener = self._listener
        if listener is not None:
            self.release(listener)

    # -- keep-alive ---------------------------------------------------------------------

    def _arm_keepalive(self) -> None:
        seconds = self._settings.keepalive_seconds
        if seconds <= 0 or self._timer is not None:
            return
        self._timer = asyncio.get_running_loop().call_later(seconds, self._keepalive)

    def _cancel_keepalive(self) -> None:
        timer = self._timer
        if timer is not None:
            self._timer = None
            timer.cancel()

    def _keepalive(self) -> None:
        self._timer = None
        transport = self._transport
        if transport is None or self._state != _OPEN:
            return
        seconds = self._settings.keepalive_seconds
        idle = time.monotonic() - self._last_write
        if idle >= seconds * 0.9:
            task = asyncio.ensure_future(self._ping(transport))
            _background.add(task)
            task.add_done_callback(_background.discard)
            delay = seconds
        else:
            delay = seconds - idle
        self._timer = asyncio.get_running_loop().call_later(delay, self._keepalive)

    async def _ping(self, transport: Any) -> None:
        try:
            await transport.send_bytes(KEEPALIVE)
        except _GONE:
            self._detach(transport)
            return
        self._last_write = time.monotonic()


# ---------------------------------------------------------------------------- the hub


class SessionStreams:
    """``session.outbound`` of a Streamable HTTP session: its GET streams, its live POST
    streams, and its event log.

    :meth:`send` hands a message to exactly one open GET stream (the most recently opened),
    or parks it in the log until the next GET opens. It never waits for a slow client
    longer than that one write.
    """

    __slots__ = ("_listeners", "_n", "_posts", "closed", "connections", "log", "settings")

    #: Whether the streams live in a shared store (:class:`~jetmcp.sessions.redis.RedisStreams`):
    #: POST streams then log their events with :meth:`record` instead of :attr:`log`.
    remote = False

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.log = EventLog(settings.event_log_size, settings.event_log_seconds)
        #: Open GET connections of the session (what ``max_session_streams`` counts; the
        #: transport keeps it).
        self.connections = 0
        #: Open standalone GET connections, oldest first.
        self._listeners: list[Listener] = []
        #: POST streams with ids that have not sent their final reply, by stream id.
        self._posts: dict[str, PostStream] = {}
        self._n = 0
        self.closed = False

    def new_stream_id(self, kind: str) -> str:
        self._n += 1
        return f"{kind}{self._n}"

    def _minted(self, stream: str, kind: str) -> bool:
        n = stream[1:]
        return stream[:1] == kind and n.isdigit() and n.isascii() and 0 < int(n) <= self._n

    # -- POST streams -------------------------------------------------------------------

    async def record(self, stream: str, seq: int, message: bytes, final: bool) -> None:
        """Log event ``<stream>-<seq>`` of a POST stream (``final``: its last). Only a
        :attr:`remote` hub is asked; this one logs in place."""
        self.log.append(stream, seq, message)

    def ended(self, stream: str) -> None:
        """POST stream ``stream`` ended without a final event (its request was cancelled)."""

    async def announce(self, stream: str) -> None:
        """POST stream ``stream`` is about to lose its connection and stays resumable (it
        is registered already here)."""

    def register(self, post: PostStream) -> None:
        self._posts[post.stream_id] = post

    def unregister(self, post: PostStream) -> None:
        if self._posts.get(post.stream_id) is post:
            del self._posts[post.stream_id]

    # -- messages not tied to a request -------------------------------------------------

    async def send(self, message: bytes) -> None:
        """Deliver ``message`` on one open GET stream, or keep it for the next one."""
        while not self.closed:
            listeners = self._listeners
            if not listeners:
                self.log.park(message)
                return
            listener = listeners[-1]
            transport = listener.transport
            if transport is None:
                self.detach(listener)
                continue
            listener.seq += 1
            seq = listener.seq
            self.log.append(listener.stream, seq, message)
            try:
                await transport.send_bytes(encode_event(message, f"{listener.stream}-{seq}"))
            except _GONE:
                # Never reached the client: forget it there and try the next stream.
                self.log.discard(listener.stream, seq)
                self.detach(listener)
                listener.close()
                continue
            return

    # -- GET streams --------------------------------------------------------------------

    def resume_target(self, last_event_id: str | None) -> tuple[str, int] | None:
        """What a GET with this ``Last-Event-ID`` resumes: (stream, seq), or None for a new
        standalone stream. Raises LookupError for a POST stream this session cannot replay.
        """
        parsed = split_event_id(last_event_id)
        if parsed is None:
            return None
        stream, seq = parsed
        if stream.startswith("p"):
            if stream in self._posts or self.log.after(stream, seq) is not None:
                return parsed
            raise LookupError(stream)
        if self._minted(stream, "g"):
            return parsed
        return None

    async def find_resume(self, last_event_id: str | None) -> tuple[str, int] | None:
        """:meth:`resume_target`, for transports that serve both kinds of hub."""
        return self.resume_target(last_event_id)

    def connected(self, stream: str) -> bool:
        """Whether a GET connection carries stream ``stream`` now (a resumption of it would
        replace that connection)."""
        if any(listener.stream == stream for listener in self._listeners):
            return True
        post = self._posts.get(stream)
        return post is not None and post.resumed

    def open_standalone(
        self, transport: Any, resume: tuple[str, int] | None, priming: bool
    ) -> tuple[Listener, bytes, list[tuple[int, bytes]]]:
        """Attach a GET connection as a standalone stream (new, or the one ``resume``
        names). Returns the listener, the bytes to write first (priming, replayed events,
        then parked messages), and the parked messages it took (to give back should that
        first write fail). Synchronous, so nothing sent meanwhile can slip past it."""
        chunks: list[bytes] = []
        if resume is None:
            listener = Listener(transport, self.new_stream_id("g"))
            if priming:
                chunks.append(priming_event(f"{listener.stream}-0"))
        else:
            stream, seq = resume
            top = seq
            for old in self._listeners:
                if old.stream == stream:
                    top = max(top, old.seq)
                    old.close()
            self._listeners = [old for old in self._listeners if old.stream != stream]
            for q, message in self.log.after(stream, seq) or ():
                chunks.append(encode_event(message, f"{stream}-{q}"))
                top = max(top, q)
            listener = Listener(transport, stream, max(top, self.log.last_seq(stream)))
        taken: list[tuple[int, bytes]] = []
        for message in self.log.unpark():
            listener.seq += 1
            self.log.append(listener.stream, listener.seq, message)
            chunks.append(encode_event(message, f"{listener.stream}-{listener.seq}"))
            taken.append((listener.seq, message))
        self._listeners.append(listener)
        return listener, b"".join(chunks), taken

    def give_back(self, listener: Listener, taken: list[tuple[int, bytes]]) -> None:
        """A new stream's first write failed: park again the messages it had taken."""
        self.detach(listener)
        for seq, message in taken:
            self.log.discard(listener.stream, seq)
            self.log.park(message)

    def open_resumed_post(
        self, transport: Any, stream: str, seq: int
    ) -> tuple[Listener, bytes, PostStream | None]:
        """Attach a GET connection to POST stream ``stream`` after event ``seq``: the
        listener, the events to replay, and the live stream (None when it already ended,
        so the connection closes after the replay)."""
        events = self.log.after(stream, seq) or []
        replay = b"".join(encode_event(message, f"{stream}-{q}") for q, message in events)
        listener = Listener(transport, stream, seq)
        post = self._posts.get(stream)
        if post is not None:
            post.attach(listener)
        return listener, replay, post

    async def serve_get(
        self,
        proto: Any,
        resume: tuple[str, int] | None,
        priming: bool,
        hold: Callable[[Listener, Any], Awaitable[None]],
    ) -> None:
        """Serve an accepted GET: replay and carry a POST stream (``resume`` names one), or
        a standalone stream (new, or the one ``resume`` names). ``hold(listener,
        transport)`` keeps the connection open until the listener closes."""
        transport = proto.response_stream(200, SSE_HEADERS)
        if resume is not None and resume[0].startswith("p"):
            listener, replay, post = self.open_resumed_post(transport, *resume)
            try:
                if replay:
                    await transport.send_bytes(replay)
                if post is not None:
                    await hold(listener, transport)
            except _GONE:
                pass
            finally:
                if post is not None:
                    post.release(listener)
                listener.close()
            return

        listener, first, taken = self.open_standalone(transport, resume, priming)
        try:
            if first:
                try:
                    await transport.send_bytes(first)
                except _GONE:
                    self.give_back(listener, taken)
                    return
            await hold(listener, transport)
        finally:
            self.detach(listener)
            listener.close()

    def detach(self, listener: Listener) -> None:
        """A GET connection ended: it takes no more messages."""
        with contextlib.suppress(ValueError):
            self._listeners.remove(listener)

    async def close_stream(self, retry_ms: int | None = None) -> None:
        """Close the session's open GET streams now, telling the clients (``retry:``) when
        to reconnect; messages sent meanwhile wait in the log for the next GET (SSE
        polling for the standalone stream)."""
        if retry_ms is None:
            retry_ms = self.settings.sse_retry_ms
        listeners, self._listeners = self._listeners, []
        for listener in listeners:
            transport = listener.transport
            listener.close()
            if transport is not None:
                with contextlib.suppress(*_GONE):
                    await transport.send_bytes(retry_field(retry_ms))

    # -- lifetime -----------------------------------------------------------------------

    def close(self) -> None:
        """The session ended: close every open stream and drop the log."""
        if self.closed:
            return
        self.closed = True
        listeners, self._listeners = self._listeners, []
        for listener in listeners:
            listener.close()
        posts, self._posts = self._posts, {}
        for post in posts.values():
            post.release_listener()
        self.log.clear()

    def stats(self) -> dict[str, int]:
        """Counts for diagnostics and tests: open GET streams, live POST streams, log size,
        parked messages."""
        return {
            "get_streams": len(self._listeners),
            "post_streams": len(self._posts),
            "log": len(self.log),
            "parked": self.log.parked(),
        }


async def hold_open(
    listener: Listener,
    transport: Any,
    proto: Any,
    keepalive: float,
    alive: Callable[[], Awaitable[bool]] | None = None,
) -> None:
    """Keep an SSE response open until ``listener`` is closed or the client disconnects,
    writing a keep-alive comment after every ``keepalive`` idle seconds (0: never).
    ``alive``, when given, is asked on each of those ticks; False ends the stream."""
    watcher = asyncio.ensure_future(proto.client_disconnect())

    def gone(task: asyncio.Future[Any]) -> None:
        if not task.cancelled():
            task.exception()  # retrieved: a failed watch means the client is gone too
        listener.close()

    watcher.add_done_callback(gone)
    try:
        timeout = keepalive if keepalive > 0 else None
        while not listener.closed:
            try:
                async with asyncio.timeout(timeout):
                    await listener.done.wait()
            except TimeoutError:
                if alive is not None and not await alive():
                    return
                if listener.closed:
                    return
                try:
                    await transport.send_bytes(KEEPALIVE)
                except _GONE:
                    return
    finally:
        watcher.cancel()


__all__ = [
    "KEEPALIVE",
    "SSE_HEADERS",
    "EventLog",
    "Listener",
    "PostStream",
    "SessionStreams",
    "encode_event",
    "hold_open",
    "priming_event",
    "retry_field",
    "split_event_id",
]
