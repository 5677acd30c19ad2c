"""A fastmcp server (2.x on mcp 1.x, 4.x on mcp 2.x) reading a request header fastmcp's way
(``get_http_headers()``, ``get_http_request()``): test_request_headers_dropin.py."""

from fastmcp import FastMCP
from fastmcp.server.dependencies import get_http_headers, get_http_request

mcp = FastMCP("headers-fastmcp")


@mcp.tool
def api_key() -> str:
    """The X-Api-Key header, through get_http_headers()."""
    return get_http_headers().get("x-api-key", "missing")


@mcp.tool
def via_request() -> str:
    """The X-Api-Key header, through get_http_request()."""
    try:
        request = get_http_request()
    except RuntimeError:
        return "no http request"
    return request.headers.get("X-Api-Key", "missing")


if __name__ == "__main__":
    mcp.run()
