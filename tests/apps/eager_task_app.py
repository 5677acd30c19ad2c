"""An app for tests/parity/test_native_eager_task.py: tools whose calls the native engine
finishes in an eager task (an async tool's coroutine, a value Python shapes, an exception),
each written to show a difference from Granian's task if there were one."""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

from pydantic import BaseModel, Field

from jetmcp.errors import McpError
from jetmcp.server import Context, Server

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
async def same_task() -> str:
    """The task of the first step is the one that runs the rest."""
    first = asyncio.current_task()
    await asyncio.sleep(0)
    return str(first is asyncio.current_task())


@app.tool()
async def listed() -> str:
    """The running task is among all tasks in its first step, and after it."""
    before = asyncio.current_task() in asyncio.all_tasks()
    await asyncio.sleep(0)
    return f"{before} {asyncio.current_task() in asyncio.all_tasks()}"


@app.tool()
async def times_out() -> str:
    """A deadline entered in the first step fires while the task waits."""
    try:
        async with asyncio.timeout(0.01):
            await asyncio.sleep(5)
    except TimeoutError:
        return "timed out"
    return "not timed out"


@app.tool()
async def fails_later() -> int:
    await asyncio.sleep(0)
    raise RuntimeError("later boom")


@app.tool()
async def cancels_itself() -> int:
    raise asyncio.CancelledError


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


class Named(BaseModel):
    model_config = {"populate_by_name": True}
    full_name: str = Field(alias="fullName")


class Point3(Point):
    z: float = 0.0


@app.tool()
async def values(kind: str) -> Any:
    """A value of each kind the extension writes itself, or leaves to Python."""
    table: dict[str, Any] = {
        "dict": {"a": [1, 2.5, None]},
        "list": [1, "two", {"three": 3}],
        "none": None,
        "str": "text",
        "bool": True,
        "float": 2.5,
        "bigint": 10**30,
        "model": Point(x=1, y=2),
        "subclass": Point3(x=1, y=2, z=3),
    }
    return table[kind]


@app.tool()
async def alias() -> Named:
    return Named(full_name="Ada")


@app.tool()
async def typed_dict() -> dict[str, int]:
    return {"a": 1}


@app.tool()
async def wrong_model() -> Point:
    """A value that does not match the declared output."""
    return Named(full_name="x")  # type: ignore[return-value]


@app.tool()
async def ctx_log(a: int, ctx: Context) -> int:
    """A Context tool (the extension's plans): it logs, then answers."""
    await ctx.info("adding")
    return a + 1


@app.tool()
async def ctx_in_task(ctx: Context) -> str:
    async with asyncio.timeout(5):
        await ctx.debug("checking")
        await asyncio.sleep(0.001)
    return str(asyncio.current_task() is not None)


@app.tool()
async def ctx_fails(ctx: Context) -> int:
    await ctx.info("about to fail")
    raise RuntimeError("context boom")
