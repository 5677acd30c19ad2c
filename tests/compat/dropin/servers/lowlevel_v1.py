"""A console script on the mcp 1.x low-level ``Server``, as published servers write them: the
server is built in ``main()`` and run with ``InitializationOptions`` carrying instructions
the ``Server`` itself was not given, and it registers no ``logging/setLevel`` handler (the
SDK answers that method -32601)."""

from __future__ import annotations

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

INSTRUCTIONS = "Call add with two integers; it answers their sum."


def build() -> Server:
    server: Server = Server("lowlevel-instructions-v1", version="1.0.0")

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return [
            types.Tool(
                name="add",
                description="Add two integers.",
                inputSchema={
                    "type": "object",
                    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                    "required": ["a", "b"],
                },
            )
        ]

    @server.call_tool()
    async def call_tool(name: str, arguments: dict[str, int]) -> list[types.TextContent]:
        if name != "add":
            raise ValueError(f"Unknown tool: {name}")
        return [types.TextContent(type="text", text=str(arguments["a"] + arguments["b"]))]

    return server


async def serve() -> None:
    server = build()
    options = server.create_initialization_options().model_copy(
        update={"instructions": INSTRUCTIONS}
    )
    async with stdio_server() as (read, write):
        await server.run(read, write, options)


def main() -> None:
    anyio.run(serve)
