"""Tools that read the HTTP request's headers (``ctx.headers``, and the SDK 1.x spelling
``ctx.request_context.request.headers``): tests/server/test_request_headers.py."""

from __future__ import annotations

from jetmcp import Context, Server

app = Server("headers-app")


@app.tool()
async def api_key(ctx: Context) -> str:
    """The X-Api-Key header (an async tool: the exchange is made only when asked)."""
    headers = ctx.headers
    if headers is None:
        return "no http request"
    return headers.get("X-Api-Key", "missing")


@app.tool()
def api_key_sync(ctx: Context) -> str:
    """The same, synchronous, read the SDK 1.x way."""
    request = ctx.request_context.request
    if request is None:
        return "no http request"
    return request.headers.get("x-api-key", "missing")


@app.tool()
async def all_keys(ctx: Context) -> list[str]:
    """Every value of the X-Tenant header, in order."""
    headers = ctx.headers
    return [] if headers is None else headers.getlist("x-tenant")


@app.tool()
def plain(a: int) -> int:
    """A tool that reads nothing of its request."""
    return a + 1
