"""How the client reaches a server: HTTP/1.1 (Streamable HTTP) or a child process (stdio).

The HTTP client is our own, over ``asyncio.open_connection``: keep-alive connections in a
pool, ``Content-Length`` and chunked bodies, and SSE streams read as they arrive. It does
exactly what MCP needs and nothing else, so ``jetmcp bench`` can drive thousands of requests
per second with it, and the runtime needs no HTTP library.

A transport moves bytes and hands every message the server sends to ``deliver``; what the
messages mean (which waiter an answer belongs to, how a server's request is answered) is
the :class:`~jetmcp.client.session.Client`'s business.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import ssl as ssl_module
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from jetmcp import _wire
from jetmcp.errors import INTERNAL_ERROR, McpError

#: ``deliver(entry, http_status)``: a message from the server (``http_status`` is 0 on stdio).
Deliver = Callable[[_wire.Entry, int], None]
#: ``waiting()``: whether any request of an exchange still waits for its answer.
Waiting = Callable[[], bool]

_READ_SIZE = 1 << 16
#: Longest response head (status line and headers) read before giving up.
_MAX_HEAD = 1 << 16
#: Idle keep-alive connections kept per pool.
_MAX_IDLE = 256


class TransportClosed(ConnectionError):
    """The server went away (its process ended, or the connection closed) before answering."""


# --------------------------------------------------------------------------- HTTP/1.1


@dataclass(frozen=True, slots=True)
class Url:
    scheme: str
    host: str
    port: int
    #: The request target: path and query.
    target: str
    #: The ``Host`` header value.
    authority: str

    @classmethod
    def parse(cls, url: str) -> Url:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        default = 443 if parts.scheme == "https" else 80
        port = parts.port or default
        host = parts.hostname
        shown = f"[{host}]" if ":" in host else host
        authority = shown if port == default else f"{shown}:{port}"
        target = parts.path or "/"
        if parts.query:
            target = f"{target}?{parts.query}"
        return cls(parts.scheme, host, port, target, authority)


#: A request's header fields as the extension's framing takes them.
Fields = list[tuple[bytes, bytes]]


def header_fields(headers: Sequence[tuple[str, str]] | Mapping[str, str]) -> Fields:
    """``(name, value)`` byte pairs; refuses names and values that would break the head
    apart (CR, LF, a colon in a name)."""
    items = headers.items() if isinstance(headers, Mapping) else headers
    out: Fields = []
    for name, value in items:
        if "\r" in value or "\n" in value or "\r" in name or "\n" in name or ":" in name:
            raise ValueError(f"invalid HTTP header {name!r}: {value!r}")
        out.append((name.encode("latin-1"), value.encode("latin-1")))
    return out


class HttpResponse:
    """A response whose head has been read; the body is read on demand, once. Framed by
    the extension (:class:`jetmcp._wire.Http1ClientConnection`: Content-Length, chunked,
    or to the end of the connection; interim 1xx responses skipped)."""

    __slots__ = ("_conn", "_done", "headers", "status")

    def __init__(self, conn: HttpConnection, head: _wire.Http1Response) -> None:
        self._conn = conn
        self.status = head.status
        headers: dict[str, str] = {}
        for raw_name, raw_value in head.headers():
            key = raw_name.decode("latin-1").lower()
            text = raw_value.decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        self.headers = headers
        # Both framings: Transfer-Encoding won, and the connection must not carry another
        # request (RFC 9112 6.1).
        conn.reusable = head.keep_alive and not (
            "transfer-encoding" in headers and "content-length" in headers
        )
        #: A whole response (no body to come) is done at once.
        self._done = head.complete

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    async def read(self) -> bytes:
        """The whole body."""
        return b"".join([chunk async for chunk in self.chunks()])

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives."""
        conn = self._conn
        while not self._done:
            event = await conn.next_event()
            if event.__class__ is not bytes:
                conn.close()
                raise TransportClosed("a second response before the body ended")
            assert isinstance(event, bytes)
            if not event:
                self._done = True
                return
            yield event

    def abort(self) -> None:
        """Close the connection (a reply not read to the end, a stream given up on)."""
        self._conn.close()

    @property
    def reusable(self) -> bool:
        """Whether the body was read to the end on a connection that stays open."""
        return self._done and self._conn.reusable

    def release(self) -> None:
        """Give the connection back for reuse when its body was read to the end; else close it."""
        conn = self._conn
        if self._done and conn.reusable:
            conn.release()
        else:
            conn.close()


