"""The streams of a session kept in Redis (:class:`RedisStreams`, a session's
``outbound``): messages through the session's log in Redis to the GET stream that takes
them, on whichever worker holds it. Split from :mod:`jetmcp.state.redis`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from jetmcp.state.base import StateUnavailable
from jetmcp.state.streams import (
    CLIENT_GONE,
    KEEPALIVE,
    SSE_HEADERS,
    Listener,
    SessionStreams,
    encode_event,
    priming_event,
    split_event_id,
)

if TYPE_CHECKING:
    from jetmcp.state.redis import RedisSessionStore

    pass

log = logging.getLogger("jetmcp.redis")

#: Seconds between a worker's heartbeats, and how long one counts.


class _Remote:
    """A connection on this worker carrying one stream of a session whose events come
    through Redis: what arrives waits in a queue its GET handler writes from."""

    __slots__ = ("closed", "queue", "stream", "written")

    def __init__(self, stream: str) -> None:
        self.stream = stream
        self.written = 0
        self.closed = False
        self.queue: asyncio.Queue[tuple[int, bool, bytes] | None] = asyncio.Queue()

    def put(self, seq: int, final: bool, message: bytes, limit: int) -> None:
        if self.closed:
            return
        if self.queue.qsize() >= limit:
            # A client this far behind resumes from the log (Last-Event-ID) instead.
            self.close()
            return
        self.queue.put_nowait((seq, final, message))

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.queue.put_nowait(None)


class RedisStreams(SessionStreams):
    """``session.outbound`` of a session kept in Redis: its messages go through the
    session's log in Redis to the GET stream that takes them, on whichever worker holds it;
    the GET streams and resumed POST streams held here are fed from this worker's channel.

    Stream ids carry the worker's name (``g<worker>.<n>``, ``p<worker>.<n>``), so they are
    unique across workers; seqs of a standalone stream are counted in Redis."""

    remote = True

    __slots__ = ("_remote", "sid", "store")

    def __init__(self, store: RedisSessionStore, session_id: str) -> None:
        super().__init__(store.settings)
        self.store = store
        self.sid = session_id
        self._remote: dict[str, _Remote] = {}

    def new_stream_id(self, kind: str) -> str:
        state = self.store.state
        return f"{kind}{state.worker}.{state.next_id()}"

    # -- messages not tied to a request --------------------------------------------------

    async def send(self, message: bytes) -> None:
        store = self.store
        await store.state.run("send", self.sid, store.maxlen, store.log_ttl_ms, message)

    # -- POST streams --------------------------------------------------------------------

    def register(self, post: Any) -> None:
        return None

    def unregister(self, post: Any) -> None:
        return None

    async def announce(self, stream: str) -> None:
        """POST stream ``stream`` (of this worker) is live: a GET elsewhere may resume it."""
        await self.store.state.run("post_live", self.sid, self.store.state.worker, stream)

    async def record(self, stream: str, seq: int, message: bytes, final: bool) -> None:
        store = self.store
        try:
            await store.state.run(
                "post_event",
                self.sid,
                stream,
                seq,
                "1" if final else "0",
                store.maxlen,
                store.log_ttl_ms,
                message,
            )
        except StateUnavailable as exc:
            # The live connection still gets the event; only a resumption would miss it.
            log.warning("event %s-%d not logged: %s", stream, seq, exc)

    def ended(self, stream: str) -> None:
        state = self.store.state
        state.spawn(
            state.run("post_end", self.sid, stream),
            f"the end of stream {stream} (a client resuming it elsewhere waits until the "
            "session's idle sweep)",
        )

    # -- GET streams ---------------------------------------------------------------------

    async def find_resume(self, last_event_id: str | None) -> tuple[str, int] | None:
        parsed = split_event_id(last_event_id)
        if parsed is None:
            return None
        stream, _ = parsed
        if stream[:1] not in ("p", "g"):
            return None
        found = await self.store.state.run("probe", self.sid, stream)
        if stream.startswith("p"):
            if found == 1:
                return parsed
            raise LookupError(stream)
        return parsed if found == 1 else None

    def connected(self, stream: str) -> bool:
        return stream in self._remote

    def deliver(self, stream: str, seq: int, final: bool, message: bytes) -> None:
        """An event for stream ``stream`` (seq -1: close its connection here)."""
        remote = self._remote.get(stream)
        if remote is None:
            return
        if seq < 0:
            remote.close()
        else:
            remote.put(seq, final, message, max(16, self.store.maxlen))

    def _attach(self, stream: str) -> _Remote:
        old = self._remote.get(stream)
        if old is not None:
            old.close()
        remote = self._remote[stream] = _Remote(stream)
        self.store.hubs[self.sid] = self
        return remote

    def _detach(self, remote: _Remote) -> None:
        remote.close()
        if self._remote.get(remote.stream) is remote:
            del self._remote[remote.stream]
        if not self._remote and self.store.hubs.get(self.sid) is self:
            del self.store.hubs[self.sid]

    async def serve_get(
        self,
        proto: Any,
        resume: tuple[str, int] | None,
        priming: bool,
        hold: Callable[[Listener, Any], Awaitable[None]],
    ) -> None:
        store = self.store
        state = store.state
        age = store.log_ttl_ms
        if resume is not None and resume[0].startswith("p"):
            stream, seq = resume
            remote = self._attach(stream)
            try:
                found = await state.run("resume_post", self.sid, state.worker, stream, seq, age)
                transport = proto.response_stream(200, SSE_HEADERS)
                if not found or int(found[1]) < 0:
                    return
                owner = found[0].decode() if isinstance(found[0], bytes) else str(found[0])
                ended = int(found[1]) == 1
                remote.written = seq
                await self._replay(transport, remote, found[2:])
                if ended or not owner:
                    return

                async def alive() -> bool:
                    return await store.get(self.sid) is not None and await state.worker_alive(owner)

                await self._pump(remote, transport, proto, alive)
            except CLIENT_GONE:
                pass
            finally:
                self._detach(remote)
                state.spawn(
                    state.run("release_post", self.sid, state.worker, stream),
                    f"the release of stream {stream}'s resumption here",
                )
            return

        if resume is None:
            stream = self.new_stream_id("g")
            first = priming_event(f"{stream}-0") if priming else b""
            remote = self._attach(stream)
            try:
                found = await state.run(
                    "open_get",
                    self.sid,
                    state.worker,
                    stream,
                    store.maxlen,
                    store.log_ttl_ms,
                    age,
                )
            except BaseException:
                self._detach(remote)
                raise
            events = found
        else:
            stream, seq = resume
            first = b""
            remote = self._attach(stream)
            remote.written = seq
            try:
                found = await state.run(
                    "resume_get",
                    self.sid,
                    state.worker,
                    stream,
                    seq,
                    store.maxlen,
                    store.log_ttl_ms,
                    age,
                )
            except BaseException:
                self._detach(remote)
                raise
            events = found[1:] if found else found
        try:
            transport = proto.response_stream(200, SSE_HEADERS)
            if events is None or events is False:
                return  # the session ended meanwhile
            if first:
                await transport.send_bytes(first)
            await self._replay(transport, remote, events)

            async def alive() -> bool:
                return await store.get(self.sid) is not None

            await self._pump(remote, transport, proto, alive)
        except CLIENT_GONE:
            pass
        finally:
            self._detach(remote)
            state.spawn(
                state.run(
                    "release_get",
                    self.sid,
                    state.worker,
                    stream,
                    remote.written,
                    store.maxlen,
                    store.log_ttl_ms,
                ),
                f"the release of GET stream {stream} and the return of what it did not "
                "deliver to the session's log",
            )

    async def _replay(self, transport: Any, remote: _Remote, events: list[Any]) -> None:
        """Write logged events (seq, message pairs) the connection has not had yet."""
        chunks: list[bytes] = []
        top = remote.written
        for i in range(0, len(events) - 1, 2):
            seq = int(events[i])
            if seq <= top:
                continue
            chunks.append(encode_event(events[i + 1], f"{remote.stream}-{seq}"))
            top = seq
        if chunks:
            await transport.send_bytes(b"".join(chunks))
            remote.written = top

    async def _pump(
        self,
        remote: _Remote,
        transport: Any,
        proto: Any,
        alive: Callable[[], Awaitable[bool]],
    ) -> None:
        """Write the stream's events as they come until it closes, its last event is out,
        or the client leaves; keep-alives on idle ticks, which also look at ``alive``."""
        watcher = asyncio.ensure_future(proto.client_disconnect())

        def gone(task: asyncio.Future[Any]) -> None:
            if not task.cancelled():
                task.exception()
            remote.close()

        watcher.add_done_callback(gone)
        keepalive = self.settings.keepalive_seconds
        try:
            while not remote.closed or not remote.queue.empty():
                try:
                    async with asyncio.timeout(keepalive if keepalive > 0 else None):
                        item = await remote.queue.get()
                except TimeoutError:
                    try:
                        if not await alive():
                            return
                    except StateUnavailable:
                        return
                    await transport.send_bytes(KEEPALIVE)
                    continue
                if item is None:
                    return
                seq, final, message = item
                if seq <= remote.written:
                    continue
                await transport.send_bytes(encode_event(message, f"{remote.stream}-{seq}"))
                remote.written = seq
                if final:
                    return
        finally:
            watcher.cancel()

    async def close_stream(self, retry_ms: int | None = None) -> None:
        """Close the GET streams this worker holds for the session (their handlers own
        the connections, so no ``retry:`` goes first: the client waits its own delay)."""
        for remote in list(self._remote.values()):
            remote.close()

    def close(self) -> None:
        """This worker lets go of the session: its connections here close."""
        self.closed = True
        for remote in list(self._remote.values()):
            remote.close()

    def stats(self) -> dict[str, int]:
        return {"get_streams": len(self._remote), "post_streams": 0, "log": 0, "parked": 0}


__all__ = ["RedisStreams"]
