"""The app of tests/state/test_redis_state.py: the streaming app's tools (messages to the session's
standalone stream, requests to the client, early close) plus tools that change the tool list,
announce a resource update, wait to be cancelled, and run as tasks, so that each can be
started on one host and observed on another."""

from __future__ import annotations

import asyncio

from tests.apps.streaming_app import app

from jetmcp.server import Context

#: What was cancelled on this process, by tag (read with ``was_cancelled``).
_cancelled: set[str] = set()


@app.tool()
def add(a: int, b: int) -> int:
    """a + b (a plain tool: the extension answers it)"""
    return a + b


@app.tool()
def change_tools() -> str:
    """Add (or replace) the tool ``extra``: every session and listen stream hears of it"""
    app.add_tool(lambda: "extra", name="extra", description="Added by change_tools")
    return "changed"


@app.tool()
async def touch(uri: str) -> str:
    """Announce that resource ``uri`` changed"""
    await app.notify_resource_updated(uri)
    return "touched"


@app.resource("test://watched", name="watched", mime_type="text/plain")
def watched() -> str:
    """A resource clients subscribe to"""
    return "watched"


@app.tool(task_support="optional")
async def wait_cancel(tag: str, seconds: float = 20.0) -> str:
    """Wait until cancelled (remembered by ``tag``) or ``seconds`` pass"""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        _cancelled.add(tag)
        raise
    return "not cancelled"


@app.tool()
def was_cancelled(tag: str) -> bool:
    """Whether ``wait_cancel(tag)`` was cancelled on this process"""
    return tag in _cancelled


@app.tool(task_support="optional")
async def slow_task(text: str, ms: int = 0) -> str:
    """Answer ``text`` after ``ms`` milliseconds (may run as a task)"""
    await asyncio.sleep(ms / 1000)
    return text


@app.tool(task_support="optional")
async def task_asks(ctx: Context, ms: int = 0) -> str:
    """After ``ms`` milliseconds, ask the client for a name (as a task: input_required
    meanwhile)"""
    await asyncio.sleep(ms / 1000)
    answer = await ctx.elicit(
        "Your name?", {"type": "object", "properties": {"name": {"type": "string"}}}
    )
    return f"{answer.action}:{getattr(answer, 'data', None)}"


NAME = {"type": "object", "properties": {"name": {"type": "string"}}}


@app.tool(task_support="required")
async def task_asks_twice(ctx: Context) -> str:
    """Two questions at once ("first", "second"), then a third: a task's inputRequests as
    they are answered"""
    one, two = await ctx.gather(
        ctx.elicit("First?", NAME, key="first"), ctx.elicit("Second?", NAME, key="second")
    )
    again = await ctx.elicit("Third?", NAME, key="third")
    names = [getattr(answer, "data", {}).get("name") for answer in (one, two, again)]
    return ",".join(str(name) for name in names)


__all__ = ["app"]
