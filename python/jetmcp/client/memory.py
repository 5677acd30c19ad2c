"""The in-memory transport: a client talking to a server object in the same process, with
no sockets and no child process (``jetmcp.Client(server)``), for users' own tests.

The server side is jetmcp's stdio transport (:class:`~jetmcp.transports.stdio.StdioServer`)
fed message by message: the same dispatcher, the same revision rules (a legacy session after
``initialize``, 2026-07-28 requests by their ``_meta``), server-to-client requests and
notifications on the same stream. The server's lifespan is entered on open and left on
close. Any object ``jetmcp run`` accepts may be given (SDK and fastmcp servers are adapted).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from jetmcp import _wire
from jetmcp.client.transports import Transport, TransportClosed, Waiting


class _ClientSink:
    """The server's stdout: each message goes straight to the client."""

    __slots__ = ("_transport",)

    def __init__(self, transport: MemoryTransport) -> None:
        self._transport = transport

    async def send(self, message: bytes) -> None:
        self.write(message)

    def write(self, message: bytes) -> None:
        self._transport._from_server(message)


class MemoryTransport(Transport):
    """A server object in this process, reached through jetmcp's stdio machinery."""

    replies_per_exchange = False

    def __init__(self, server: Any) -> None:
        from jetmcp.compat import adapt

        self.server = adapt(server, "stdio")
        self._stdio: Any = None
        self._sink = _ClientSink(self)
        self._lifespan: Any = None
        self._closed = False

    def describe(self) -> str:
        return f"the in-memory server {self.server.name!r}"

    async def open(self) -> None:
        from jetmcp.server.lifespan import LifespanScope
        from jetmcp.transports.stdio import StdioServer

        self._lifespan = LifespanScope(self.server)
        await self._lifespan.start()
        self._stdio = StdioServer(self.server, sink=self._sink)

    def _from_server(self, message: bytes) -> None:
        if self._closed:
            return
        frame = _wire.decode(message)
        for entry in frame.entries:
            self.deliver(entry, 0)

    async def exchange(
        self,
        body: bytes,
        headers: Sequence[tuple[str, str]] = (),
        waiting: Waiting | None = None,
    ) -> None:
        await self.send(body)

    async def send(self, body: bytes, headers: Sequence[tuple[str, str]] = ()) -> None:
        if self._closed or self._stdio is None:
            raise TransportClosed(f"{self.describe()} is closed")
        # A line of its own, as stdio would read it; answered in a later loop turn so the
        # client has registered its waiter first.
        stdio = self._stdio
        asyncio.get_running_loop().call_soon(stdio.serve_line, body)

    def send_now(self, body: bytes) -> None:
        if not self._closed and self._stdio is not None:
            self._stdio.serve_line(body)

    async def close(self) -> None:
        """Let running requests finish, as stdin's end does, then leave the lifespan."""
        if self._closed:
            return
        self._closed = True
        stdio = self._stdio
        if stdio is not None:
            await self.server.close_subscriptions()
            if stdio._tasks:
                await asyncio.gather(*stdio._tasks, return_exceptions=True)
        if self._lifespan is not None:
            await self._lifespan.stop()


__all__ = ["MemoryTransport"]
