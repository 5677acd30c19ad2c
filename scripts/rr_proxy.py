"""A round-robin TCP proxy on 127.0.0.1 for the two-host runs of scripts/conformance.sh:
each accepted connection goes to the next upstream port in turn, as a load balancer without
stickiness would send it.

    python scripts/rr_proxy.py LISTEN_PORT UPSTREAM_PORT [UPSTREAM_PORT ...]

Runs until it is terminated."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import sys


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            writer.write_eof()


async def main(listen: int, upstreams: list[int]) -> None:
    turn = itertools.cycle(upstreams)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", next(turn))
        except OSError:
            writer.close()
            return
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        for w in (writer, up_writer):
            w.close()

    server = await asyncio.start_server(handle, "127.0.0.1", listen)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    ports = [int(arg) for arg in sys.argv[1:]]
    if len(ports) < 2:
        sys.exit("usage: rr_proxy.py LISTEN_PORT UPSTREAM_PORT [UPSTREAM_PORT ...]")
    asyncio.run(main(ports[0], ports[1:]))
