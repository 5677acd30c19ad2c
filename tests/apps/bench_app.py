"""The server the ``jetmcp bench`` tests load: a plain tool, one that fails (``isError``),
and one that sleeps."""

from __future__ import annotations

import asyncio

from jetmcp import Server

app = Server("bench-tests")


@app.tool()
def add(a: int, b: int) -> int:
    return a + b


@app.tool()
def fail(reason: str) -> str:
    raise ValueError(reason)


@app.tool()
async def nap(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "awake"
