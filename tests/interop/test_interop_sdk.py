"""The official MCP Python SDK (``mcp``) as a client of jetmcp, over Streamable HTTP and stdio.

The SDK's default ``mode="auto"`` probes ``server/discover`` at 2026-07-28 first and falls back
to ``initialize`` on a legacy server. jetmcp serves 2026-07-28, so ``auto`` stays stateless
(no handshake, no session); ``mode="legacy"`` takes the 2025-11-25 handshake.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from harness.servers import jetmcp_command

#: Bounds every SDK conversation so a stuck exchange fails instead of hanging the suite.
CONVERSATION_TIMEOUT = 20.0
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
#: What each client mode settles on with jetmcp.
NEGOTIATED = {"auto": MODERN, "legacy": LEGACY}


def run(main: Callable[[], Awaitable[None]]) -> None:
    async def bounded() -> None:
        with anyio.fail_after(CONVERSATION_TIMEOUT):
            await main()

    anyio.run(bounded)


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def exercise(client: Client, version: str) -> None:
    """What every transport must carry: list, call, read."""
    assert client.protocol_version == version
    assert client.server_info is not None and client.server_info.name

    tools = await client.list_tools()
    names = {t.name for t in tools.tools}
    assert {"add", "echo", "sleep", "fail"} <= names

    added = await client.call_tool("add", {"a": 1, "b": 2})
    assert not added.is_error
    assert text_of(added) == "3"
    assert added.structured_content == {"result": 3}

    echoed = await client.call_tool("echo", {"text": "h\u00e9llo"})
    assert not echoed.is_error
    assert "h\u00e9llo" in text_of(echoed)

    failed = await client.call_tool("fail", {})
    assert failed.is_error

    readme = await client.read_resource("demo://readme")
    assert str(readme.contents[0].uri) == "demo://readme"
    assert getattr(readme.contents[0], "text", "")

    item = await client.read_resource("demo://items/42")
    assert "42" in getattr(item.contents[0], "text", "")

    prompt = await client.get_prompt("greet", {"name": "Ada"})
    assert getattr(prompt.messages[0].content, "text", "") == "Hello, Ada!"

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        if version == MODERN:
            # 2026-07-28 removed ping: an unknown method there.
            with pytest.raises(MCPError) as refused:
                await client.send_ping()
            assert refused.value.error.code == -32601
        else:
            await client.send_ping()


class Recorder:
    """Notes every HTTP exchange the SDK makes: (method, request body, status)."""

    def __init__(self) -> None:
        self.exchanges: list[tuple[str, Any, int]] = []

    async def on_response(self, response: httpx2.Response) -> None:
        req = response.request
        body: Any = None
        if req.method == "POST":
            try:
                body = json.loads(req.content)
            except ValueError:
                body = req.content
        self.exchanges.append((req.method, body, response.status_code))

    def http_client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(
            timeout=httpx2.Timeout(10.0),
            event_hooks={"response": [self.on_response]},
        )

    def posted_methods(self) -> list[str]:
        return [b.get("method", "<response>") for m, b, _ in self.exchanges if m == "POST"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_sdk_client_over_streamable_http(http_url: str, mode: str) -> None:
    recorder = Recorder()

    async def main() -> None:
        async with recorder.http_client() as http:
            transport = streamable_http_client(http_url, http_client=http)
            async with Client(transport, mode=mode) as client:
                await exercise(client, NEGOTIATED[mode])

    run(main)
    methods = recorder.posted_methods()
    if mode == "auto":
        # The 2026-07-28 probe is answered, so the SDK stays stateless: no handshake, no
        # session, no GET stream, no DELETE; every POST served (but the removed ping).
        assert methods[0] == "server/discover", methods
        assert "initialize" not in methods, methods
        for method, body, status in recorder.exchanges:
            assert method == "POST", recorder.exchanges
            expected = 404 if body.get("method") == "ping" else 200
            assert status == expected, (body, status)
        return
    assert "initialize" in methods, recorder.exchanges
    init = next(e for e in recorder.exchanges if e[1] and e[1].get("method") == "initialize")
    assert init[2] == 200
    # Every POST after initialize succeeded (no 4xx/5xx), and the session ended with DELETE.
    after = recorder.exchanges[recorder.exchanges.index(init) :]
    for method, body, status in after:
        if method == "POST":
            assert status in (200, 202), (body, status)
        elif method == "GET":
            # The session's standalone SSE stream (the SDK opens it after initialize).
            assert status == 200, status
    deletes = [status for method, _, status in recorder.exchanges if method == "DELETE"]
    assert deletes == [204], recorder.exchanges


def test_sdk_client_over_streamable_http_by_url(http_url: str) -> None:
    async def main() -> None:
        async with Client(http_url) as client:
            await exercise(client, MODERN)

    run(main)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_sdk_client_over_stdio(mode: str) -> None:
    command, *prefix = jetmcp_command()
    params = StdioServerParameters(
        command=command,
        args=[*prefix, "run", "jetmcp.demo:app", "--transport", "stdio"],
    )

    async def main() -> None:
        async with Client(params, mode=mode) as client:
            await exercise(client, NEGOTIATED[mode])

    run(main)


def test_jetmcp_command_is_this_environment() -> None:
    command = jetmcp_command()
    assert command[0].startswith(sys.prefix) or command[0] == sys.executable, command
