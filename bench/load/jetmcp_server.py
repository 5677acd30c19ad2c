"""The jetmcp app of the request-shape workloads (``call-0618`` ... ``session``).

    jetmcp run bench/load/jetmcp_server.py:app --transport http --workers 1 --stateless

The tools are written exactly as in ``mcp_sdk_server.py`` and ``fastmcp_server.py`` (their
``--bench-tools`` set): ``add``, ``scale`` (a pydantic model in and out, so it has an
``outputSchema`` and answers ``structuredContent``) and ``add_log`` (logs through the
``Context``, then adds). The ``call``/``list`` workloads keep serving ``jetmcp.demo:app``.
"""

from __future__ import annotations

from pydantic import BaseModel

from jetmcp.server import Context, Server

app = Server("jetmcp-bench", version="0.1.0")


class Point(BaseModel):
    x: float
    y: float


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@app.tool()
async def scale(point: Point, factor: float) -> Point:
    """Scale a point by a factor."""
    return Point(x=point.x * factor, y=point.y * factor)


@app.tool()
async def add_log(a: int, b: int, ctx: Context) -> int:
    """Add two integers, logging through the request's Context."""
    await ctx.info("adding")
    return a + b


__all__ = ["app"]
