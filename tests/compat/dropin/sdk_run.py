"""Serve a server file on its own SDK, the way its framework runs it: the reference the
drop-in tests compare jetmcp against.

    python sdk_run.py TARGET stdio
    python sdk_run.py TARGET http PORT
    python sdk_run.py MODULE:FUNC program ARGS...   # a console script, run as it is

TARGET is found exactly as ``jetmcp run`` finds it (:func:`jetmcp.run.loader.load_object`), so
both sides serve the same object. stdio runs the framework's own stdio entry; HTTP serves
the framework's own Streamable HTTP app under uvicorn on 127.0.0.1:PORT.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio

from jetmcp.compat import kind_of
from jetmcp.run.loader import load_object


async def _stdio_lowlevel(low: Any) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await low.run(read, write, low.create_initialization_options())


def stdio(obj: Any) -> None:
    kind = kind_of(obj)
    if kind in ("fastmcp1", "fastmcp2"):
        anyio.run(lambda: obj.run_stdio_async(show_banner=False))
    elif hasattr(obj, "run_stdio_async"):
        anyio.run(obj.run_stdio_async)
    else:
        anyio.run(_stdio_lowlevel, obj)


def http_app(obj: Any) -> Any:
    kind = kind_of(obj)
    if kind in ("fastmcp1", "fastmcp2"):
        return obj.http_app(path="/mcp")
    if hasattr(obj, "streamable_http_app"):
        return obj.streamable_http_app()
    # A 1.x low-level server: the session manager its docs mount.
    from contextlib import asynccontextmanager

    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.applications import Starlette
    from starlette.routing import Mount

    manager = StreamableHTTPSessionManager(app=obj)

    @asynccontextmanager
    async def lifespan(app: Any) -> Any:
        async with manager.run():
            yield

    async def handle(scope: Any, receive: Any, send: Any) -> None:
        await manager.handle_request(scope, receive, send)

    return Starlette(routes=[Mount("/mcp", app=handle)], lifespan=lifespan)


def program(target: str, args: list[str]) -> None:
    """Run a console script's function with ``sys.argv`` as its command line gives it."""
    import importlib

    module_name, _, name = target.partition(":")
    func = getattr(importlib.import_module(module_name), name)
    sys.argv = [name, *args]
    func()


def main() -> int:
    target, transport = sys.argv[1], sys.argv[2]
    if transport == "program":
        program(target, sys.argv[3:])
        return 0
    obj = load_object(target)
    if transport == "stdio":
        stdio(obj)
        return 0
    import uvicorn

    uvicorn.run(http_app(obj), host="127.0.0.1", port=int(sys.argv[3]), log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
