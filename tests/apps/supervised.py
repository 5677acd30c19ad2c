"""A process under :func:`jetmcp.run.supervisor.serve_workers` for tests/test_supervisor.py:
``python -m tests.apps.supervised PORT WORKERS GRACE [HEALTHY [crash]]`` binds
127.0.0.1:PORT and keeps WORKERS workers on it, each a small asyncio HTTP server of its
own answering ``200 <pid>``; ``GET /slow?seconds=S`` sends its head at once and its body
S seconds later. SIGTERM in a worker stops its accepting and lets the requests it has
finish (exit status 0). With ``crash`` every worker exits with status 3 as it starts."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sys

from jetmcp.run.supervisor import serve_workers


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        writer.close()
        return
    target = head.split(b" ", 2)[1].decode()
    body = str(os.getpid()).encode()
    try:
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body)
        )
        if target.startswith("/slow?seconds="):
            # The head goes first: the client knows its request is in flight.
            await writer.drain()
            await asyncio.sleep(float(target.split("=", 1)[1]))
        writer.write(body)
        await writer.drain()
    finally:
        writer.close()


async def _serve(sock: socket.socket) -> None:
    in_flight: set[asyncio.Task[None]] = set()

    async def track(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        in_flight.add(task)
        try:
            await _handle(reader, writer)
        finally:
            in_flight.discard(task)

    server = await asyncio.start_server(track, sock=sock)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    await stop.wait()
    # Stop accepting (this worker's copy of the socket closes, not the others'), then
    # finish what came in.
    server.close()
    if in_flight:
        await asyncio.wait(set(in_flight))


def worker_main(sock: socket.socket) -> int:
    asyncio.run(_serve(sock))
    return 0


def crashing_main(sock: socket.socket) -> int:
    """A worker that cannot start: exits with status 3 at once."""
    return 3


def main() -> int:
    port, workers, grace = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    healthy = float(sys.argv[4]) if len(sys.argv) > 4 else 30.0
    worker = crashing_main if sys.argv[5:] == ["crash"] else worker_main
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    sock.setblocking(False)
    return serve_workers(
        sock, workers, worker, grace=grace, log=logging.getLogger("test"), healthy_seconds=healthy
    )


if __name__ == "__main__":
    sys.exit(main())
