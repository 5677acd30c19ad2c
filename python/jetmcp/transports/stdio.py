"""stdio: one JSON-RPC message (or batch) per line on stdin, one reply per line on stdout.

Each raw line goes to the parser untouched. The revision negotiated by ``initialize``
decides batching, exactly as a session does over HTTP. A line whose requests carry
``params._meta["io.modelcontextprotocol/protocolVersion"]`` is served the 2026-07-28 way
instead, whatever was negotiated (and ``notifications/cancelled`` cancels those requests
too). Logs go to stderr only.

Lines are started in the order they are read, straight from the bytes stdin delivers. While
stdout holds more than ``max_stdout_buffer_bytes`` the client has written (it is not
reading), no further line is started and stdin is not read, so the pipe fills and the client
waits instead of the server's memory growing; handlers that send notifications wait too. At
EOF every request still running finishes, and every reply is written out in full before the
process exits. :func:`serve_stdio` tells whether stdout took everything: when it broke, the
server stops at once (what is still running is cancelled) and the exit status is 1.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import stat
import sys
import threading
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any, Protocol, cast

from jetmcp import _wire
from jetmcp.core.call import Session
from jetmcp.core.deadlines import STOP_SHUTDOWN
from jetmcp.core.dispatch import Dispatcher
from jetmcp.core.exchange import Exchange
from jetmcp.core.inflight import InFlight
from jetmcp.core.reply import Reply
from jetmcp.errors import INTERNAL_ERROR, INVALID_REQUEST
from jetmcp.protocol import revisions
from jetmcp.server.app import Server
from jetmcp.server.lifespan import LifespanScope
from jetmcp.settings import Settings

log = logging.getLogger("jetmcp.stdio")

_READ_SIZE = 1 << 16


def _nothing() -> None:
    return None


class StdoutSink(asyncio.Protocol):
    """Writes whole lines to stdout; a message is never split or interleaved.

    On a pipe it is the protocol of the event loop's write transport: what the pipe does not
    take at once is buffered there, and past ``limit`` bytes the sink is ``behind`` until the
    client has read it down to a quarter of that. Without a transport (stdout is a file, a
    terminal or ``/dev/null``) writes block until done and the sink is never behind. Once
    stdout breaks, every later message is dropped and ``broken`` stays set.
    """

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._fd: int | None = None
        self._transport: asyncio.WriteTransport | None = None
        self._waiters: list[asyncio.Future[None]] = []
        self._closed: asyncio.Future[None] | None = None
        self.behind = False
        self.broken = False
        #: Called once stdout has caught up (the server reads on) and once it breaks.
        self.on_caught_up: Callable[[], None] = _nothing
        self.on_broken: Callable[[], None] = _nothing

    def use_fd(self, fd: int) -> None:
        """Write to ``fd`` directly (blocking): stdout is not a pipe the loop can watch."""
        self._fd = fd

    # -- the write transport's protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not registered as subclasses of asyncio's: no isinstance.
        self._transport = cast(asyncio.WriteTransport, transport)
        self._transport.set_write_buffer_limits(high=self._limit)

    def pause_writing(self) -> None:
        self.behind = True

    def resume_writing(self) -> None:
        self.behind = False
        self._wake()
        self.on_caught_up()

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None or self._closed is None:
            self._break(exc)
        self._wake()
        if self._closed is not None and not self._closed.done():
            self._closed.set_result(None)

    # -- writing

    def write(self, message: bytes) -> None:
        if self.broken:
            return
        transport = self._transport
        if transport is None:
            if self._fd is None:
                return
            try:
                _write_all(self._fd, message + b"\n")
            except OSError as exc:
                self._break(exc)
        elif transport.is_closing():
            self._break(None)
        else:
            transport.write(message + b"\n")

    async def send(self, message: bytes) -> None:
        """Write, then wait while stdout is behind: a handler that streams notifications
        goes at the pace the client reads them."""
        self.write(message)
        if self.behind:
            await self.drain()

    async def drain(self) -> None:
        """Wait until stdout is no longer behind (or broke)."""
        while self.behind and not self.broken:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter

    async def close(self) -> bool:
        """Write out everything buffered, then close stdout; whether every message reached
        it (False when it broke)."""
        transport = self._transport
        if transport is not None and self._closed is None:
            self._closed = asyncio.get_running_loop().create_future()
            if not transport.is_closing():
                transport.close()  # flushes the buffer first, then connection_lost(None)
                await self._closed
        return not self.broken

    def _break(self, exc: BaseException | None) -> None:
        if self.broken:
            return
        self.broken = True
        self.behind = False
        log.warning("stdout broke (%s): replies from now on are lost", exc or "closed")
        self._wake()
        self.on_broken()

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)


class _PipeInput(asyncio.Protocol):
    """stdin as a pipe or socket the event loop reads: chunks go to the server as they come;
    the server pauses it while stdout is behind."""

    def __init__(self, server: StdioServer) -> None:
        self._server = server
        self._transport: asyncio.ReadTransport | None = None
        self._paused = False
        self._ended = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.ReadTransport, transport)

    def data_received(self, data: bytes) -> None:
        self._server.feed(data)

    def eof_received(self) -> bool | None:
        self._end()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._end()

    def _end(self) -> None:
        if not self._ended:
            self._ended = True
            self._server.feed_eof()

    def pause(self) -> None:
        if not self._paused and not self._ended and self._transport is not None:
            self._paused = True
            self._transport.pause_reading()

    def resume(self) -> None:
        if self._paused and not self._ended and self._transport is not None:
            self._paused = False
            self._transport.resume_reading()


class _ThreadInput:
    """stdin the event loop cannot watch (a regular file, a terminal, ``/dev/null``), read
    by a thread one chunk at a time: the next is read only once the server has taken the
    last, so nothing piles up whatever the pace of the two."""

    def __init__(self, fd: int, server: StdioServer, loop: asyncio.AbstractEventLoop) -> None:
        self._gate = threading.Event()
        self._gate.set()

        def pump() -> None:
            try:
                while True:
                    self._gate.wait()
                    chunk = os.read(fd, _READ_SIZE)
                    if not chunk:
                        break
                    self._gate.clear()
                    loop.call_soon_threadsafe(server.feed, chunk)
            except (OSError, RuntimeError):  # stdin failed, or the loop is gone
                pass
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(server.feed_eof)

        threading.Thread(target=pump, name="jetmcp-stdin", daemon=True).start()

    def pause(self) -> None:
        """Nothing to do: the thread waits for :meth:`resume` after every chunk."""

    def resume(self) -> None:
        self._gate.set()


class LineSink(Protocol):
    """Where :class:`StdioServer` writes its lines: stdout (:class:`StdoutSink`), or the
    in-memory client's receiver."""

    def write(self, message: bytes) -> None: ...

    async def send(self, message: bytes) -> None: ...


