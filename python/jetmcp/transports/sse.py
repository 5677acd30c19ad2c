"""Server-Sent Events for the HTTP transports: the per-POST stream sink (:class:`PostStream`)
and holding a GET stream open (:func:`hold_open`). The event framing, the session's event
log and its stream hub are state (:mod:`jetmcp.state.streams`).

A POST's stream is a logical thing: its id, its event ids and how a GET with
``Last-Event-ID`` resumes it after its connection closed early
(:meth:`PostStream.close_stream`) or its client went away are described in
:mod:`jetmcp.state.streams`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from jetmcp.state.streams import (
    CLIENT_GONE,
    KEEPALIVE,
    SSE_HEADERS,
    Listener,
    SessionStreams,
    encode_event,
    priming_event,
    retry_field,
)

if TYPE_CHECKING:
    from jetmcp.core.call import Session
    from jetmcp.protocol.revisions import Revision
    from jetmcp.settings import Settings

# Ids for POST streams outside any session (never resumable, but still distinct).
_loose_streams = itertools.count(1)
# Keep-alive writes in flight (a task nobody references may be collected mid-write).
_background: set[asyncio.Task[None]] = set()


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
        except CLIENT_GONE:
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
        with contextlib.suppress(*CLIENT_GONE):
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
        except CLIENT_GONE:
            self._detach(transport)
            return
        self._last_write = time.monotonic()


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
                except CLIENT_GONE:
                    return
    finally:
        watcher.cancel()


__all__ = ["PostStream", "hold_open"]
