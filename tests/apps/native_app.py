"""An app for tests/test_native_connection.py: async tools that count on running inside an
asyncio task (as they do under Granian), reached through the native engine's usual lane."""

from __future__ import annotations

import asyncio

from jetmcp.server import Context, Server

app = Server("native-test")


@app.tool()
async def in_task() -> str:
    """Whether the tool runs in a task; asyncio.timeout refuses to run outside one."""
    async with asyncio.timeout(5):
        await asyncio.sleep(0)
    return str(asyncio.current_task() is not None)


@app.tool()
async def in_task_ctx(ctx: Context) -> str:
    """The same with a Context (the lazily made exchange)."""
    async with asyncio.timeout(5):
        await ctx.info("checking")
    return str(asyncio.current_task() is not None)


@app.tool()
def add(a: int, b: int) -> int:
    return a + b
