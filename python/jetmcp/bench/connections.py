"""The load generator's connections: asyncio protocols with no coroutine per request.

An HTTP connection frames with the extension's sans-IO ``Http1ClientConnection`` and carries
one request at a time (HTTP/1.1 without pipelining, as servers expect); a stdio connection is
a server process of its own, reading one reply per line and matching replies to requests by
id, so it carries any number at once. Replies go to an :class:`Owner` (the load driver)
through one call; a one-off exchange (a handshake, a scenario step) awaits :meth:`call`.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import ssl
from collections import deque
from collections.abc import Sequence
from typing import Any, Protocol

from jetmcp import _wire
from jetmcp.client.transports import Url

#: A whole reply: status, body, whether the connection stays open, the session id it named.
Reply = tuple[int, bytes, bool, str | None]

_Response = _wire.Http1Response


class Owner(Protocol):
    def on_reply(
        self,
        conn: Conn,
        label: int,
        due_ns: int,
        sent_ns: int,
        expected: int,
        status: int,
        body: bytes,
        keep_alive: bool,
    ) -> None: ...

    def on_lost(self, conn: Conn, label: int, kind: str) -> None: ...


class Conn:
    """What the driver needs of either kind of connection."""

    #: Requests it may carry at once.
    capacity = 1
    closed = False
    #: Requests in flight.
    inflight = 0
    owner: Owner | None = None
    #: Whether the driver holds it in its list of free connections.
    listed = False

    def send(
        self,
        headers: Sequence[tuple[bytes, bytes]],
        body: bytes,
        wid: int,
        label: int,
        due_ns: int,
        sent_ns: int,
        expected: int,
    ) -> None:
        raise NotImplementedError

    async def call(
        self, headers: Sequence[tuple[bytes, bytes]], body: bytes, wid: int | None
    ) -> Reply:
        raise NotImplementedError

    def expired(self, before_ns: int) -> list[int]:
        """Labels of the requests sent before ``before_ns`` and still unanswered; they are
        forgotten (the caller closes the connection)."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class HttpConn(asyncio.Protocol, Conn):
    """One keep-alive HTTP/1.1 connection."""

    def __init__(self, target: bytes, owner: Owner | None) -> None:
        self.target = target
        self.owner = owner
        self.http = _wire.Http1ClientConnection()
        self.transport: asyncio.Transport | None = None
        self.label = -1
        self.due_ns = 0
        self.sent_ns = 0
        self.expected = 0
        self.waiter: asyncio.Future[Reply] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, only alike.
        self.transport = transport  # type: ignore[assignment]

    def send(
        self,
        headers: Sequence[tuple[bytes, bytes]],
        body: bytes,
        wid: int,
        label: int,
        due_ns: int,
        sent_ns: int,
        expected: int,
    ) -> None:
        self.label = label
        self.due_ns = due_ns
        self.sent_ns = sent_ns
        self.expected = expected
        self.inflight = 1
        assert self.transport is not None
        self.transport.write(self.http.request(b"POST", self.target, headers, body))

    async def call(
        self, headers: Sequence[tuple[bytes, bytes]], body: bytes, wid: int | None
    ) -> Reply:
        assert self.transport is not None and self.inflight == 0
        if self.closed:
            raise ConnectionError("the connection is closed")
        self.waiter = asyncio.get_running_loop().create_future()
        self.inflight = 1
        self.transport.write(self.http.request(b"POST", self.target, headers, body))
        return await self.waiter

    async def delete(self, headers: Sequence[tuple[bytes, bytes]]) -> Reply:
        """End a legacy session (``DELETE``)."""
        assert self.transport is not None and self.inflight == 0
        self.waiter = asyncio.get_running_loop().create_future()
        self.inflight = 1
        self.transport.write(self.http.request(b"DELETE", self.target, headers, None))
        return await self.waiter

    def data_received(self, data: bytes) -> None:
        try:
            events = self.http.feed(data)
        except _wire.Http1Error:
            self._fail("transport")
            return
        for event in events:
            if event.__class__ is _Response and event.complete:
                self._response(event)

    def eof_received(self) -> bool | None:
        # A response delimited by the server closing ends here.
        self.data_received(b"")
        return None

    def _response(self, event: _wire.Http1Response) -> None:
        self.inflight = 0
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            session = event.header(b"mcp-session-id")
            if not waiter.done():
                waiter.set_result(
                    (
                        event.status,
                        event.body,
                        event.keep_alive,
                        session.decode("latin-1") if session else None,
                    )
                )
        elif self.owner is not None:
            self.owner.on_reply(
                self,
                self.label,
                self.due_ns,
                self.sent_ns,
                self.expected,
                event.status,
                event.body,
                event.keep_alive,
            )

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail("transport")

    def _fail(self, kind: str) -> None:
        was_closed = self.closed
        self.closed = True
        if self.transport is not None and not was_closed:
            self.transport.abort()
        if self.inflight:
            self.inflight = 0
            waiter = self.waiter
            if waiter is not None:
                self.waiter = None
                if not waiter.done():
                    waiter.set_exception(ConnectionError("the connection was lost"))
            elif self.owner is not None:
                self.owner.on_lost(self, self.label, kind)
        elif not was_closed and self.owner is not None and self.waiter is None:
            self.owner.on_lost(self, -1, kind)

    def expired(self, before_ns: int) -> list[int]:
        if self.inflight and self.waiter is None and self.sent_ns < before_ns:
            self.inflight = 0
            return [self.label]
        return []

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self.transport is not None:
                self.transport.close()