class HttpConnection:
    """One keep-alive connection, its bytes framed by the extension's sans-IO HTTP/1.1
    client (:class:`jetmcp._wire.Http1ClientConnection`; TLS stays asyncio's). Requests on
    it run one at a time."""

    __slots__ = ("_events", "http", "pool", "reader", "reusable", "used", "writer")

    def __init__(
        self, pool: HttpPool, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.pool = pool
        self.reader = reader
        self.writer = writer
        self.http = _wire.Http1ClientConnection(max_head=_MAX_HEAD)
        self._events: deque[_wire.Http1Response | bytes] = deque()
        self.reusable = True
        #: Whether a request already went over it (a stale keep-alive may then be retried).
        self.used = False

    async def request(
        self, method: bytes, target: bytes, fields: Fields, body: bytes | None = None
    ) -> HttpResponse:
        """Write a request (``fields`` hold Host; a ``body`` gets its Content-Length) and read
        the response head."""
        try:
            data = self.http.request(method, target, fields, body, True)
        except ValueError as exc:
            raise TransportClosed(f"the request cannot be sent: {exc}") from exc
        self.writer.write(data)
        self.used = True
        try:
            event = await self.next_event()
            if event.__class__ is bytes:
                raise TransportClosed("response data before a response head")
            assert isinstance(event, _wire.Http1Response)
            return HttpResponse(self, event)
        except BaseException:
            # Whatever went wrong (a cancelled waiter included: at 2026-07-28 closing the
            # connection is how a request is cancelled), the response cannot be read now.
            self.close()
            raise

    async def next_event(self) -> _wire.Http1Response | bytes:
        """The next thing the framing completed: a response head, body data, or ``b""`` at
        the body's end."""
        events = self._events
        while not events:
            try:
                data = await self.reader.read(_READ_SIZE)
            except (ConnectionError, ssl_module.SSLError) as exc:
                self.close()
                raise TransportClosed(f"connection lost: {exc}") from exc
            try:
                events.extend(self.http.feed(data))
            except _wire.Http1Error as exc:
                self.close()
                raise TransportClosed(f"malformed or truncated response: {exc.reason}") from exc
            if not data and not events:
                self.close()
                raise TransportClosed("connection closed before the response ended")
        return events.popleft()

    def release(self) -> None:
        self.pool.put(self)

    def close(self) -> None:
        self.reusable = False
        self.writer.close()

    @property
    def closed(self) -> bool:
        return self.writer.is_closing() or self.reader.at_eof() or self.http.closed


class HttpPool:
    """Keep-alive connections to one origin, reused last-in first-out."""

    def __init__(self, url: Url, *, connect_timeout: float = 10.0, ssl: Any = None) -> None:
        self.url = url
        self.target = url.target.encode("latin-1")
        self.connect_timeout = connect_timeout
        if url.scheme == "https" and ssl is None:
            ssl = ssl_module.create_default_context()
        self.ssl = ssl if url.scheme == "https" else None
        self._idle: list[HttpConnection] = []
        self._closed = False

    async def connect(self) -> HttpConnection:
        """A new connection, not taken from the pool (the caller may keep it)."""
        url = self.url
        async with asyncio.timeout(self.connect_timeout):
            reader, writer = await asyncio.open_connection(
                url.host, url.port, ssl=self.ssl, limit=_MAX_HEAD
            )
        return HttpConnection(self, reader, writer)

    async def acquire(self) -> HttpConnection:
        idle = self._idle
        while idle:
            conn = idle.pop()
            if not conn.closed:
                return conn
            conn.close()
        return await self.connect()

    def put(self, conn: HttpConnection) -> None:
        if self._closed or len(self._idle) >= _MAX_IDLE or conn.closed:
            conn.close()
        else:
            self._idle.append(conn)

    async def request(
        self, method: bytes, fields: Fields, body: bytes | None = None, target: bytes = b""
    ) -> HttpResponse:
        """Send on a pooled connection (to ``target``, else the URL's). A reused connection
        the server closed while it sat idle fails before any byte of the response; that
        request is sent again on a new one."""
        target = target or self.target
        conn = await self.acquire()
        reused = conn.used
        try:
            return await conn.request(method, target, fields, body)
        except (TransportClosed, ConnectionResetError, BrokenPipeError):
            conn.close()
            if not reused:
                raise
        conn = await self.connect()
        return await conn.request(method, target, fields, body)

    def close(self) -> None:
        self._closed = True
        for conn in self._idle:
            conn.close()
        self._idle.clear()


# --------------------------------------------------------------------------- SSE


@dataclass(slots=True)
class SseEvent:
    event: str
    data: bytes
    id: str | None
    retry: int | None


class SseParser:
    """Incremental ``text/event-stream`` parser (lines end in LF or CRLF)."""

    __slots__ = ("_buf", "_data", "_event", "_id", "_retry", "last_id")

    def __init__(self) -> None:
        self._buf = b""
        self._data: list[bytes] = []
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None
        #: The last event id seen (it persists across events, as the SSE spec says).
        self.last_id: str | None = None

    def feed(self, chunk: bytes) -> list[SseEvent]:
        buf = self._buf + chunk if self._buf else chunk
        events: list[SseEvent] = []
        start = 0
        while True:
            end = buf.find(b"\n", start)
            if end < 0:
                break
            line = buf[start:end]
            start = end + 1
            if line.endswith(b"\r"):
                line = line[:-1]
            if not line:
                if self._data or self._id is not None or self._retry is not None:
                    events.append(
                        SseEvent(
                            self._event or "message",
                            b"\n".join(self._data),
                            self._id,
                            self._retry,
                        )
                    )
                self._data = []
                self._event = ""
                self._id = None
                self._retry = None
                continue
            if line[0] == 0x3A:  # ":" comment (keep-alive)
                continue
            name, _, value = line.partition(b":")
            if value.startswith(b" "):
                value = value[1:]
            if name == b"data":
                self._data.append(value)
            elif name == b"event":
                self._event = value.decode("utf-8", "replace")
            elif name == b"id":
                if b"\0" not in value:
                    self._id = value.decode("utf-8", "replace")
                    self.last_id = self._id
            elif name == b"retry" and value.isdigit():
                self._retry = int(value)
        self._buf = buf[start:]
        return events


# --------------------------------------------------------------------------- transports


class Transport:
    """What the client needs from a way of reaching a server."""

    #: Whether :meth:`exchange` returns only once the server's reply to the body ended (HTTP:
    #: each body gets its own reply). stdio returns once written: answers come on the shared
    #: stream whenever the server sends them.
    replies_per_exchange: bool = False
    #: Whether the transport has something the server can address as HTTP (routing headers).
    is_http: bool = False
    deliver: Deliver
    #: Called once when the transport ends on its own (the process exited, ...).
    on_close: Callable[[BaseException], None]

    #: The revision put in ``MCP-Protocol-Version`` (HTTP), once chosen.
    protocol_version: str | None = None

    def set_state(self, protocol_version: str | None) -> None:
        """The revision the transport names from now on (None: none yet)."""
        self.protocol_version = protocol_version

    async def open(self) -> None:
        raise NotImplementedError

    async def exchange(
        self,
        body: bytes,
        headers: Sequence[tuple[str, str]] = (),
        waiting: Waiting | None = None,
    ) -> None:
        """Send a body holding requests; HTTP delivers the reply's messages before returning."""
        raise NotImplementedError

    async def send(self, body: bytes, headers: Sequence[tuple[str, str]] = ()) -> None:
        """Send a body that is owed no answer: notifications, or answers to server requests."""
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError


def _deliver_body(data: bytes, deliver: Deliver, status: int) -> list[_wire.Entry]:
    """Hand every message of one JSON body to ``deliver``; the id-less errors are returned
    instead (they answer a whole body, not one request)."""
    frame = _wire.decode(data)
    if frame.kind == _wire.FRAME_PARSE_ERROR:
        raise McpError(INTERNAL_ERROR, f"the server sent invalid JSON: {frame.error}")
    orphans: list[_wire.Entry] = []
    for entry in frame.entries:
        if entry.kind == _wire.RESPONSE and entry.raw_id is None:
            orphans.append(entry)
        else:
            deliver(entry, status)
    return orphans


class HttpStatusError(McpError):
    """An error that came with an HTTP error status (or instead of a JSON-RPC reply):
    ``status`` is the HTTP status, ``code``/``message``/``data`` the JSON-RPC error (or
    ``INTERNAL_ERROR`` and the start of the body when there was none)."""

    status: int = 0


def with_status(error: McpError, status: int) -> HttpStatusError:
    out = (
        HttpStatusError(error.code, error.message, error.data)
        if error.has_data
        else HttpStatusError(error.code, error.message)
    )
    out.status = status
    return out


def orphan_error(entry: _wire.Entry, status: int) -> McpError:
    """The McpError of an id-less error reply (an :class:`HttpStatusError` over HTTP)."""
    error = error_from(entry.result())
    return with_status(error, status) if status else error


def error_from(body: Any) -> McpError:
    """The McpError an ``error`` member describes."""
    if isinstance(body, dict) and isinstance(body.get("code"), int):
        message = body.get("message")
        text = message if isinstance(message, str) else "error"
        if "data" in body:
            return McpError(body["code"], text, body["data"])
        return McpError(body["code"], text)
    return McpError(INTERNAL_ERROR, f"malformed error reply: {body!r}")


class HttpTransport(Transport):
    """Streamable HTTP: every body is a POST; JSON or SSE replies; session and version headers
    once negotiated; a reply stream that ends early is resumed with GET + ``Last-Event-ID``."""

    replies_per_exchange = True
    is_http = True

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str] | None = None,
        *,
        connect_timeout: float = 10.0,
        ssl: Any = None,
        max_resumptions: int = 5,
    ) -> None:
        self.url = Url.parse(url)
        self.pool = HttpPool(self.url, connect_timeout=connect_timeout, ssl=ssl)
        self.session_id: str | None = None
        self.protocol_version = None
        self.max_resumptions = max_resumptions
        url_ = self.url
        self._extra_fields = header_fields(dict(headers or {}))
        host = [(b"host", url_.authority.encode("latin-1"))]
        self._post_fields: Fields = [
            *host,
            (b"content-type", b"application/json"),
            (b"accept", b"application/json, text/event-stream"),
            *self._extra_fields,
        ]
        self._get_fields: Fields = [*host, (b"accept", b"text/event-stream")]
        self._delete_fields: Fields = [*host, *self._extra_fields]
        self._state_fields: Fields = []

    def describe(self) -> str:
        u = self.url
        return f"{u.scheme}://{u.authority}{u.target}"

    async def open(self) -> None:
        return None

    def _refresh_state(self) -> None:
        lines: list[tuple[str, str]] = []
        if self.session_id is not None:
            lines.append(("Mcp-Session-Id", self.session_id))
        if self.protocol_version is not None:
            lines.append(("MCP-Protocol-Version", self.protocol_version))
        self._state_fields = header_fields(lines)

    def set_state(self, protocol_version: str | None) -> None:
        """The revision every later request carries in ``MCP-Protocol-Version``."""
        self.protocol_version = protocol_version
        self._refresh_state()

    def post_fields(self, headers: Sequence[tuple[str, str]]) -> Fields:
        """The header fields of a POST (its Content-Length is the framing's)."""
        fields = self._post_fields + self._state_fields
        if headers:
            fields += header_fields(headers)
        return fields

    async def post(self, body: bytes, headers: Sequence[tuple[str, str]] = ()) -> HttpResponse:
        resp = await self.pool.request(b"POST", self.post_fields(headers), body)
        if self.session_id is None:
            session = resp.headers.get("mcp-session-id")
            if session:
                self.session_id = session
                self._refresh_state()
        return resp

    async def exchange(
        self,
        body: bytes,
        headers: Sequence[tuple[str, str]] = (),
        waiting: Waiting | None = None,
    ) -> None:
        resp = await self.post(body, headers)
        try:
            await self._read_reply(resp, waiting)
        except BaseException:
            resp.abort()  # a cancelled exchange closes its stream (2026-07-28 cancel)
            raise
        resp.release()

    async def _read_reply(self, resp: HttpResponse, waiting: Waiting | None) -> None:
        status = resp.status
        deliver = self.deliver
        if resp.content_type == "text/event-stream":
            parser = SseParser()
            retry_ms = await self._read_events(resp, parser, status)
            resumed = 0
            while (
                waiting is not None
                and waiting()
                and parser.last_id is not None
                and self.session_id is not None
                and resumed < self.max_resumptions
            ):
                resumed += 1
                await asyncio.sleep(retry_ms / 1000)
                retry_ms = await self._resume(parser, status)
            return
        data = await resp.read()
        if status == 202 or not data.strip():
            if status >= 400:
                raise _status_error(status, data, self.describe())
            return
        if resp.content_type != "application/json":
            raise _status_error(status, data, self.describe())
        try:
            orphans = _deliver_body(data, deliver, status)
        except McpError:
            raise _status_error(status, data, self.describe()) from None
        if orphans:
            raise orphan_error(orphans[0], status)

    async def _read_events(self, resp: HttpResponse, parser: SseParser, status: int) -> int:
        """Deliver the messages of an SSE body; the last ``retry`` it named (ms)."""
        retry_ms = 0
        deliver = self.deliver
        async for chunk in resp.chunks():
            for event in parser.feed(chunk):
                if event.retry is not None:
                    retry_ms = event.retry
                if event.data and event.event == "message":
                    orphans = _deliver_body(event.data, deliver, status)
                    if orphans:
                        raise orphan_error(orphans[0], status)
        return retry_ms

    def _get(self, last_id: str | None) -> Fields:
        """The header fields of a GET of the session's stream (after ``last_id``)."""
        fields = list(self._get_fields)
        if last_id is not None:
            fields += header_fields([("Last-Event-ID", last_id)])
        return fields + self._extra_fields + self._state_fields

    async def _resume(self, parser: SseParser, status: int) -> int:
        """GET the rest of a reply stream after ``parser.last_id``; the next ``retry`` (ms)."""
        resp = await self.pool.request(b"GET", self._get(parser.last_id))
        try:
            if resp.status != 200 or resp.content_type != "text/event-stream":
                data = await resp.read()
                raise _status_error(resp.status, data, self.describe())
            retry_ms = await self._read_events(resp, parser, status)
        except BaseException:
            resp.abort()
            raise
        resp.release()
        return retry_ms

    async def listen(self) -> None:
        """The session's standalone stream (GET): server requests and notifications tied to
        no request. Reopened after ``Last-Event-ID`` when it ends; ends when the server has
        none (405, ...) or the session does."""
        parser = SseParser()
        failures = 0
        while self.session_id is not None and failures < 3:
            try:
                resp = await self.pool.request(b"GET", self._get(parser.last_id))
            except (OSError, TransportClosed):
                failures += 1
                await asyncio.sleep(0.5 * failures)
                continue
            retry_ms = 1000
            try:
                if resp.status != 200 or resp.content_type != "text/event-stream":
                    return
                failures = 0
                retry_ms = await self._read_events(resp, parser, resp.status) or retry_ms
            except (OSError, TransportClosed, McpError):
                failures += 1
            finally:
                resp.abort()
            await asyncio.sleep(retry_ms / 1000)

    async def send(self, body: bytes, headers: Sequence[tuple[str, str]] = ()) -> None:
        resp = await self.post(body, headers)
        try:
            data = await resp.read()
        except BaseException:
            resp.abort()
            raise
        resp.release()
        if resp.status >= 400:
            raise _status_error(resp.status, data, self.describe())

    async def delete_session(self) -> None:
        """End the session (legacy revisions); a server that does not do that may say 405."""
        if self.session_id is None:
            return
        # An empty body: the framing writes its Content-Length: 0.
        resp = await self.pool.request(b"DELETE", self._delete_fields + self._state_fields, b"")
        try:
            await resp.read()
        finally:
            resp.release()
        self.session_id = None
        self._refresh_state()

    async def close(self) -> None:
        self.pool.close()


