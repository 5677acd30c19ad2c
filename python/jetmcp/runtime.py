"""The runtime slot: how a :class:`~jetmcp.server.app.Server` reaches what serves it.

``Server.run()``, ``run_stdio_async()``, ``run_streamable_http_async()``, the ASGI apps and
``session_manager`` are methods users call on the server, but serving is the job of the
layers above it (the transports, and :mod:`jetmcp.run`, which picks and builds them). The
server asks :func:`current` for a :class:`Runtime`; the root package :mod:`jetmcp`, the top
of every import, fills the slot with one that loads :mod:`jetmcp.run.serving` on first use.
So the server imports nothing above it, and importing :mod:`jetmcp` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from jetmcp.server.app import Server
    from jetmcp.settings import Settings


class Runtime(Protocol):
    """What serves a server: its transports, chosen and built."""

    async def serve_stdio(self, server: Server) -> None:
        """Serve on this process's stdin and stdout until stdin ends."""
        ...

    async def serve_http(self, server: Server, settings: Settings) -> None:
        """Serve Streamable HTTP in this process and event loop until interrupted."""
        ...

    def asgi_app(self, server: Server, settings: Settings) -> Any:
        """An ASGI app serving ``server`` (with its custom routes, if it has any)."""
        ...

    def session_manager(self, server: Server) -> Any:
        """The SDK's ``session_manager``: ``run()`` holds the server's lifespan open."""
        ...


_installed: Runtime | None = None


def install(runtime: Runtime) -> None:
    """Make ``runtime`` the one servers use."""
    global _installed
    _installed = runtime


def current() -> Runtime:
    """The runtime :func:`install` set (the root package sets one at import)."""
    if _installed is None:
        raise RuntimeError("no jetmcp runtime is installed (import jetmcp first)")
    return _installed


__all__ = ["Runtime", "current", "install"]
