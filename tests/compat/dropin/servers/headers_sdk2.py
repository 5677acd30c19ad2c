"""An SDK 2.x MCPServer reading a request header the SDK 2.x way (``ctx.headers``):
test_request_headers_dropin.py."""

from mcp.server.mcpserver import Context, MCPServer

mcp = MCPServer("headers-sdk2")


@mcp.tool()
def api_key(ctx: Context) -> str:
    """The X-Api-Key header of the HTTP request."""
    headers = ctx.headers
    if headers is None:
        return "no http request"
    return headers.get("x-api-key", "missing")


if __name__ == "__main__":
    mcp.run()
