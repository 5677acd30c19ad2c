"""``jetmcp bench --driver rust`` against ``--driver python``: the same requests to the same real
server give the same counts by kind (replies, JSON-RPC errors by code, ``isError``, HTTP
statuses, missing replies), in the closed loop and the open model, over a jetmcp server and
over a peer that answers with HTTP 4xx/5xx, SSE, chunked bodies and ``Connection: close``.
Counts only: no timing thresholds."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from harness.bench_support import ADD, bench, bench_json, serve_http, stdio_command
from harness.client_app import free_port
from harness.servers import ServerProcess

VERSION = ["--revision", "2025-11-25"]
#: Plain calls, a tool that fails (isError), an unknown tool (-32602, HTTP 400 from jetmcp)
#: and an unknown method (-32601, HTTP 404).
MIX = [
    *ADD,
    "--tool", "fail", "--args", '{"reason": "no"}',
    "--tool", "nope",
    "--method", "bogus/method",
]  # fmt: skip


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    yield from serve_http()


def counts(data: dict[str, Any]) -> dict[str, Any]:
    """What two drivers must agree on."""
    return {
        "requests": data["requests"],
        "entries": data["entries"],
        "failed": data["failed"],
        "errors": data["errors"],
        "errors_by_kind": data["errors_by_kind"],
        "methods": {
            label: (m["count"], m["errors"], m["errors_by_kind"])
            for label, m in data["methods"].items()
        },
    }


def both(*args: str, status: int = 1) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both drivers' reports (exit status 1: some requests failed, as the mixes mean)."""
    python = bench_json(*args, "--driver", "python", status=status)
    rust = bench_json(*args, "--driver", "rust", status=status)
    assert (python["driver"], rust["driver"]) == ("python", "rust")
    return python, rust


def test_closed_loop_counts_match_over_jetmcp(server: ServerProcess) -> None:
    python, rust = both(server.url, "--transport", "http", "-n", "800", "-c", "3", *MIX)
    assert counts(python) == counts(rust)
    kinds = rust["errors_by_kind"]
    assert kinds["isError"] == 200 and kinds["jsonrpc -32601"] == 200
    assert rust["requests"] == 800 and rust["failed"] == 600


def test_batches_match(server: ServerProcess) -> None:
    python, rust = both(server.url, "--transport", "http", "-n", "90", "--batch", "4", *MIX)
    assert counts(python) == counts(rust)
    assert rust["entries"] == 360


def test_rate_counts_match(server: ServerProcess) -> None:
    args = (server.url, "--transport", "http", "--rate", "300", "-n", "240", "-c", "2", *MIX)
    python, rust = both(*args)
    assert counts(python) == counts(rust)
    for data in (python, rust):
        assert data["mode"] == "open"
        assert data["schedule"]["sent"] == 240 == data["requests"]


def test_rate_over_time_sends_the_schedule(server: ServerProcess) -> None:
    """1.5 s at 200/s is 300 requests sent, each answered, by either driver."""
    args = (server.url, "--transport", "http", "--rate", "200", "-d", "1.5", *ADD)
    python, rust = both(*args, status=0)
    for data in (python, rust):
        assert data["schedule"]["sent"] == 300 == data["requests"] == data["entries"]
        assert data["failed"] == 0
        assert sum(t["requests"] for t in data["timeline"]) == 300


def test_auto_picks_rust_over_http_and_python_over_stdio(server: ServerProcess) -> None:
    data = bench_json(server.url, "--transport", "http", "-n", "20", *ADD)
    assert data["driver"] == "rust"
    data = bench_json("--stdio", stdio_command(), "--transport", "stdio", "-n", "20", *ADD)
    assert data["driver"] == "python" and data["requests"] == 20


def test_rust_refused_where_it_cannot_run() -> None:
    done = bench("--stdio", stdio_command(), "--transport", "stdio", "-n", "5", "--driver", "rust")
    assert done.returncode == 2, done.stderr
    assert "--driver rust: stdio servers are driven in Python" in done.stderr


# --------------------------------------------------------------------------- a peer


