"""jetmcp: a fast MCP server and client for Python, with a Rust wire core."""

from typing import TYPE_CHECKING, Any

from jetmcp.errors import McpError
from jetmcp.server import Audio, Context, Image, Server

if TYPE_CHECKING:
    from jetmcp.client import Client

__all__ = ["Audio", "Client", "Context", "Image", "McpError", "Server"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # The client (its result models) loads on first use: a server process never pays for it.
    if name == "Client":
        from jetmcp.client import Client

        return Client
    raise AttributeError(f"module 'jetmcp' has no attribute {name!r}")
