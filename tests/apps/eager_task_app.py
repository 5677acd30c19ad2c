"""An app for tests/parity/test_native_eager_task.py: tools whose calls the native engine
finishes in an eager task (an async tool's coroutine, a value Python shapes, an exception),
each written to show a difference from Granian's task if there were one."""

from __future__ import annotations

import asyncio
import contextvars

from pydantic import BaseModel

from jetmcp.errors import McpError
from jetmcp.server import Server

app = Server("eager-test")

#: Set by ``leaks``: a request that saw another's value would say so.
SEEN: contextvars.ContextVar[str] = contextvars.ContextVar("seen", default="unset")


class Point(BaseModel):
    x: float
    y: float


@app.tool()
async def at_once(a: int, b: int) -> int:
    return a + b


@app.tool()
async def scale(point: Point, factor: float) -> Point:
    return Point(x=point.x * factor, y=point.y * factor)


@app.tool()
async def suspends(a: int) -> int:
    await asyncio.sleep(0)
    await asyncio.sleep(0.001)
    return a * 2


@app.tool()
async def in_task() -> str:
    """asyncio.timeout refuses to run outside a task; current_task names it."""
    async with asyncio.timeout(5):  # noqa: ASYNC100 (no await: the first step is the test)
        task = asyncio.current_task()
    return str(task is not None and not task.done())


@app.tool()
async def leaks(value: str) -> str:
    """What an earlier request left in the context, then leave ``value`` there."""
    before = SEEN.get()
    SEEN.set(value)
    return before


@app.tool()
async def refuses() -> int:
    raise McpError(-32042, "no")


@app.tool()
async def breaks() -> int:
    raise RuntimeError("boom")


@app.tool(timeout=0.05)
async def timed() -> int:
    await asyncio.sleep(5)
    return 1


@app.tool()
async def slow() -> int:
    """Past the server's --request-timeout-seconds (the test sets 0.3)."""
    await asyncio.sleep(5)
    return 1


@app.tool()
def shaped(n: int) -> dict[str, list[int]]:
    """A synchronous tool whose value Python shapes."""
    return {"n": list(range(n))}


@app.tool()
def raises(n: int) -> int:
    raise ValueError(f"bad {n}")
