"""The uvloop floor: an ``asyncio.Protocol`` on uvloop answering the ceiling's canned reply,
its requests framed in plain Python (keep-alive, ``Content-Length`` bodies only). What a
server on this loop costs for the socket and the loop alone, with no MCP and no framing
library: the floor jetmcp's native engine is measured against.

    .venv/bin/python bench/load/uvloop_floor.py --port 8000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bodies import canned_reply

_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
#: The handshake a load generator that opens a session first (``jetmcp bench``) needs.
_ACCEPTED = b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n"
_INITIALIZED = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 0,
        "result": {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "uvloop-floor", "version": "0"},
        },
    },
    separators=(",", ":"),
).encode()


def _answer(body: bytes) -> bytes:
    """The canned reply, or the handshake's (an ``initialize`` answered with its own id)."""
    if b'"notifications/' in body:
        return _ACCEPTED
    if b'"initialize"' in body:
        request_id = json.loads(body)["id"]
        reply = _INITIALIZED.replace(b'"id":0', b'"id":' + json.dumps(request_id).encode())
        return _HEAD % len(reply) + reply
    reply = canned_reply(body)
    return _HEAD % len(reply) + reply


class Floor(asyncio.Protocol):
    """One connection: whole requests cut out of the stream, each answered at once."""

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.pending = b""

    def data_received(self, data: bytes) -> None:
        buf = self.pending + data if self.pending else data
        out = []
        while True:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                break
            length = 0
            marker = buf.find(b"ontent-length:", 0, end)
            if marker < 0:
                marker = buf.find(b"ONTENT-LENGTH:", 0, end)
            if marker >= 0:
                stop = buf.find(b"\r\n", marker)
                length = int(buf[marker + 14 : stop])
            start = end + 4
            if len(buf) < start + length:
                break
            out.append(_answer(buf[start : start + length]))
            buf = buf[start + length :]
        self.pending = buf
        if out:
            self.transport.write(b"".join(out))


async def serve(host: str, port: int) -> None:
    loop = asyncio.get_running_loop()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    server = await loop.create_server(Floor, sock=sock, backlog=1024)
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    server.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    uvloop.run(serve(args.host, args.port))


if __name__ == "__main__":
    main()
