"""jetmcp mounted in an ASGI application (Starlette), served by uvicorn: the quick start's
server (quickstart.py, beside this file) at /mcp-server/mcp, next to the application's own
routes. Needs Starlette and uvicorn besides jetmcp: `pip install starlette uvicorn`.

    python examples/asgi_mount.py [PORT]          # http://127.0.0.1:8000/mcp-server/mcp
    python examples/quickstart_client.py http://127.0.0.1:8000/mcp-server/mcp

`mcp.streamable_http_app()` is the same transport `jetmcp run` serves; Starlette's lifespan
opens the server's through `mcp.session_manager.run()`. Any ASGI server will do (granian's ASGI
interface, hypercorn); a Starlette app without a lifespan works too (the server's opens on the
first request).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator

import uvicorn
from quickstart import app as mcp  # a jetmcp.Server (this file's folder is on sys.path)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route


async def health(request: Request) -> JSONResponse:
    return JSONResponse({"ok": True})


@contextlib.asynccontextmanager
async def lifespan(_: Starlette) -> AsyncIterator[None]:
    async with mcp.session_manager.run():
        yield


web = Starlette(
    routes=[Route("/health", health), Mount("/mcp-server", app=mcp.streamable_http_app())],
    lifespan=lifespan,
)

if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8000
    uvicorn.run(web, host="127.0.0.1", port=port, log_level="warning")
