"""jetmcp: a fast MCP server and client for Python, with a Rust wire core."""

from jetmcp.client import Client
from jetmcp.errors import McpError
from jetmcp.server import Audio, Context, Image, Server

__all__ = ["Audio", "Client", "Context", "Image", "McpError", "Server"]
__version__ = "0.1.0"
