"""The adapter of SDK 2.x servers (``jetmcp.compat``): which tools are lifted to jetmcp's
fast path, and that a lifted tool answers exactly as the SDK's own path does (the same
calls made with lifting off, ``JETMCP_COMPAT_NATIVE=0``), in process (``Client(server)``).
The corpus in tests/compat/dropin holds the adapter to the SDK's own transports."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent

from harness.inprocess import async_test
from harness.servers import jetmcp_command
from jetmcp import Client, McpError
from jetmcp.compat import adapt, kind_of
from jetmcp.compat.base import NATIVE_ENV


def _sdk_server() -> MCPServer:
    mcp = MCPServer("lifting")

    @mcp.tool()
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @mcp.tool()
    def echo(text: str, loud: bool = False) -> str:
        return text.upper() if loud else text

    @mcp.tool()
    def untyped(n: int):  # type: ignore[no-untyped-def]
        return {"n": n, "items": [n, n + 1]}

    @mcp.tool()
    def wrong(n: int) -> int:
        return "not an int"  # type: ignore[return-value]

    @mcp.tool()
    def refuse(n: int) -> str:
        raise ToolError(f"cannot do {n}")

    @mcp.tool()
    def crash(n: int) -> str:
        raise RuntimeError("a secret")

    @mcp.tool()
    def protocol(n: int) -> str:
        raise MCPError(code=-32050, message="no", data={"n": n})

    @mcp.tool()
    def whole(n: int):  # type: ignore[no-untyped-def]
        return CallToolResult(content=[TextContent(type="text", text="x")], is_error=True)

    @mcp.tool()
    async def not_plain(n: int, ctx: Context) -> int:
        return n

    @mcp.tool()
    def listing(items: list[int]) -> int:
        return len(items)

    return mcp


def test_plain_tools_are_lifted() -> None:
    server = adapt(_sdk_server())
    assert kind_of(_sdk_server()) == "mcp2"
    plain = [name for name in server.routes.names() if not server.routes[name].python_call]
    assert plain == ["add", "crash", "echo", "protocol", "refuse", "untyped", "whole", "wrong"]
    # A lifted tool with other arguments is planned by the extension, called by Python.
    assert server.routes["listing"].python_call
    assert "not_plain" not in server.routes  # the SDK's own Context: the SDK serves it


def test_a_server_with_middleware_of_its_own_keeps_its_tools_on_the_sdk_path() -> None:
    # A lifted call would skip the chain: the server's own middleware must see every call.
    async def middleware(ctx: Any, call_next: Any) -> Any:
        return await call_next(ctx)

    appended = _sdk_server()
    appended.middleware.append(middleware)
    given = MCPServer("given", middleware=[middleware])
    given.tool()(_plain_add)
    for sdk in (appended, given):
        assert list(adapt(sdk).routes.names()) == []
    # The SDK's built-ins alone (OpenTelemetry, the request-state boundary) do not stop it.
    plain = MCPServer("plain")
    plain.tool()(_plain_add)
    assert list(adapt(plain).routes.names()) == ["_plain_add"]


MIDDLEWARE_FILE = """
import sys

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("watched")


async def watch(ctx, call_next):
    print("middleware saw", ctx.method, file=sys.stderr, flush=True)
    return await call_next(ctx)


mcp.middleware.append(watch)


@mcp.tool()
def add(a: int, b: int) -> int:
    return a + b
"""


def test_middleware_sees_plain_tool_calls_under_jetmcp_run(tmp_path: Path) -> None:
    (tmp_path / "watched.py").write_text(MIDDLEWARE_FILE)
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 2}},
        },
    ]
    done = subprocess.run(
        [*jetmcp_command(), "run", "watched.py", "--transport", "stdio"],
        input="".join(json.dumps(line) + "\n" for line in lines).encode(),
        capture_output=True,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    replies = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert replies[-1]["result"]["content"] == [{"type": "text", "text": "3"}]
    assert "middleware saw tools/call" in done.stderr.decode()


def _plain_add(a: int, b: int) -> int:
    return a + b


def test_string_annotations_are_resolved() -> None:
    # A module with `from __future__ import annotations` (this one) gives "int", not int.
    server = adapt(_sdk_server())
    assert "add" in server.routes.names()


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("add", {"a": 1, "b": 2}),
    ("add", {"a": "1", "b": 2}),  # coerced by the SDK (not exact: not on the fast path)
    ("add", {"a": "x", "b": 2}),  # refused by the SDK
    ("add", {"a": 1}),
    ("echo", {"text": "hi"}),
    ("echo", {"text": "hi", "loud": True}),
    ("untyped", {"n": 3}),
    ("wrong", {"n": 3}),
    ("refuse", {"n": 3}),
    ("crash", {"n": 3}),
    ("whole", {"n": 3}),
    ("listing", {"items": [1, 2]}),
    ("nope", {}),
]


async def _answers(sdk: MCPServer, revision: str) -> list[Any]:
    out: list[Any] = []
    async with Client(sdk, revision=revision) as client:
        for name, args in CALLS:
            result = await client.call_tool(name, args)
            out.append(result.model_dump(by_alias=True, exclude_none=True))
        with pytest.raises(McpError) as raised:
            await client.call_tool("protocol", {"n": 1})
        out.append((raised.value.code, raised.value.message, raised.value.data))
    return out


# (Before 2025-06-18 the fast path leaves out structuredContent, which those revisions do not
# define; the SDK sends it anyway: docs/migration.md, differences.)
@pytest.mark.parametrize("revision", ["2025-06-18", "2025-11-25"])
def test_lifted_tools_answer_as_the_sdk_does(
    revision: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    @async_test
    async def run() -> tuple[list[Any], list[Any]]:
        lifted = await _answers(_sdk_server(), revision)
        monkeypatch.setenv(NATIVE_ENV, "0")
        assert adapt(_sdk_server()).routes.names() == []
        through_sdk = await _answers(_sdk_server(), revision)
        return lifted, through_sdk

    lifted, through_sdk = run()
    assert lifted == through_sdk
    # And the answers are the SDK's texts, not jetmcp's.
    crash = lifted[[name for name, _ in CALLS].index("crash")]
    assert crash["content"][0]["text"] == "Error executing tool crash"
    assert lifted[-1] == (-32050, "no", {"n": 1})


def test_completion_handlers_get_the_sdk_types() -> None:
    import mcp.types as sdk

    from jetmcp.server import completion

    seen: list[Any] = []

    def handler(ref: Any, argument: Any, context: Any) -> list[str]:
        seen.append((ref, argument, context))
        return ["x"]

    result = completion.complete(
        handler,
        completion.PromptReference("greet"),
        completion.CompletionArgument("name", "a"),
        completion.CompletionContext({"k": "v"}),
    )
    assert result == {"completion": {"values": ["x"]}}
    ref, argument, context = seen[0]
    # The SDK's own classes, as a handler written for the SDK checks them...
    assert isinstance(ref, sdk.PromptReference) and ref.name == "greet"
    assert isinstance(argument, sdk.CompletionArgument) and argument.value == "a"
    assert isinstance(context, sdk.CompletionContext) and context.arguments == {"k": "v"}
    # ...and still jetmcp's, for handlers written for jetmcp.
    assert isinstance(ref, completion.PromptReference)
    assert not isinstance(ref, completion.ResourceTemplateReference)
    assert ref == completion.PromptReference("greet")
    assert completion.PromptReference("greet") == ref
    assert argument == completion.CompletionArgument("name", "a")
