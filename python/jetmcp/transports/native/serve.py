"""The native engine's listening socket (:func:`bind`), its TLS (:func:`tls_context`), and
:func:`serve_here`: ``target`` served on the running event loop, as ``Server.run(transport=
"http")`` does (``jetmcp run`` serves through :mod:`jetmcp.run.native`, which uses the first
two)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import ssl
from typing import Any

from jetmcp.settings import Settings

log = logging.getLogger("jetmcp.run")


def bind(settings: Settings) -> socket.socket:
    """The listening socket for ``settings.host``/``settings.port``."""
    family = socket.AF_INET6 if ":" in settings.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((settings.host, settings.port))
    sock.listen(settings.backlog)
    sock.setblocking(False)
    return sock


def tls_context(settings: Settings) -> ssl.SSLContext | None:
    """The server's TLS context from ``--ssl-certfile``/``--ssl-keyfile``, or None."""
    if not settings.ssl_certfile:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(settings.ssl_certfile, settings.ssl_keyfile or None)
    context.set_alpn_protocols(["http/1.1"])
    return context


async def serve_announced(
    server: Any, sock: socket.socket, tls: ssl.SSLContext | None, settings: Settings
) -> None:
    """Log where ``server`` (a :class:`~jetmcp.transports.native.server.NativeServer`)
    serves, then serve ``sock`` until it stops."""
    log.info(
        "serving on %s://%s:%d%s (native engine)",
        "https" if tls is not None else "http",
        settings.host,
        sock.getsockname()[1],
        settings.path,
    )
    await server.serve(sock, tls)


def _app(target: Any) -> Any:
    """The MCP app inside ``target`` (custom routes wrap it)."""
    return getattr(target, "mcp", target)


async def serve_here(target: Any, settings: Settings) -> None:
    """Serve ``target`` on the running event loop until SIGTERM/SIGINT has drained it: the
    native engine of ``Server.run(transport="http")`` and its async siblings, whose caller
    holds the server's lifespan open (``target`` made with ``manage_lifespan=False``). The
    signal handlers this installs are put back when it returns."""
    from jetmcp.transports.native.server import NativeServer

    loop = asyncio.get_running_loop()
    sock = bind(settings)
    tls = tls_context(settings)
    server = NativeServer(target, _app(target), settings)

    def on_signal(signum: int, frame: Any) -> None:
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(server.drain)

    saved: dict[signal.Signals, Any] = {}
    for signum in (signal.SIGTERM, signal.SIGINT):
        try:
            saved[signum] = signal.getsignal(signum)
            signal.signal(signum, on_signal)
        except (ValueError, OSError):  # not the main thread: the caller stops the loop
            saved.pop(signum, None)
    # The app's own hooks (the body watch, its signal chain after ours) as in a worker.
    target.__rsgi_init__(loop)
    try:
        await serve_announced(server, sock, tls, settings)
    finally:
        for signum, handler in saved.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(signum, handler)
        sock.close()
        close = getattr(getattr(_app(target), "store", None), "close", None)
        if close is not None:
            with contextlib.suppress(Exception):
                await close()


__all__ = ["bind", "serve_announced", "serve_here", "tls_context"]
