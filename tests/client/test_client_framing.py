"""The client's HTTP/1.1 framing (the extension's ``Http1ClientConnection`` under
:class:`jetmcp.client.transports.HttpPool`) against a raw server that answers with bytes
written here, delivered one byte at a time: every body framing reads whole, and a
malformed or cut response is a :class:`TransportClosed`, never a hang or a wrong body."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from jetmcp.client.transports import HttpPool, TransportClosed, Url

GOOD = [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", b"hello", True),
    (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"3;ext=1\r\nhel\r\n2\r\nlo\r\n0\r\nTrailer: x\r\n\r\n",
        b"hello",
        True,
    ),
    (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", b"ok", True),
    (b"HTTP/1.0 200 OK\r\n\r\nto the end", b"to the end", False),
    (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", b"ok", False),
    (b"HTTP/1.1 204 No Content\r\n\r\n", b"", True),
    # Both: Transfer-Encoding wins, and the connection is not used again (RFC 9112 6.1).
    (
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        b"",
        False,
    ),
]

BAD = [
    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
    b"NOT HTTP AT ALL\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
]


@asynccontextmanager
async def raw_server(reply: bytes) -> AsyncIterator[HttpPool]:
    """A server that reads one request head, writes ``reply`` a byte at a time, then
    closes; and a pool to it."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            for i in range(len(reply)):
                writer.write(reply[i : i + 1])
                await writer.drain()
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    pool = HttpPool(Url.parse(f"http://127.0.0.1:{port}/mcp"))
    try:
        yield pool
    finally:
        pool.close()
        server.close()


@pytest.mark.parametrize(("reply", "body", "keep"), GOOD)
def test_every_body_framing_reads_whole(reply: bytes, body: bytes, keep: bool) -> None:
    async def main() -> None:
        async with raw_server(reply) as pool, asyncio.timeout(10):
            resp = await pool.request(b"POST", [(b"host", b"x")], b"{}")
            assert await resp.read() == body
            assert resp.reusable is keep
            resp.release()

    asyncio.run(main())


@pytest.mark.parametrize("reply", BAD)
def test_a_malformed_or_cut_response_is_transport_closed(reply: bytes) -> None:
    async def main() -> None:
        async with raw_server(reply) as pool, asyncio.timeout(10):
            with pytest.raises(TransportClosed):
                resp = await pool.request(b"POST", [(b"host", b"x")], b"{}")
                await resp.read()

    asyncio.run(main())
