"""The jetmcp client against servers it did not write: the official Python SDK (``mcp``, a tiny
``MCPServer`` app) and the official TypeScript SDK (``@modelcontextprotocol/sdk``, run by node,
tests/clients/ts_server.mjs), each over stdio and Streamable HTTP, negotiated and at every
legacy revision.

Neither peer takes JSON-RPC arrays everywhere the revision allows them (the Python SDK never
does; the TypeScript one only over HTTP), so these also prove the fallback: the client checks
once with ``[ping]`` and sends the batch as single requests, same answers, same order.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from harness.client_app import HERE, free_port, run
from harness.servers import ServerProcess
from jetmcp import Client
from jetmcp.client import CallToolResult, ElicitResult, ListToolsResult, TextContent
from jetmcp.protocol import revisions

REVISIONS = [None, *(r.version for r in revisions.LEGACY)]
TS_SERVER = HERE / "clients" / "ts_server.mjs"
TS_MISSING = not (HERE / "clients" / "node_modules" / "@modelcontextprotocol" / "sdk").exists()
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(
    NODE is None or TS_MISSING,
    reason="needs node and the TypeScript SDK (npm ci in tests/clients)",
)

SDK_APP = '''
import sys
from typing import Annotated

import anyio
from pydantic import BaseModel
from mcp.server.mcpserver import Elicit, MCPServer, Resolve

mcp = MCPServer("sdk-peer")
EVENTS: dict[str, list[str]] = {}


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two integers"""
    return a + b


@mcp.tool()
async def wait_for_cancel(tag: str, seconds: float = 30.0) -> str:
    """Sleep until cancelled, noting it under tag"""
    notes = EVENTS.setdefault(tag, [])
    notes.append("started")
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        notes.append("cancelled")
        raise
    notes.append("finished")
    return "finished"


@mcp.tool()
def events(tag: str) -> list[str]:
    """What happened under tag"""
    return EVENTS.get(tag, [])


class Name(BaseModel):
    name: str


async def ask_name() -> Elicit[Name]:
    return Elicit("Your name?", Name)


@mcp.tool()
def ask_name_tool(name: Annotated[Name, Resolve(ask_name)]) -> str:
    """Ask the user for a name"""
    return f"hello {name.name}"


if sys.argv[1] == "stdio":
    mcp.run("stdio")
else:
    mcp.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
