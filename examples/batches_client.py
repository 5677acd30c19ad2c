"""Batches from the client, against the quick-start server (quickstart.py) or any other.

    python examples/batches_client.py [URL]       # default http://127.0.0.1:8000/mcp

`client.batch()` chains requests; `send()` answers one Response per request, in order. Where
the revision has JSON-RPC batches (2024-11-05, 2025-03-26, and 2026-07-28 when the server
advertises `io.jetmcp/batch`) they go out as one array, one write; elsewhere as concurrent
single requests. The code is the same either way.
"""

import asyncio
import sys

from jetmcp import Client
from jetmcp.client import CallToolResult, ListToolsResult


async def main(url: str) -> None:
    for revision in ("2025-03-26", "2025-11-25", "2026-07-28"):
        async with Client(url, revision=revision) as client:
            before = client.writes
            batch = client.batch().list_tools()
            for n in range(5):
                batch.call_tool("add", {"a": n, "b": n})
            tools, *sums = await batch.send()
            names = [tool.name for tool in tools.into_result(ListToolsResult).tools]
            texts = [answer.into_result(CallToolResult).text for answer in sums]
            print(f"{revision}: tools {names}, sums {texts}, {client.writes - before} write(s)")

    async with Client(url) as client:
        # Hand-built messages keep their own ids; a failing entry fails alone.
        answers = await client.call_batch(
            [
                {"jsonrpc": "2.0", "id": "x", "method": "tools/call",
                 "params": {"name": "add", "arguments": {"a": 1, "b": 2}}},
                {"jsonrpc": "2.0", "id": "y", "method": "no/such/method"},
            ]
        )  # fmt: skip
        for answer in answers:
            print(answer.id, "ok" if answer.ok else f"error {answer.error.code}")  # type: ignore[union-attr]


asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000/mcp"))