def _reply(
    status: int, body: bytes, *, kind: str = "application/json", close: bool = False
) -> bytes:
    head = [f"HTTP/1.1 {status} X", f"content-type: {kind}", f"content-length: {len(body)}"]
    if close:
        head.append("connection: close")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def _chunked_sse(payloads: list[bytes]) -> bytes:
    stream = b": keep-alive\r\n\r\n" + b"".join(
        b"event: message\ndata: " + p + b"\n\n" for p in payloads
    )
    half = len(stream) // 2
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in (stream[:half], stream[half:]))
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    )
    return head + chunks + b"0\r\n\r\n"


def answer(method: str | None, wid: Any, raw: Any) -> tuple[bytes, bool]:
    """The peer's reply to one POST body, by the request's id: (bytes, close after)."""
    ok = json.dumps({"jsonrpc": "2.0", "id": wid, "result": {"content": [], "isError": False}})
    if method == "initialize":
        result = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "peer", "version": "1"},
        }
        body = json.dumps({"jsonrpc": "2.0", "id": wid, "result": result}).encode()
        return _reply(200, body).replace(b"\r\n\r\n", b"\r\nmcp-session-id: s1\r\n\r\n", 1), False
    if wid is None:
        return _reply(202, b""), False
    if method != "tools/call" or not isinstance(wid, int):
        err = {"jsonrpc": "2.0", "id": wid, "error": {"code": -32601, "message": "no"}}
        return _reply(200, json.dumps(err).encode()), False
    which = wid % 8
    if which == 0:
        return _reply(200, ok.encode()), False
    if which == 1:
        tool = {"jsonrpc": "2.0", "id": wid, "result": {"content": [], "isError": True}}
        return _reply(200, json.dumps(tool).encode()), False
    if which == 2:
        err = {"jsonrpc": "2.0", "id": wid, "error": {"code": -32602, "message": "bad"}}
        return _reply(200, json.dumps(err, indent=1).encode()), False
    if which == 3:
        return _reply(429, b"slow down", kind="text/plain"), False
    if which == 4:
        note = b'{"jsonrpc":"2.0","method":"notifications/message","params":{}}'
        return _chunked_sse([note, ok.encode()]), False
    if which == 5:
        return _reply(200, ok.encode(), close=True), True
    if which == 6:
        err = {"jsonrpc": "2.0", "id": wid, "error": {"code": -32603, "message": "oops"}}
        return _reply(500, json.dumps(err).encode()), False
    # A notification and no reply: the request's own is missing.
    note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {}}
    return _reply(200, json.dumps(note).encode()), False


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            verb = lines[0].split(" ")[0]
            length = 0
            for line in lines[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            body = await reader.readexactly(length) if length else b""
            if verb != "POST":
                writer.write(_reply(200 if verb == "DELETE" else 405, b""))
                await writer.drain()
                continue
            message = json.loads(body)
            out, close = answer(message.get("method"), message.get("id"), message)
            writer.write(out)
            await writer.drain()
            if close:
                break
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


@pytest.fixture(scope="module")
def peer() -> Iterator[str]:
    port = free_port()
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    start = asyncio.start_server(_serve, "127.0.0.1", port)
    server = asyncio.run_coroutine_threadsafe(start, loop).result(10)
    yield f"http://127.0.0.1:{port}/mcp"
    loop.call_soon_threadsafe(server.close)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)


@pytest.mark.parametrize("mode", [["-c", "3"], ["--rate", "400", "-c", "2"]])
def test_counts_match_against_a_peer_of_every_kind(peer: str, mode: list[str]) -> None:
    args = (peer, "--transport", "http", *VERSION, "-n", "400", *mode, *ADD)
    python, rust = both(*args)
    assert counts(python) == counts(rust)
    kinds = rust["errors_by_kind"]
    # 400 ids from 1: 50 of each of the eight answers.
    assert kinds == {
        "http 429": 50,
        "http 500": 50,
        "isError": 50,
        "jsonrpc -32602": 50,
        "jsonrpc -32603": 50,
        "missing": 50,
    }
    assert rust["requests"] == 400 and rust["entries"] == 400 - 50 - 50
