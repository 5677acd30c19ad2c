"""FastMCP (``fastmcp`` 4.x) serving ``add`` for the load benchmark.

Run with the peers venv (``bench/.peers/py``), never with the project's venv::

    python fastmcp_server.py http --port 8002     # stateless, JSON replies, uvicorn
    python fastmcp_server.py http --as-installed  # asyncio + h11, default logging
    python fastmcp_server.py stdio
    python fastmcp_server.py http --bench-tools   # + scale and add_log (request shapes)
    python fastmcp_server.py http --stateful      # sessions (initialize first), JSON replies
"""

from __future__ import annotations

import argparse
import os
import sys

#: As `pip install fastmcp` leaves it: default log levels, uvicorn's access log.
AS_INSTALLED = "--as-installed" in sys.argv
if not AS_INSTALLED:
    # Quiet logs, as the mcp SDK peer: set before fastmcp reads its settings.
    os.environ.setdefault("FASTMCP_LOG_LEVEL", "WARNING")
os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")

from fastmcp import Context, FastMCP  # noqa: E402 (after the environment it reads)
from pydantic import BaseModel  # noqa: E402

app = FastMCP("bench-fastmcp")


@app.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
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


#: The tools of the request-shape workloads (as in jetmcp_server.py and mcp_sdk_server.py),
#: only with --bench-tools: the `list` workload keeps its reply.
if "--bench-tools" in sys.argv:
    app.tool(scale)
    app.tool(add_log)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["http", "stdio"])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument(
        "--as-installed",
        action="store_true",
        help="as `pip install fastmcp` gives it: uvicorn on asyncio + h11, default logging",
    )
    parser.add_argument("--port", type=int, default=8002)
    parser.add_argument("--bench-tools", action="store_true", help="also serve scale, add_log")
    parser.add_argument(
        "--stateful", action="store_true", help="sessions: initialize first (default stateless)"
    )
    args = parser.parse_args()
    if args.transport == "stdio":
        app.run(transport="stdio", show_banner=False, log_level="WARNING")
        return
    import uvicorn

    # http_app() is FastMCP's documented ASGI entry; run() wraps the same app in uvicorn.
    asgi = app.http_app(stateless_http=not args.stateful, json_response=True)
    if args.as_installed:
        # What `pip install fastmcp` gives: plain uvicorn (asyncio loop, h11) with its
        # default logging (INFO, access log on), FastMCP's default log level.
        uvicorn.run(asgi, host=args.host, port=args.port, loop="asyncio", http="h11", lifespan="on")
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
        lifespan="on",
    )


if __name__ == "__main__":
    main()