def _status_error(status: int, data: bytes, where: str) -> McpError:
    """An HTTP failure as an McpError: the JSON-RPC error in the body when there is one."""
    frame = _wire.decode(data) if data else None
    if frame is not None and frame.kind == _wire.FRAME_SINGLE:
        entry = frame.entries[0]
        if entry.kind == _wire.RESPONSE and entry.is_error:
            return with_status(error_from(entry.result()), status)
    text = data[:200].decode("utf-8", "replace")
    message = f"HTTP {status} from {where}: {text}".rstrip()
    return with_status(McpError(INTERNAL_ERROR, message), status)


class StdioTransport(Transport):
    """A server as a child process: one message per line on its stdin and stdout.

    stderr is kept (its last 64 KiB) so that a server that dies can say why.
    """

    replies_per_exchange = False

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        max_line_bytes: int = 64 * 1024 * 1024,
        close_timeout: float = 2.0,
    ) -> None:
        self.argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not self.argv:
            raise ValueError("an empty command")
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.max_line_bytes = max_line_bytes
        self.close_timeout = close_timeout
        self.proc: asyncio.subprocess.Process | None = None
        self._stderr: deque[bytes] = deque()
        self._stderr_size = 0
        self._tasks: list[asyncio.Task[None]] = []
        self._closing = False

    def describe(self) -> str:
        return shlex.join(self.argv)

    async def open(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self.env,
            cwd=self.cwd,
            limit=self.max_line_bytes,
            start_new_session=True,
        )
        self._tasks = [
            asyncio.create_task(self._read_stdout()),
            asyncio.create_task(self._read_stderr()),
        ]

    def stderr_tail(self) -> str:
        return b"".join(self._stderr).decode("utf-8", "replace")

    async def _read_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        stream = self.proc.stderr
        while chunk := await stream.read(_READ_SIZE):
            self._stderr.append(chunk)
            self._stderr_size += len(chunk)
            while self._stderr_size > _READ_SIZE and len(self._stderr) > 1:
                self._stderr_size -= len(self._stderr.popleft())

    async def _read_stdout(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        stream = self.proc.stdout
        deliver = self.deliver
        reason: BaseException | None = None
        try:
            while True:
                try:
                    line = await stream.readuntil(b"\n")
                except asyncio.IncompleteReadError as exc:
                    line = exc.partial
                    if line.strip():
                        self._line(line, deliver)
                    break
                except asyncio.LimitOverrunError:
                    reason = TransportClosed(
                        f"the server wrote a line over {self.max_line_bytes} bytes"
                    )
                    break
                self._line(line, deliver)
        except asyncio.CancelledError:
            return
        except Exception as exc:
            reason = exc
        if reason is None:
            await self._wait_exit(self.close_timeout)
            code = self.proc.returncode
            reason = TransportClosed(
                f"the server {self.describe()!r} closed its stdout"
                + (f" (exit code {code})" if code is not None else "")
                + (f"; stderr:\n{self.stderr_tail()}" if self._stderr else "")
            )
        if not self._closing:
            self.on_close(reason)

    def _line(self, line: bytes, deliver: Deliver) -> None:
        line = line.strip()
        if not line:
            return
        frame = _wire.decode(line)
        for entry in frame.entries:
            deliver(entry, 0)

    def _write(self, data: bytes) -> asyncio.StreamWriter:
        proc = self.proc
        if proc is None or proc.stdin is None or proc.stdin.is_closing():
            raise TransportClosed(f"the server {self.describe()!r} is not running")
        proc.stdin.write(data + b"\n")
        return proc.stdin

    async def exchange(
        self,
        body: bytes,
        headers: Sequence[tuple[str, str]] = (),
        waiting: Waiting | None = None,
    ) -> None:
        await self.send(body)

    async def send(self, body: bytes, headers: Sequence[tuple[str, str]] = ()) -> None:
        stdin = self._write(body)
        try:
            await stdin.drain()
        except (ConnectionError, BrokenPipeError) as exc:
            raise TransportClosed(f"the server {self.describe()!r} stopped reading") from exc

    def send_now(self, body: bytes) -> None:
        """Write without waiting (cancellation notices from a cancelled task)."""
        with contextlib.suppress(TransportClosed, ConnectionError):
            self._write(body)

    async def _wait_exit(self, grace: float) -> bool:
        assert self.proc is not None
        try:
            async with asyncio.timeout(grace):
                await self.proc.wait()
            return True
        except TimeoutError:
            return False

    async def close(self) -> None:
        """Close stdin, give the server ``close_timeout`` to exit, then SIGTERM, then SIGKILL."""
        self._closing = True
        proc = self.proc
        if proc is None:
            return
        if proc.stdin is not None:
            with contextlib.suppress(ConnectionError, BrokenPipeError):
                proc.stdin.close()
        if proc.returncode is None and not await self._wait_exit(self.close_timeout):
            for sig in (signal.SIGTERM, signal.SIGKILL):
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(sig)
                if await self._wait_exit(self.close_timeout):
                    break
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


__all__ = [
    "HttpConnection",
    "HttpPool",
    "HttpResponse",
    "HttpStatusError",
    "HttpTransport",
    "SseEvent",
    "SseParser",
    "StdioTransport",
    "Transport",
    "TransportClosed",
    "Url",
]
