"""``jetmcp.Client(server)``: a server object in the same process, no sockets, no child
process, at every revision; with the server's lifespan, its requests to the client, and
servers written for the official SDK (adapted)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from harness.inprocess import async_test
from jetmcp import Client, Context, Server
from jetmcp.client import CreateMessageRequestParams, CreateMessageResult
from jetmcp.protocol.revisions import R2026_07_28, REVISIONS

VERSIONS = [r.version for r in (*REVISIONS, R2026_07_28)]


def _server(events: list[str]) -> Server:
    @asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[dict[str, Any]]:
        events.append("start")
        yield {"answer": 42}
        events.append("stop")

    server = Server("memory", lifespan=lifespan)

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool()
    async def lifespan_value(ctx: Context) -> int:
        return int(ctx.lifespan["answer"])

    @server.tool()
    async def ask(ctx: Context) -> str:
        sampled = await ctx.sample("hello")
        return sampled.text

    return server


@pytest.fixture
def no_sockets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any socket opened during the test fails it."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the in-memory client opened a socket")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "bind", refuse)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_revision_in_memory(version: str, no_sockets: None) -> None:
    events: list[str] = []

    async def sample(params: CreateMessageRequestParams) -> CreateMessageResult:
        return CreateMessageResult(content={"type": "text", "text": "sampled"}, model="m")

    @async_test
    async def run() -> None:
        async with Client(_server(events), revision=version, sampling_handler=sample) as client:
            assert events == ["start"]
            names = [t.name for t in (await client.list_tools()).tools]
            assert names == ["add", "lifespan_value", "ask"]
            assert (await client.call_tool("add", {"a": 2, "b": 3})).structured_content in (
                {"result": 5},
                None,  # 2024-11-05 and 2025-03-26 have no structured content
            )
            assert (await client.call_tool("add", {"a": 2, "b": 3})).text == "5"
            assert (await client.call_tool("lifespan_value", {})).text == "42"
            # Server-to-client requests (MRTR rounds on 2026-07-28) work in memory too.
            assert (await client.call_tool("ask", {})).text == "sampled"
        assert events == ["start", "stop"]

    run()


def test_concurrent_calls_in_memory(no_sockets: None) -> None:
    @async_test
    async def run() -> None:
        async with Client(_server([])) as client:
            results = await asyncio.gather(
                *(client.call_tool("add", {"a": i, "b": i}) for i in range(50))
            )
            assert [r.text for r in results] == [str(2 * i) for i in range(50)]

    run()


def test_an_sdk_server_in_memory(no_sockets: None) -> None:
    from mcp.server.mcpserver import MCPServer

    sdk = MCPServer("sdk")

    @sdk.tool()
    def shout(text: str) -> str:
        """Say it louder."""
        return text.upper()

    @async_test
    async def run() -> None:
        async with Client(sdk) as client:
            tools = (await client.list_tools()).tools
            assert [(t.name, t.description) for t in tools] == [("shout", "Say it louder.")]
            assert (await client.call_tool("shout", {"text": "hi"})).text == "HI"

    run()