class StdioConn(asyncio.SubprocessProtocol, Conn):
    """One server process: requests as lines on its stdin, replies as lines on its stdout."""

    capacity = 1 << 30

    def __init__(self, owner: Owner | None) -> None:
        self.owner = owner
        self.process: asyncio.SubprocessTransport | None = None
        self.stdin: asyncio.WriteTransport | None = None
        self.buffer = b""
        #: id -> (label, due, sent, expected)
        self.pending: dict[int, tuple[int, int, int, int]] = {}
        self.waiters: dict[int, asyncio.Future[Reply]] = {}
        self.stderr: deque[bytes] = deque(maxlen=20)
        self.exited = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.process = transport  # type: ignore[assignment]
        self.stdin = transport.get_pipe_transport(0)  # type: ignore[attr-defined]

    def send(
        self,
        headers: Sequence[tuple[bytes, bytes]],
        body: bytes,
        wid: int,
        label: int,
        due_ns: int,
        sent_ns: int,
        expected: int,
    ) -> None:
        self.pending[wid] = (label, due_ns, sent_ns, expected)
        self.inflight += 1
        assert self.stdin is not None
        self.stdin.write(body + b"\n")

    async def call(
        self, headers: Sequence[tuple[bytes, bytes]], body: bytes, wid: int | None
    ) -> Reply:
        if self.closed or self.stdin is None:
            raise ConnectionError("the server process has exited")
        self.stdin.write(body + b"\n")
        if wid is None:
            return (202, b"", True, None)
        waiter: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self.waiters[wid] = waiter
        return await waiter

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd != 1:
            self.stderr.append(data)
            return
        buffer = self.buffer + data if self.buffer else data
        start = 0
        while True:
            end = buffer.find(b"\n", start)
            if end < 0:
                break
            line = buffer[start:end]
            start = end + 1
            if line.strip():
                self._line(line)
        self.buffer = buffer[start:]

    def _line(self, line: bytes) -> None:
        frame = _wire.decode(line)
        for entry in frame.entries:
            if entry.kind == _wire.REQUEST:
                self._answer_server(entry)
                continue
            if entry.kind != _wire.RESPONSE or entry.id_class != _wire.ID_INT:
                continue
            assert entry.raw_id is not None
            wid = int(entry.raw_id)
            waiter = self.waiters.pop(wid, None)
            if waiter is not None:
                if not waiter.done():
                    waiter.set_result((200, line, True, None))
                return
            job = self.pending.pop(wid, None)
            if job is not None:
                self.inflight -= 1
                if self.owner is not None:
                    label, due, sent, expected = job
                    self.owner.on_reply(self, label, due, sent, expected, 200, line, True)
                return

    def _answer_server(self, entry: _wire.Entry) -> None:
        """A server-to-client request: ``ping`` is answered, anything else refused (the
        generator declares no client capabilities)."""
        assert self.stdin is not None
        raw = entry.raw_id if entry.raw_id is not None else b"null"
        if entry.method == "ping":
            self.stdin.write(_wire.encode_result(raw, {}) + b"\n")
        else:
            self.stdin.write(_wire.encode_error(raw, -32601, "Method not found") + b"\n")

    def process_exited(self) -> None:
        self._lost()
        if not self.exited.done():
            self.exited.set_result(None)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self._lost()

    def _lost(self) -> None:
        if self.closed:
            return
        self.closed = True
        for waiter in self.waiters.values():
            if not waiter.done():
                waiter.set_exception(ConnectionError("the server process has exited"))
        self.waiters.clear()
        jobs, self.pending = self.pending, {}
        self.inflight = 0
        if self.owner is not None:
            for label, _, _, _ in jobs.values():
                self.owner.on_lost(self, label, "transport")
            if not jobs:
                self.owner.on_lost(self, -1, "transport")

    def expired(self, before_ns: int) -> list[int]:
        late = [wid for wid, job in self.pending.items() if job[2] < before_ns]
        labels = []
        for wid in late:
            labels.append(self.pending.pop(wid)[0])
        self.inflight -= len(labels)
        return labels

    def close(self) -> None:
        if self.stdin is not None and not self.stdin.is_closing():
            self.stdin.close()

    async def stop(self, grace: float = 2.0) -> None:
        """Close stdin, give the server ``grace`` seconds to exit, then end it."""
        self.close()
        self.closed = True
        try:
            await asyncio.wait_for(asyncio.shield(self.exited), grace)
        except TimeoutError:
            if self.process is not None:
                with contextlib.suppress(ProcessLookupError):
                    self.process.kill()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(self.exited), grace)
        if self.process is not None:
            self.process.close()