class StdioServer:
    """Serves one client over a pair of pipes until stdin ends (or stdout breaks).

    ``sink`` replaces stdout for a caller that feeds lines with :meth:`serve_line` itself
    (the in-memory client); :meth:`serve` needs the default, a :class:`StdoutSink`."""

    def __init__(
        self, server: Server, settings: Settings | None = None, sink: LineSink | None = None
    ) -> None:
        self.settings = settings or Settings()
        self.dispatcher = Dispatcher.from_settings(server, self.settings)
        self.session: Session | None = None
        self.inflight = InFlight()
        self._tasks: set[asyncio.Task[None]] = set()
        self.stdout = StdoutSink(self.settings.max_stdout_buffer_bytes)
        self.sink: LineSink = self.stdout if sink is None else sink
        self.input: _PipeInput | _ThreadInput | None = None
        #: Chunks read and not yet consumed; ``_pos`` is where the first one resumes.
        self._inbox: deque[bytes] = deque()
        self._pos = 0
        #: The start of a line not yet ended, across chunks, and its length.
        self._partial: list[bytes] = []
        self._partial_len = 0
        #: Skipping the rest of a line already refused as too long.
        self._discarding = False
        self._eof = False
        self._done: asyncio.Future[None] | None = None
        #: Set by :meth:`terminate` (SIGTERM): no more input is read, what runs is drained.
        self.terminated = False

    def _revision(self) -> revisions.Revision:
        return self.session.revision if self.session is not None else revisions.HTTP_DEFAULT

    # -- reading

    def feed(self, data: bytes) -> None:
        """A chunk of stdin."""
        if self._done is not None and self._done.done():
            return
        self._inbox.append(data)
        self._pump()

    def feed_eof(self) -> None:
        self._eof = True
        self._pump()

    def _pump(self) -> None:
        """Start every whole line read, in order, unless stdout is behind (then stdin is
        paused until it catches up, and the rest waits here)."""
        inbox = self._inbox
        sink = self.stdout
        done = self._done
        if done is None or done.done():
            return
        while inbox:
            if sink.behind:
                if self.input is not None:
                    self.input.pause()
                return
            data = inbox[0]
            pos = self._pos
            end = data.find(b"\n", pos)
            if end < 0:
                inbox.popleft()
                self._pos = 0
                self._hold(data[pos:] if pos else data)
                continue
            self._pos = end + 1
            if self._pos == len(data):
                inbox.popleft()
                self._pos = 0
            if self._discarding:
                self._discarding = False
            elif self._partial:
                self._line_across_chunks(data, pos, end)
            else:
                self._line(data[pos:end])
            if done.done():  # stdout broke meanwhile
                return
        if self._eof:
            if self._partial:  # the last line has no newline
                line = b"".join(self._partial)
                self._partial.clear()
                self._partial_len = 0
                self._line(line)
            done.set_result(None)
        elif self.input is not None:
            self.input.resume()

    def _hold(self, piece: bytes) -> None:
        """Keep the start of a line whose end is not read yet; refuse it as soon as it is
        certain to be too long (one byte more than the limit may still be a ``\\r``)."""
        if self._discarding or not piece:
            return
        self._partial.append(piece)
        self._partial_len += len(piece)
        if self._partial_len > self.settings.max_body_bytes + 1:
            self._partial.clear()
            self._partial_len = 0
            self._discarding = True
            self._too_long()

    def _line_across_chunks(self, data: bytes, pos: int, end: int) -> None:
        size = self._partial_len + end - pos
        last = data[end - 1] if end > pos else self._partial[-1][-1]
        if last == 0x0D:  # "\r"
            size -= 1
        if size > self.settings.max_body_bytes:
            self._too_long()
        else:
            self._partial.append(data[pos:end])
            self._line(b"".join(self._partial))
        self._partial.clear()
        self._partial_len = 0

    def _line(self, line: bytes) -> None:
        """One line, its ``\\n`` removed: an optional ``\\r`` goes too, then it must fit
        in ``max_body_bytes`` exactly as an HTTP body must."""
        if line.endswith(b"\r"):
            line = line[:-1]
        if len(line) > self.settings.max_body_bytes:
            self._too_long()
        elif line and not line.isspace():
            self.serve_line(line)

    def _too_long(self) -> None:
        self.sink.write(
            _wire.encode_error(
                None,
                INVALID_REQUEST,
                f"Invalid Request: message exceeds {self.settings.max_body_bytes} bytes",
            )
        )

    # -- serving

    def serve_line(self, line: bytes) -> None:
        """Answer one line (its newline removed). Work that needs no waiting is done here,
        in line order, so an ``initialize`` is in force before the next line is read; the
        rest runs in a task of its own."""
        settings = self.settings
        sink = self.sink
        frame = _wire.decode(line, settings.max_depth, settings.max_batch)
        # By position (see Exchange.__init__): answer_cancelled False, headers None,
        # sniff_meta True.
        ex = Exchange(self._revision(), self.session, sink, self.inflight, False, None, True)
        try:
            reply = self.dispatcher.start(frame, ex)
        except Exception:
            # A bug of ours: the line is lost, but not the lines after it (stdin is read by
            # a callback, and an exception there would stop the reading for good).
            log.exception("a line could not be served")
            entries = frame.entries
            if frame.kind == _wire.FRAME_SINGLE and entries[0].kind == _wire.REQUEST:
                sink.write(_wire.encode_error(entries[0].raw_id, INTERNAL_ERROR, "Internal error"))
            return
        if isinstance(reply, Reply) and reply.session is not None:
            self.session = reply.session
            self.session.outbound = sink
        if reply is None:
            return
        if isinstance(reply, bytes):
            sink.write(reply)
            return
        task = asyncio.ensure_future(self._finish(reply))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _finish(self, pending: Coroutine[Any, Any, bytes | None]) -> None:
        try:
            reply = await pending
        except Exception:  # the dispatcher answers handler failures; this is a bug of ours
            log.exception("a reply could not be made")
            return
        if reply is not None:
            self.sink.write(reply)

    def _stop(self) -> None:
        """stdout broke: nothing more can be delivered, so nothing more is read or run."""
        if self._done is not None and not self._done.done():
            self._done.set_result(None)
        self._inbox.clear()
        if self.input is not None:
            self.input.pause()
        for task in self._tasks:
            task.cancel()

    def terminate(self, name: str = "SIGTERM") -> None:
        """SIGTERM or SIGINT (``name``), as HTTP treats both: read no more input, and drain
        what is running as at the end of stdin (within ``shutdown_grace_seconds``, then
        answered with an error; the process then exits 1). A second signal changes nothing."""
        if self.terminated or self._done is None or self._done.done():
            return
        self.terminated = True
        log.info(
            "%s: %d requests in flight get up to %g s to finish",
            name,
            len(self._tasks),
            self.settings.shutdown_grace_seconds,
        )
        self._inbox.clear()
        if self.input is not None:
            self.input.pause()
        self._done.set_result(None)

    async def serve(self, attach: Callable[[StdioServer], Coroutine[Any, Any, None]]) -> bool:
        """Serve until stdin ends; ``attach`` connects ``self.input`` and ``self.stdout`` to
        the process's pipes. Whether every reply was delivered."""
        self._done = asyncio.get_running_loop().create_future()
        sink = self.stdout
        sink.on_caught_up = self._pump
        sink.on_broken = self._stop
        await attach(self)
        await self._done
        late_after_sigterm = False
        if not sink.broken:
            # stdin ended: open subscriptions/listen requests end with their final result
            # (they would otherwise wait for ever), then every request still running is
            # finished, or answered with an error once the shutdown grace is over (or
            # cancelled, should stdout break meanwhile).
            await self.dispatcher.server.close_subscriptions()
            if self._tasks:
                _, late = await asyncio.wait(
                    set(self._tasks), timeout=self.settings.shutdown_grace_seconds
                )
                if late:
                    stopped = self.dispatcher.deadlines.stop_all(STOP_SHUTDOWN)
                    log.warning(
                        "shutdown grace (%g s) over: %d requests still running were "
                        "stopped and answered with an error",
                        self.settings.shutdown_grace_seconds,
                        stopped,
                    )
                    late_after_sigterm = self.terminated
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        delivered = await sink.close()
        return delivered and not late_after_sigterm


