"""The native engine's lane in the extension (``jetmcp._wire.NativeLane``), in process on a real
socket: each set of gate header values is judged once by the server's ``_judge`` and at most
``_MAX_VERDICTS`` verdicts are kept, whatever a client varies (a bounded attack: every request
with an ``Accept`` of its own, past the bound, each still answered right); the drain flag
the read callback reads is the server's; and, differentially, the lane answers every body as
the RSGI app's general path does, status, content type and bytes."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

from jetmcp import Server
from jetmcp.run.serving import make_app
from jetmcp.settings import Settings
from jetmcp.transports.native.server import _MAX_VERDICTS, NativeServer

server = Server("native-lane-tests")


@server.tool()
def add(a: int, b: int) -> int:
    return a + b


def _post(accept: str, a: int) -> bytes:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": a,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": a, "b": 1}},
        }
    ).encode()
    head = (
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Accept: {accept}\r\nMCP-Protocol-Version: 2025-06-18\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def _reply(reader: asyncio.StreamReader) -> tuple[int, Any]:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    return status, json.loads(await reader.readexactly(length))


def test_verdicts_are_judged_once_per_set_and_bounded() -> None:
    async def main() -> None:
        settings = Settings(host="127.0.0.1", stateless=True)
        app = make_app(server, settings)
        native = NativeServer(app, app, settings)
        judged: list[bytes | None] = []
        judge = native._judge

        def counting(request: Any) -> Any:
            judged.append(request.header(b"accept"))
            return judge(request)

        native._judge = counting  # type: ignore[method-assign]
        sock = socket.create_server(("127.0.0.1", 0))
        serving = asyncio.create_task(native.serve(sock))
        port = sock.getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        usual = "application/json, text/event-stream"
        for a in range(3):  # the same set of values: judged once
            writer.write(_post(usual, a))
            status, reply = await _reply(reader)
            assert status == 200 and reply["result"]["content"][0]["text"] == str(a + 1)
        assert len(judged) == 1 and native.native.verdicts == 1
        count = _MAX_VERDICTS + 50
        for a in range(count):  # a set of its own each time, past the bound
            writer.write(_post(f"{usual}, x/y{a}", a))
            status, reply = await _reply(reader)
            assert status == 200, reply
            assert reply["id"] == a and reply["result"]["content"][0]["text"] == str(a + 1)
        assert native.native.verdicts == _MAX_VERDICTS
        assert len(judged) == 1 + count
        # A kept set is not judged again; one past the bound is, each time.
        for accept in (f"{usual}, x/y0", f"{usual}, x/y{count - 1}"):
            writer.write(_post(accept, 7))
            status, reply = await _reply(reader)
            assert status == 200 and reply["result"]["content"][0]["text"] == "8"
        assert judged[1 + count :] == [f"{usual}, x/y{count - 1}".encode()]
        # The drain: the flag the read callback reads is the server's; an idle connection
        # is closed at once.
        assert not native.draining and not native.native.draining
        native.drain()
        assert native.draining and native.native.draining
        assert await asyncio.wait_for(reader.read(), 10) == b""
        writer.close()
        await asyncio.wait_for(serving, 10)

    asyncio.run(main())


BODIES = [
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}',
    b'{"jsonrpc":"2.0","id":"x\\u00e9","method":"tools/call","params":{"name":"add","arguments":{"b":1,"a":-7}}}',
    b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":"2","b":3}}}',
    b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":{"a":1}}}',
    b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nope","arguments":{}}}',
    b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"a":2,"b":3}}}',
    b'{"jsonrpc":"2.0","id":6,"method":"tools/list"}',
    b'{"jsonrpc":"2.0","id":7,"method":"ping"}',
    b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
    b'[{"jsonrpc":"2.0","id":8,"method":"ping"},{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}]',
    b"[]",
    b'{"jsonrpc":"2.0","id":10,"method":"tools/call"',
    b'{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}',
    b'{"jsonrpc":"1.0","id":11,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"add","arguments":[1,2]}}',
]


def _raw(body: bytes, version: str) -> bytes:
    head = (
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {version}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def _answers(lane: bool, requests: list[bytes]) -> tuple[list[tuple[int, bytes, bytes]], int]:
    """Each request's status, content type and body from a native server on a real socket,
    with the usual POST's lane in the extension on or off (every request then takes the
    RSGI app's general path); and how many went to that general path."""
    settings = Settings(host="127.0.0.1", stateless=True)
    app = make_app(server, settings)
    app.lane = lane
    native = NativeServer(app, app, settings)
    assert (native.lane is not None) is lane
    general: list[Any] = []
    to_general = native._general

    def counting(connection: Any, request: Any) -> bool:
        general.append(request)
        return to_general(connection, request)

    native._general = counting  # type: ignore[method-assign]
    sock = socket.create_server(("127.0.0.1", 0))
    serving = asyncio.create_task(native.serve(sock))
    reader, writer = await asyncio.open_connection("127.0.0.1", sock.getsockname()[1])
    out = []
    for raw in requests:
        writer.write(raw)
        head = await reader.readuntil(b"\r\n\r\n")
        fields = dict(line.split(b": ", 1) for line in head.split(b"\r\n")[1:] if b": " in line)
        length = int(fields.get(b"content-length", b"0"))
        body = await reader.readexactly(length)
        out.append((int(head.split(b" ", 2)[1]), fields.get(b"content-type", b""), body))
    native.drain()
    writer.close()
    await asyncio.wait_for(serving, 10)
    return out, len(general)


def test_the_lane_answers_as_the_general_path() -> None:
    # Differential: the extension's lane (planned calls answered in the read callback)
    # against the RSGI app's general path, over calls it answers, ones it hands back
    # (a refused argument, an unknown tool, a repeated key) and bodies it never plans.
    requests = [_raw(b, v) for v in ("2025-06-18", "2025-11-25") for b in BODIES]
    fast, went_general = asyncio.run(_answers(True, requests))
    general, all_general = asyncio.run(_answers(False, requests))
    assert went_general == 0 and all_general == len(requests)
    for raw, a, b in zip(requests, fast, general, strict=True):
        assert a == b, raw
    assert {status for status, _, _ in fast} >= {200, 202, 400}
