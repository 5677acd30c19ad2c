"""The server API: ``Server`` and its decorators, ``Context``, and the content helpers."""

from jetmcp.server.app import Server
from jetmcp.server.content import Audio, Image
from jetmcp.server.context import Context

__all__ = ["Audio", "Context", "Image", "Server"]
