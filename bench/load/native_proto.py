"""A prototype of jetmcp's own HTTP engine, for measurement only (not in the package): an
``asyncio.Protocol`` on uvloop whose ``data_received`` hands the bytes to the extension's
HTTP/1.1 state machine (``_wire.Http1Connection``) and answers inside the callback.

    .venv/bin/python bench/load/native_proto.py --port 8000 --mode mcp
    .venv/bin/python bench/load/native_proto.py --port 8000 --mode fixed
    .venv/bin/python bench/load/native_proto.py --port 8000 --mode python-fixed

Modes:

- ``fixed``: the Granian ceiling's answer (``bodies.canned_reply``), framed by the extension:
  the cost of the socket, the loop and the framing, with no MCP.
- ``python-fixed``: the same answer framed in plain Python (find the blank line, read
  Content-Length): the uvloop floor of issue 39.
- ``mcp``: ``bench/load/jetmcp_server.py``'s app, stateless. A POST to ``/mcp`` whose headers
  pass the usual checks (one Host the guard allows, no Origin, JSON in, an Accept that takes
  JSON, an exact legacy ``MCP-Protocol-Version``: judged once per set of values, then looked
  up by ``Http1Request.header_key``) and whose body is one call the extension
  plans and runs (``Dispatcher.answer``) is answered in the callback. Anything else is
  answered 501 here: the prototype measures the fast path, the lead integrates the rest.

Requests are answered one at a time per connection, in order (pipelining works: each
complete request is answered before the next is parsed).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path
from typing import Any

import uvloop

LOAD = Path(__file__).resolve().parent
sys.path.insert(0, str(LOAD))

from bodies import canned_reply  # noqa: E402

from jetmcp import _wire  # noqa: E402

JSON = _wire.Http1Fields([(b"content-type", b"application/json")])
#: The headers a usual POST's verdict depends on (as the Granian transport's gate reads them).
GATE = (b"host", b"content-type", b"accept", b"origin", b"mcp-protocol-version")


class FixedBody(asyncio.Protocol):
    """The ceiling's canned reply, framed by the extension."""

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.conn = _wire.Http1Connection()

    def data_received(self, data: bytes) -> None:
        conn = self.conn
        try:
            request = conn.feed(data)
            while request is not None:
                self.transport.write(conn.respond(200, JSON, canned_reply(request.body)))
                request = conn.next_request()
        except _wire.Http1Error as refused:
            self.transport.write(refused.response)
            self.transport.close()
            return
        if conn.closed:
            self.transport.close()


class PythonFixedBody(asyncio.Protocol):
    """The canned reply, framed in plain Python (keep-alive, Content-Length bodies only)."""

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.buf = b""

    def data_received(self, data: bytes) -> None:
        buf = self.buf + data
        while True:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                break
            head = buf[:end]
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if len(buf) < end + 4 + length:
                break
            body = buf[end + 4 : end + 4 + length]
            buf = buf[end + 4 + length :]
            reply = canned_reply(body)
            self.transport.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                % (len(reply), reply)
            )
        self.buf = buf


class McpFastPath(asyncio.Protocol):
    """Plain tool calls answered by the extension inside the callback (see the module docs)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.conn = _wire.Http1Connection(max_body=self.engine.max_body)

    def data_received(self, data: bytes) -> None:
        conn = self.conn
        write = self.transport.write
        answer = self.engine.answer
        try:
            request = conn.feed(data)
            while request is not None:
                status, body = answer(request)
                write(conn.respond(status, JSON, body))
                request = conn.next_request()
        except _wire.Http1Error as refused:
            write(refused.response)
            self.transport.close()
            return
        if conn.closed:
            self.transport.close()


class Engine:
    """What every connection of the ``mcp`` mode shares: the app's dispatcher and the verdicts
    on header values already judged (as the Granian transport's gate learns them)."""

    def __init__(self) -> None:
        from jetmcp_server import app as server

        from jetmcp.run.serving import make_app
        from jetmcp.settings import Settings
        from jetmcp.transports._http import post_flags
        from jetmcp.transports.http import _LEGACY_EXACT

        settings = Settings(stateless=True)
        self.http = make_app(server, settings)
        self.dispatcher = self.http.dispatcher
        self.settings = settings
        self.max_body = settings.max_body_bytes
        self._post_flags = post_flags
        self._revisions = {k.encode(): v for k, v in _LEGACY_EXACT.items()}
        #: ``Http1Request.header_key(GATE)`` -> the revision a POST with those header values
        #: is served at (None: not a usual POST; answered 501 here).
        self._verdicts: dict[bytes, Any] = {}

    def _judge(self, request: Any) -> Any:
        """The verdict on a request's gate headers, judged once per set of values."""
        header = request.header
        host, content_type, accept = header(b"host"), header(b"content-type"), header(b"accept")
        verdict = None
        if (
            host is not None
            and header(b"origin") is None
            and self.http.guard.host_allowed(host.decode("latin-1"))
            and self._post_flags(
                None if content_type is None else content_type.decode("latin-1"),
                None if accept is None else accept.decode("latin-1"),
            )
            > 0
        ):
            verdict = self._revisions.get(header(b"mcp-protocol-version") or b"")
        self._verdicts[request.header_key(GATE)] = verdict
        return verdict

    def answer(self, request: Any) -> tuple[int, bytes]:
        if request.method != b"POST" or request.target != b"/mcp":
            return 501, b""
        key = request.header_key(GATE)
        revision = self._verdicts[key] if key in self._verdicts else self._judge(request)
        if revision is None:
            return 501, b""
        settings = self.settings
        frame = _wire.decode(request.body, settings.max_depth, settings.max_batch)
        if frame.kind != _wire.FRAME_SINGLE or frame.initialize:
            return 501, b""
        dispatcher = self.dispatcher
        done = dispatcher.answer(frame, revision, None, dispatcher.can_step(None))
        if type(done) is not bytes:
            return 501, b""
        return 200, done


async def serve(mode: str, host: str, port: int) -> None:
    loop = asyncio.get_running_loop()
    if mode == "fixed":
        factory: Any = FixedBody
    elif mode == "python-fixed":
        factory = PythonFixedBody
    else:
        engine = Engine()

        def factory() -> McpFastPath:
            return McpFastPath(engine)

    server = await loop.create_server(factory, host, port, backlog=1024)
    stop = loop.create_future()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, lambda: stop.done() or stop.set_result(None))
    async with server:
        await stop


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("fixed", "python-fixed", "mcp"), default="mcp")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    uvloop.run(serve(args.mode, args.host, args.port))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
