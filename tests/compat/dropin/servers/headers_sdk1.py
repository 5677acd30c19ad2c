"""An SDK 1.x FastMCP server reading a request header the SDK 1.x way
(``ctx.request_context.request.headers``): test_request_headers_dropin.py."""

from mcp.server.fastmcp import Context, FastMCP

mcp = FastMCP("headers-sdk1")


@mcp.tool()
def api_key(ctx: Context) -> str:
    """The X-Api-Key header of the HTTP request."""
    request = ctx.request_context.request
    if request is None:
        return "no http request"
    return request.headers.get("x-api-key", "missing")


if __name__ == "__main__":
    mcp.run()
