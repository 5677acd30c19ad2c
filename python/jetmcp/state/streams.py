"""The SSE streams of a Streamable HTTP session, as state: the event framing (what an event,
a priming event and a ``retry:`` field are as bytes; event ids), the session's
:class:`EventLog` (for ``Last-Event-ID`` replay, and the messages parked for the next GET),
its open GET connections (:class:`Listener`), and :class:`SessionStreams`, the per-session
hub that is ``session.outbound``. The POST streams it carries are the transport's
(:class:`~jetmcp.transports.sse.PostStream`); the hub reaches them through
:class:`PostStreamLink`. Both the memory and the Redis state build on this module.

Streams and ids
---------------
Every stream of a session has an id: ``p<n>`` for the SSE response of a POST, ``g<n>`` for
a standalone GET stream. Event ids are ``<stream id>-<seq>`` (``seq`` counts from 1; the
priming event of a 2025-11-25 stream is ``-0``), so an id names its stream and a client
resuming with ``Last-Event-ID`` gets only that stream's later events (the spec's "replay
only that stream's messages").

A stream is a logical thing; the HTTP connection carrying it may change. A POST stream closed
early, or whose client went away, keeps its events in the session's :class:`EventLog`; a GET
with ``Last-Event-ID`` replays them and carries the rest of that stream live, ending after
the request's final response.

Messages not tied to a request go to :class:`SessionStreams` (``session.outbound``): each to
exactly one open GET stream, or, while none is open, parked in the log until the next GET
of the session opens, which delivers them first.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from jetmcp.settings import Settings

#: Response headers of every SSE stream (the spec asks for ``X-Accel-Buffering: no`` so
#: proxies do not hold events back).
SSE_HEADERS: list[tuple[str, str]] = [
    ("content-type", "text/event-stream"),
    ("cache-control", "no-cache"),
    ("x-accel-buffering", "no"),
]
KEEPALIVE = b": keep-alive\n\n"

#: The ways a write to a stream fails once its client is gone: granian raises
#: RSGIProtocolClosed (a RuntimeError); sockets may raise OSError.
CLIENT_GONE = (RuntimeError, OSError)


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


class PostStreamLink(Protocol):
    """What the hub needs of a POST stream it carries (the transport's
    :class:`~jetmcp.transports.sse.PostStream`): its id, and handing its connection over to
    a GET that resumes it."""

    @property
    def stream_id(self) -> str: ...

    @property
    def resumed(self) -> bool:
        """Whether a GET connection carries the stream now."""
        ...

    def attach(self, listener: Listener) -> None:
        """Carry the rest of the stream on ``listener``'s connection."""
        ...

    def release(self, listener: Listener) -> None:
        """``listener``'s connection ended: the stream waits for another."""
        ...

    def release_listener(self) -> None:
        """The session ended: drop whatever connection carries the stream."""
        ...


# ---------------------------------------------------------------------------- the hub


class SessionStreams:
    """``session.outbound`` of a Streamable HTTP session: its GET streams, its live POST
    streams, and its event log.

    :meth:`send` hands a message to exactly one open GET stream (the most recently opened),
    or parks it in the log until the next GET opens. It never waits for a slow client
    longer than that one write.
    """

    __slots__ = ("_listeners", "_n", "_posts", "closed", "connections", "log", "settings")

    #: Whether the streams live in a shared store (:class:`~jetmcp.state.redis.RedisStreams`):
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
        self._posts: dict[str, PostStreamLink] = {}
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

    def register(self, post: PostStreamLink) -> None:
        self._posts[post.stream_id] = post

    def unregister(self, post: PostStreamLink) -> None:
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
            except CLIENT_GONE:
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
    ) -> tuple[Listener, bytes, PostStreamLink | None]:
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
            except CLIENT_GONE:
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
                except CLIENT_GONE:
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
                with contextlib.suppress(*CLIENT_GONE):
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


__all__ = [
    "CLIENT_GONE",
    "KEEPALIVE",
    "SSE_HEADERS",
    "EventLog",
    "Listener",
    "PostStreamLink",
    "SessionStreams",
    "encode_event",
    "priming_event",
    "retry_field",
    "split_event_id",
]
