"""Servers published on PyPI, on their own SDK, for the drop-in rows of the load benchmark.

Two packages, each served over HTTP the way its SDK documents it, as ``pip install`` leaves
it (``--as-installed``: asyncio loop, h11, default logging) or tuned. Nothing of either
package is changed.

- ``mcp-server-time`` (``bodies.PUBLISHED_PACKAGE``) builds an official SDK 2.x
  ``MCPServer`` in ``create_server(local_tz)``; served with
  ``streamable_http_app(stateless_http=True, json_response=True)``. Run with the peers venv
  (``bench/.peers/py``, mcp 2.x)::

      python published_server.py http --as-installed --port 8001

- ``code-index-mcp`` (``bodies.FASTMCP_PACKAGE``) is a module-level ``FastMCP`` of the SDK
  1.x (``code_index_mcp.server:mcp``) whose tools take a ``Context``; its HTTP options live
  on ``mcp.settings`` (``stateless_http``, ``json_response``). Run with the drop-in corpus's
  1.x venv (``.cache/dropin/v1``, made by ``scripts/dropin.sh``)::

      python published_server.py http --package code-index-mcp --as-installed --port 8001

The jetmcp rows serve the same objects unchanged: ``jetmcp run
"mcp_server_time.server:create_server('UTC')"`` and ``jetmcp run code_index_mcp.server:mcp``.
"""

from __future__ import annotations

import argparse
from typing import Any


def asgi_app(package: str, host: str) -> Any:
    if package == "mcp-server-time":
        from mcp_server_time.server import create_server

        server = create_server("UTC")
        return server.streamable_http_app(stateless_http=True, json_response=True, host=host)
    from code_index_mcp.server import mcp

    mcp.settings.host = host
    mcp.settings.stateless_http = True
    mcp.settings.json_response = True
    return mcp.streamable_http_app()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["http"])
    parser.add_argument(
        "--package", choices=["mcp-server-time", "code-index-mcp"], default="mcp-server-time"
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument(
        "--as-installed",
        action="store_true",
        help="as `pip install` gives it: uvicorn on asyncio + h11, default logging",
    )
    args = parser.parse_args()
    import uvicorn

    asgi = asgi_app(args.package, args.host)
    if args.as_installed:
        uvicorn.run(asgi, host=args.host, port=args.port, loop="asyncio", http="h11")
        return
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