def _pollable(fd: int) -> bool:
    # The event loop can watch pipes and sockets; regular files and devices such as
    # /dev/null it cannot (uvloop aborts on them), so those get a thread or plain writes.
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


async def serve_stdio(
    server: Server, settings: Settings | None = None, out_fd: int | None = None
) -> bool:
    """Serve ``server`` on this process's stdin and stdout (or ``out_fd``: where stdout was
    before ``jetmcp run`` pointed fd 1 at stderr) until stdin ends; whether every reply
    reached stdout (False when it broke)."""
    settings = settings or Settings()
    in_fd = sys.stdin.fileno()
    if out_fd is None:
        out_fd = sys.stdout.fileno()

    async def attach(stdio: StdioServer) -> None:
        loop = asyncio.get_running_loop()
        sink = stdio.stdout
        if _pollable(out_fd):
            await loop.connect_write_pipe(lambda: sink, os.fdopen(out_fd, "wb", 0))
        else:
            sink.use_fd(out_fd)
        if _pollable(in_fd):
            pipe = _PipeInput(stdio)
            stdio.input = pipe
            await loop.connect_read_pipe(lambda: pipe, os.fdopen(in_fd, "rb", 0))
        else:
            stdio.input = _ThreadInput(in_fd, stdio, loop)
        # SIGINT drains like SIGTERM, as on HTTP (a Ctrl-C in a terminal, or a host that
        # stops its servers with SIGINT, loses no answer that could still come).
        for signum in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(signum, stdio.terminate, signal.Signals(signum).name)

    # The lifespan opens before the first line is read and closes at EOF, once every request
    # still running has finished.
    async with LifespanScope(server):
        return await StdioServer(server, settings).serve(attach)
