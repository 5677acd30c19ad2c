"""The official MCP Python SDK (2.x ``MCPServer``) serving ``add`` for the load benchmark.

Run with the peers venv (``bench/.peers/py``), never with the project's venv::

    python mcp_sdk_server.py http --port 8001     # stateless, JSON replies, uvicorn
    python mcp_sdk_server.py http --as-installed  # asyncio + h11, default logging
    python mcp_sdk_server.py stdio
    python mcp_sdk_server.py http --bench-tools   # + scale and add_log (request shapes)
    python mcp_sdk_server.py http --stateful      # sessions (initialize first), JSON replies

The same file, unchanged, is served by jetmcp for the drop-in rows
(``jetmcp run bench/load/mcp_sdk_server.py:app``): ``add`` then runs on jetmcp's fast path,
``add_ctx`` through the SDK's own objects.
"""

from __future__ import annotations

import argparse
import sys

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

#: As `pip install mcp` leaves it: the SDK's default log level (INFO, a line per stateless
#: request) and uvicorn's default logging. The tuned row logs at WARNING.
AS_INSTALLED = "--as-installed" in sys.argv
app = (
    MCPServer("bench-mcp-sdk") if AS_INSTALLED else MCPServer("bench-mcp-sdk", log_level="WARNING")
)


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@app.tool()
async def add_ctx(a: int, b: int, ctx: Context) -> int:
    """Add two integers, from a tool that takes the request's Context."""
    if not ctx.request_id:
        raise RuntimeError("no request id")
    return a + b


class Point(BaseModel):
    x: float
    y: float


async def scale(point: Point, factor: float) -> Point:
    """Scale a point by a factor."""
    return Point(x=point.x * factor, y=point.y * factor)


async def add_log(a: int, b: int, ctx: Context) -> int:
    """Add two integers, logging through the request's Context."""
    await ctx.info("adding")
    return a + b


#: The tools of the request-shape workloads (as in jetmcp_server.py and fastmcp_server.py),
#: only with --bench-tools: the `list` workload keeps its reply.
if "--bench-tools" in sys.argv:
    app.tool()(scale)
    app.tool()(add_log)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["http", "stdio"])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument(
        "--as-installed",
        action="store_true",
        help="as `pip install mcp` gives it: uvicorn on asyncio + h11, default logging",
    )
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--bench-tools", action="store_true", help="also serve scale, add_log")
    parser.add_argument(
        "--stateful", action="store_true", help="sessions: initialize first (default stateless)"
    )
    args = parser.parse_args()
    if args.transport == "stdio":
        app.run("stdio")
        return
    import uvicorn

    # streamable_http_app() is the documented way to mount the server on an ASGI server.
    asgi = app.streamable_http_app(
        stateless_http=not args.stateful, json_response=True, host=args.host
    )
    if args.as_installed:
        # What `pip install mcp` gives: plain uvicorn (asyncio loop, h11; uvloop and
        # httptools come only with uvicorn[standard]) with its default logging.
        uvicorn.run(asgi, host=args.host, port=args.port, loop="asyncio", http="h11")
        return
    # Tuned: uvicorn's fastest loop/parser (uvloop + httptools), logs at WARNING, no access log.
    uvicorn.run(
        asgi,
        host=args.host,
        port=args.port,
        loop="uvloop",
        http="httptools",
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
