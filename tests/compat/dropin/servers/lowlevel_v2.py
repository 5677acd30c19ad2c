"""A console script on the mcp 2.x low-level ``Server``: built in ``main()``, run with
``InitializationOptions`` carrying instructions the ``Server`` itself was not given, and no
``logging/setLevel`` handler (the SDK answers that method -32601)."""

from __future__ import annotations

import anyio
import mcp.types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

INSTRUCTIONS = "Call add with two integers; it answers their sum."


async def list_tools(
    ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(
        tools=[
            types.Tool(
                name="add",
                description="Add two integers.",
                input_schema={
                    "type": "object",
                    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                    "required": ["a", "b"],
                },
            )
        ]
    )


async def call_tool(
    ctx: ServerRequestContext, params: types.CallToolRequestParams
) -> types.CallToolResult:
    args = params.arguments or {}
    if params.name != "add":
        raise ValueError(f"Unknown tool: {params.name}")
    total = int(args.get("a", 0)) + int(args.get("b", 0))
    return types.CallToolResult(content=[types.TextContent(type="text", text=str(total))])


async def serve() -> None:
    server = Server(
        "lowlevel-instructions-v2",
        version="1.0.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    options = server.create_initialization_options().model_copy(
        update={"instructions": INSTRUCTIONS}
    )
    async with stdio_server() as (read, write):
        await server.run(read, write, options)


def main() -> None:
    anyio.run(serve)
