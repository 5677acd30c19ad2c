"""A server published on PyPI, on its own SDK, for the drop-in rows of the load benchmark.

mcp-server-time (``bodies.PUBLISHED_PACKAGE``) builds an official SDK 2.x ``MCPServer`` in
``create_server(local_tz)``; its console script serves it over stdio only. Over HTTP it is
served here the way the SDK documents it and the ``mcp-sdk*`` rows serve the bench's own
file: ``streamable_http_app(stateless_http=True, json_response=True)`` on uvicorn, as
``pip install`` leaves it (``--as-installed``: asyncio loop, h11, default logging) or tuned.
Nothing of the package is changed. Run with the peers venv (``bench/.peers/py``)::

    python published_server.py http --as-installed --port 8001

The jetmcp row serves the same object unchanged:
``jetmcp run "mcp_server_time.server:create_server('UTC')"``.
"""

from __future__ import annotations

import argparse

from mcp_server_time.server import create_server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["http"])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument(
        "--as-installed",
        action="store_true",
        help="as `pip install` gives it: uvicorn on asyncio + h11, default logging",
    )
    args = parser.parse_args()
    import uvicorn

    server = create_server("UTC")
    asgi = server.streamable_http_app(stateless_http=True, json_response=True, host=args.host)
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
