"""The app the HTTP streaming tests drive (tests/transports/http/test_http_streaming.py,
tests/transports/http/test_sse_legacy.py): tools that stream before their result, one that ends its
stream early, one that talks to the session's standalone stream, and one that reports the
server's stream bookkeeping so the tests can see nothing leaks."""

from __future__ import annotations

import asyncio
from typing import Any

from jetmcp._wire import encode_notification
from jetmcp.server import Context, Server

app = Server("jetmcp-streaming-tests", version="0.1.0")


@app.tool()
async def progress(ctx: Context, steps: int = 3, ms: int = 0) -> str:
    """Report progress ``steps`` times, ``ms`` apart, then answer"""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
        if ms:
            await asyncio.sleep(ms / 1000)
    return f"done {steps}"


@app.tool()
async def logs(ctx: Context, count: int = 2) -> str:
    """Send ``count`` log lines, then answer"""
    for i in range(count):
        await ctx.info(f"line {i}")
    return f"logged {count}"


@app.tool()
async def quiet(ms: int = 0) -> str:
    """Wait ``ms`` milliseconds, sending nothing, then answer"""
    await asyncio.sleep(ms / 1000)
    return "quiet"


@app.tool()
async def reconnect(ctx: Context, ms: int = 200, retry_ms: int = 50) -> str:
    """Log, end this request's SSE stream early, wait, log again, answer"""
    await ctx.info("Before disconnect")
    close = getattr(ctx.call.sink, "close_stream", None)
    if close is not None:
        await close(retry_ms)
    await asyncio.sleep(ms / 1000)
    await ctx.info("After reconnect")
    return "Reconnection test completed"


@app.tool()
async def outbound(ctx: Context, text: str, count: int = 1) -> str:
    """Send ``count`` log notifications to the session's standalone stream"""
    session = ctx.call.session
    assert session is not None, "outbound needs a session"
    for i in range(count):
        message = encode_notification(
            "notifications/message", {"level": "info", "data": f"{text} {i}"}
        )
        await session.outbound.send(message)
    return f"sent {count}"


@app.tool()
async def close_standalone(ctx: Context, retry_ms: int = 50) -> str:
    """Close the session's GET streams (SSE polling for the standalone stream)"""
    session = ctx.call.session
    close = getattr(session.outbound, "close_stream", None) if session is not None else None
    if close is None:
        return "no stream"
    await close(retry_ms)
    return "closed"


@app.tool()
async def ask_roots(ctx: Context) -> Any:
    """Ask the client for its roots (a server-to-client request) and return its answer"""
    return await ctx.call.request("roots/list", {}, timeout=5.0)


@app.tool()
async def ask_elicit(ctx: Context) -> str:
    """Ask the client for a name (elicitation) and return what it answered"""
    answer = await ctx.elicit(
        "Your name?", {"type": "object", "properties": {"name": {"type": "string"}}}
    )
    return f"{answer.action}:{getattr(answer, 'data', None)}"


@app.tool()
async def ask_sample(ctx: Context) -> str:
    """Ask the client's model for a word (sampling) and return its text"""
    reply = await ctx.sample("Say a word", max_tokens=5)
    return f"sampled:{reply.text}"


@app.tool()
def stats(ctx: Context) -> dict[str, int]:
    """The session's stream bookkeeping and the number of asyncio tasks"""
    session = ctx.call.session
    outbound = session.outbound if session is not None else None
    counts: dict[str, int] = {"tasks": len(asyncio.all_tasks())}
    if outbound is not None and hasattr(outbound, "stats"):
        counts.update(outbound.stats())
    return counts


__all__ = ["app"]
