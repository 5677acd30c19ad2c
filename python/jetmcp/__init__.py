"""jetmcp: a fast MCP server and client for Python, with a Rust wire core."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from jetmcp.errors import McpError, ToolError
from jetmcp.runtime import install

if TYPE_CHECKING:
    from jetmcp.client import Client
    from jetmcp.server import Audio, Context, Image, Server
    from jetmcp.settings import Settings

    __version__: str

__all__ = ["Audio", "Client", "Context", "Image", "McpError", "Server", "ToolError"]

#: Names loaded on first use, and their modules. Importing ``jetmcp`` (as ``jetmcp run``'s
#: main process does, or a client) then costs nothing of the server (pydantic and the
#: schema machinery) or of the client (its result models) until they are used.
_LAZY = {
    "Audio": "jetmcp.server",
    "Client": "jetmcp.client",
    "Context": "jetmcp.server",
    "Image": "jetmcp.server",
    "Server": "jetmcp.server",
}


def _package_version() -> str:
    """The installed distribution's version: pyproject.toml's, the one source of truth."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("jetmcp")
    except PackageNotFoundError:  # imported from a source tree that was never installed
        return "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value: Any = _package_version()
        globals()[name] = value
        return value
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'jetmcp' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


class _Runtime:
    """The runtime of :mod:`jetmcp.runtime`, loaded on first use: the root is the top of
    every import, so it may name :mod:`jetmcp.run`; loading it only when a server is served
    keeps ``import jetmcp`` cheap."""

    __slots__ = ()

    async def serve_stdio(self, server: Server) -> None:
        await import_module("jetmcp.run.serving").RUNTIME.serve_stdio(server)

    async def serve_http(self, server: Server, settings: Settings) -> None:
        await import_module("jetmcp.run.serving").RUNTIME.serve_http(server, settings)

    def asgi_app(self, server: Server, settings: Settings) -> Any:
        return import_module("jetmcp.run.serving").RUNTIME.asgi_app(server, settings)

    def session_manager(self, server: Server) -> Any:
        return import_module("jetmcp.run.serving").RUNTIME.session_manager(server)


install(_Runtime())