'''


async def _elicit(request: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada"})


@pytest.fixture(scope="module")
def sdk_app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sdk") / "sdk_peer.py"
    path.write_text(SDK_APP)
    return path


@pytest.fixture(scope="module")
def sdk_http(sdk_app: Path) -> Any:
    port = free_port()
    server = ServerProcess([sys.executable, str(sdk_app), "http", str(port)], port)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def ts_http() -> Any:
    port = free_port()
    assert NODE is not None
    server = ServerProcess([NODE, str(TS_SERVER), "http", str(port)], port)
    try:
        yield server
    finally:
        server.stop()


def _texts(result: CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, TextContent)]


async def _exercise(client: Client, ask: str, tag: str) -> None:
    """What every peer must do with the client: calls, a batch, hand-built messages with
    colliding ids, elicitation where the revision has it, and whole-batch cancellation."""
    rev = client.revision
    assert (await client.call_tool("add", {"a": 40, "b": 2})).text == "42"

    tools, first, second = await (
        client.batch()
        .list_tools()
        .call_tool("add", {"a": 1, "b": 1})
        .call_tool("add", {"a": 2, "b": 2})
    ).send()
    assert {"add", "wait_for_cancel", "events"} <= {
        t.name for t in tools.into_result(ListToolsResult).tools
    }
    assert [first.into_result(CallToolResult).text, second.into_result(CallToolResult).text] == [
        "2",
        "4",
    ]

    answers = await client.call_batch(
        [
            {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": _add(5, 5)},
            {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": _add(6, 6)},
            {"jsonrpc": "2.0", "id": "5", "method": "tools/call", "params": _add(7, 7)},
        ]
    )
    assert [(a.id, a.into_result(CallToolResult).text) for a in answers] == [
        (5, "10"),
        (5, "12"),
        ("5", "14"),
    ]

    if rev.elicitation:
        assert (await client.call_tool(ask)).text in ("hello Ada", "hello Ada\n")
        # In a batch too: at 2026-07-28 the elicitation comes back as an input round
        # (MRTR) that the builder drives to completion; earlier, as a server request.
        asked, added = await client.batch().call_tool(ask).call_tool("add", {"a": 3, "b": 4}).send()
        assert asked.into_result(CallToolResult).text in ("hello Ada", "hello Ada\n")
        assert added.into_result(CallToolResult).text == "7"

    batch = client.batch()
    for _ in range(2):
        batch.call_tool("wait_for_cancel", {"tag": tag})
    task = asyncio.ensure_future(batch.send())
    deadline = time.monotonic() + 10
    notes: list[str] = []
    while notes.count("started") < 2 and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        notes = _notes(await client.call_tool("events", {"tag": tag}))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    while notes.count("cancelled") < 2 and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        notes = _notes(await client.call_tool("events", {"tag": tag}))
    assert notes == ["started", "started", "cancelled", "cancelled"]


def _notes(result: CallToolResult) -> list[str]:
    texts = _texts(result)
    if len(texts) == 1 and texts[0].startswith("["):
        return list(json.loads(texts[0]))  # the TS tool answers one JSON text
    return texts


def _peer(kind: str, url: str, argv: list[str], version: str | None) -> Client:
    """A client of a peer over ``kind``, answering elicitation, quick to give up on arrays."""
    options: dict[str, Any] = {
        "revision": version,
        "elicitation_handler": _elicit,
        "batch_probe_timeout": 0.5,
    }
    return Client(url, **options) if kind == "http" else Client.stdio(argv, **options)


def _add(a: int, b: int) -> dict[str, Any]:
    return {"name": "add", "arguments": {"a": a, "b": b}}


# --------------------------------------------------------------------------- Python SDK


@pytest.mark.parametrize("version", REVISIONS)
@pytest.mark.parametrize("kind", ["stdio", "http"])
def test_python_sdk(sdk_app: Path, sdk_http: ServerProcess, kind: str, version: str | None) -> None:
    tag = f"sdk-{kind}-{version}"

    async def scenario() -> None:
        client = _peer(kind, sdk_http.url, [sys.executable, str(sdk_app), "stdio"], version)
        async with client:
            # The SDK speaks 2026-07-28 too, so the client settles on it when free to.
            assert client.revision.version == (version or "2026-07-28")
            await _exercise(client, "ask_name_tool", tag)
            # It takes no JSON-RPC arrays, at any revision: batches went as single requests.
            assert client.wire_batches is False

    run(scenario())


# --------------------------------------------------------------------------- TypeScript SDK


@needs_node
@pytest.mark.parametrize("version", REVISIONS)
@pytest.mark.parametrize("kind", ["stdio", "http"])
def test_typescript_sdk(ts_http: ServerProcess, kind: str, version: str | None) -> None:
    tag = f"ts-{kind}-{version}"
    assert NODE is not None

    async def scenario() -> None:
        client = _peer(kind, ts_http.url, [NODE, str(TS_SERVER), "stdio"], version)
        async with client:
            # No 2026-07-28 in this SDK: initialize at its newest revision.
            assert client.revision.version == (version or "2025-11-25")
            # Over HTTP its elicitation arrives on the session's GET stream.
            await _exercise(client, "ask_name", tag)
            rev = client.revision
            # Its HTTP transport takes arrays (where the revision has them); stdio does not.
            assert client.wire_batches is (rev.batching and kind == "http")

    run(scenario())