class Dialer:
    """Opens connections to one target: TCP (and TLS) for a URL, a process for stdio."""

    def __init__(self, url: str | None, stdio: str | None, connect_timeout: float) -> None:
        self.url = Url.parse(url) if url is not None else None
        self.argv = shlex.split(stdio) if stdio is not None else None
        if self.argv is not None and not self.argv:
            raise ValueError("the --stdio command is empty")
        self.connect_timeout = connect_timeout
        self._ssl: ssl.SSLContext | None = None
        if self.url is not None and self.url.scheme == "https":
            self._ssl = ssl.create_default_context()
        self.stdio_conns: list[StdioConn] = []

    @property
    def is_http(self) -> bool:
        return self.url is not None

    async def open(self, owner: Owner | None) -> Conn:
        loop = asyncio.get_running_loop()
        if self.url is not None:
            url = self.url
            target = url.target.encode("latin-1")
            async with asyncio.timeout(self.connect_timeout):
                _, proto = await loop.create_connection(
                    lambda: HttpConn(target, owner),
                    url.host,
                    url.port,
                    ssl=self._ssl,
                    server_hostname=url.host if self._ssl else None,
                )
            sock = proto.transport.get_extra_info("socket") if proto.transport else None
            if sock is not None:
                import socket

                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return proto
        assert self.argv is not None
        _, sproto = await loop.subprocess_exec(
            lambda: StdioConn(owner),
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        self.stdio_conns.append(sproto)
        return sproto

    async def close_all(self) -> None:
        conns, self.stdio_conns = self.stdio_conns, []
        await asyncio.gather(*(c.stop() for c in conns), return_exceptions=True)


def describe_stderr(conn: Any) -> str:
    """The last lines a stdio server wrote to stderr, for an error message."""
    if isinstance(conn, StdioConn) and conn.stderr:
        text = b"".join(conn.stderr).decode("utf-8", "replace").strip()
        return text.splitlines()[-1] if text else ""
    return ""
