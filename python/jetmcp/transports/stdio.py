"""stdio: one JSON-RPC message (or batch) per line on stdin, one reply per line on stdout.

Each raw line goes to the parser untouched. The revision negotiated by ``initialize``
decides batching, exactly as a session does over HTTP. A line whose requests carry
``params._meta["io.modelcontextprotocol/protocolVersion"]`` is served the 2026-07-28 way
instead, whatever was negotiated (and ``notifications/cancelled`` cancels those requests
too). Logs go to stderr only.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import sys
import threading
from collections.abc import Callable, Coroutine
from typing import Any

from jetmcp import _wire
from jetmcp.call import Session
from jetmcp.deadlines import STOP_SHUTDOWN
from jetmcp.dispatch import Dispatcher, Exchange, InFlight
from jetmcp.errors import INVALID_REQUEST
from jetmcp.protocol import revisions
from jetmcp.server.app import Server
from jetmcp.settings import Settings

log = logging.getLogger("jetmcp.stdio")


class StdoutSink:
    """Writes whole lines to stdout; a message is never split or interleaved."""

    __slots__ = ("_closing", "_write")

    def __init__(self, write: Callable[[bytes], object], closing: Callable[[], bool]) -> None:
        self._write = write
        self._closing = closing

    async def send(self, message: bytes) -> None:
        self.write(message)

    def write(self, message: bytes) -> None:
        if not self._closing():
            self._write(message + b"\n")


class StdioServer:
    """Serves one client over a pair of pipes until stdin ends."""

    def __init__(self, server: Server, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self.dispatcher = Dispatcher.from_settings(server, self.settings)
        self.session: Session | None = None
        self.inflight = InFlight()
        self._tasks: set[asyncio.Task[None]] = set()

    def _revision(self) -> revisions.Revision:
        return self.session.revision if self.session is not None else revisions.HTTP_DEFAULT

    def _start(self, line: bytes, sink: StdoutSink) -> None:
        """Answer one line (its newline removed). Work that needs no waiting is done here,
        in line order, so an ``initialize`` is in force before the next line is read; the
        rest runs in a task of its own."""
        settings = self.settings
        frame = _wire.decode(line, settings.max_depth, settings.max_batch)
        ex = Exchange(self._revision(), self.session, sink, self.inflight, sniff_meta=True)
        reply = self.dispatcher.start(frame, ex)
        if ex.new_session is not None:
            self.session = ex.new_session
            self.session.outbound = sink
        if reply is None:
            return
        if isinstance(reply, bytes):
            sink.write(reply)
            return
        task = asyncio.ensure_future(self._finish(reply, sink))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _finish(self, pending: Coroutine[Any, Any, bytes | None], sink: StdoutSink) -> None:
        reply = await pending
        if reply is not None:
            sink.write(reply)

    async def serve(self, reader: asyncio.StreamReader, sink: StdoutSink) -> None:
        limit = self.settings.max_body_bytes
        while True:
            try:
                line = await reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                line = exc.partial
                if line.strip():
                    self._start(line, sink)
                break
            except asyncio.LimitOverrunError:
                await _discard_line(reader)
                sink.write(
                    _wire.encode_error(
                        None, INVALID_REQUEST, f"Invalid Request: message exceeds {limit} bytes"
                    )
                )
                continue
            line = line[:-1]
            if line.endswith(b"\r"):
                line = line[:-1]
            if not line.strip():
                continue
            self._start(line, sink)
        # stdin ended: open subscriptions/listen requests end with their final result (they
        # would otherwise wait for ever), then every request still running is finished,
        # or answered with an error once the shutdown grace is over.
        await self.dispatcher.server.close_subscriptions()
        if self._tasks:
            _, late = await asyncio.wait(
                set(self._tasks), timeout=self.settings.shutdown_grace_seconds
            )
            if late:
                self.dispatcher.deadlines.stop_all(STOP_SHUTDOWN)
                await asyncio.gather(*late, return_exceptions=True)


async def _discard_line(reader: asyncio.StreamReader) -> None:
    while True:
        try:
            await reader.readuntil(b"\n")
            return
        except asyncio.LimitOverrunError as exc:
            await reader.readexactly(exc.consumed)
        except asyncio.IncompleteReadError:
            return


def _pollable(fd: int) -> bool:
    # The event loop can watch pipes and sockets; regular files and devices such as
    # /dev/null it cannot (uvloop aborts on them), so those get a thread or plain writes.
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _read_in_thread(fd: int, reader: asyncio.StreamReader, loop: asyncio.AbstractEventLoop) -> None:
    def pump() -> None:
        try:
            while chunk := os.read(fd, 1 << 16):
                loop.call_soon_threadsafe(reader.feed_data, chunk)
        except OSError:
            pass
        loop.call_soon_threadsafe(reader.feed_eof)

    threading.Thread(target=pump, name="jetmcp-stdin", daemon=True).start()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


async def serve_stdio(server: Server, settings: Settings | None = None) -> None:
    """Serve ``server`` on this process's stdin and stdout until stdin ends."""
    settings = settings or Settings()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=settings.max_body_bytes + 1)
    in_fd, out_fd = sys.stdin.fileno(), sys.stdout.fileno()
    if _pollable(in_fd):
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(in_fd, "rb", 0)
        )
    else:
        _read_in_thread(in_fd, reader, loop)
    transport: asyncio.WriteTransport | None = None
    if _pollable(out_fd):
        transport, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(out_fd, "wb", 0))
        sink = StdoutSink(transport.write, transport.is_closing)
    else:
        sink = StdoutSink(lambda data: _write_all(out_fd, data), lambda: False)
    try:
        await StdioServer(server, settings).serve(reader, sink)
    finally:
        if transport is not None:
            transport.close()
