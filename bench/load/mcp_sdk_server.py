"""The official MCP Python SDK (2.x ``MCPServer``) serving ``add`` for the load benchmark.

Run with the peers venv (``bench/.peers/py``), never with the project's venv::

    python mcp_sdk_server.py http --port 8001     # stateless, JSON replies, uvicorn
    python mcp_sdk_server.py http --as-installed  # the same on asyncio + h11
    python mcp_sdk_server.py stdio
"""

from __future__ import annotations

import argparse

from mcp.server.mcpserver import MCPServer

# WARNING: the default INFO level logs a line per stateless request, which no one benchmarks.
app = MCPServer("bench-mcp-sdk", log_level="WARNING")


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["http", "stdio"])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument(
        "--as-installed",
        action="store_true",
        help="uvicorn on asyncio + h11, what `pip install` of the package alone gives",
    )
    parser.add_argument("--port", type=int, default=8001)
    args = parser.parse_args()
    if args.transport == "stdio":
        app.run("stdio")
        return
    import uvicorn

    # streamable_http_app() is the documented way to mount the server on an ASGI server. The
    # "tuned" row gives uvicorn its fastest loop/parser (uvloop + httptools, which only
    # uvicorn[standard] installs); --as-installed uses what `pip install mcp` gives (asyncio +
    # h11). No access log either way.
    asgi = app.streamable_http_app(stateless_http=True, json_response=True, host=args.host)
    uvicorn.run(
        asgi,
        host=args.host,
        port=args.port,
        loop="asyncio" if args.as_installed else "uvloop",
        http="h11" if args.as_installed else "httptools",
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
