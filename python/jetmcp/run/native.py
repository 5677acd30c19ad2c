"""``jetmcp run --transport http --server native`` (the default): the app served by jetmcp's
own HTTP/1.1 engine (:mod:`jetmcp.transports.native`) on uvloop.

With one worker this process binds the socket and serves it (:func:`serve_native`). With
more, a supervisor holds the port and forks workers (:func:`worker_main`, the entry point
:func:`jetmcp.run.supervisor.serve_workers` calls in each child) that each serve a listening
socket of their own on it (``SO_REUSEPORT``: the kernel spreads connections evenly over
them, :func:`reuseport_sockets`), or one socket they share where the platform has no
``SO_REUSEPORT``.

Each serving process builds the app as a Granian worker would (:func:`~jetmcp.run.serving.
app_from_env`), enters its lifespan before the loop serves, and on SIGTERM/SIGINT drains
(:meth:`~jetmcp.transports.native.server.NativeServer.drain`) within
``shutdown_grace_seconds``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import gc
import logging
import os
import signal
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jetmcp.settings import Settings
from jetmcp.transports.native.serve import bind, serve_announced, tls_context

log = logging.getLogger("jetmcp.run")


def native_wanted(settings: Settings) -> bool:
    """Whether the native engine serves: asked for (the default), and with several workers
    only where the supervisor that runs them is installed (else Granian runs them)."""
    if settings.server != "native" or settings.http != "1":
        return False  # HTTP/2 is Granian's
    if settings.workers == 1:
        return True
    import importlib.util

    return importlib.util.find_spec("jetmcp.run.supervisor") is not None


#: File descriptors a worker keeps for itself besides its connections (the listening
#: socket, pipes, the event loop's, the app's own files).
_SPARE_FDS = 64


def raise_open_files_limit() -> int:
    """Raise this process's soft limit on open files to its hard limit (the soft one is
    often 1,024, which caps connections well below what the hard one allows); Granian's
    workers inherit it. Returns the soft limit now in force (0 when it cannot be read)."""
    try:
        import resource
    except ImportError:  # not a Unix
        return 0
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return 0
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (OSError, ValueError) as exc:
            logging.getLogger("jetmcp").warning("cannot raise the open files limit: %s", exc)
    return int(soft) if soft != resource.RLIM_INFINITY else 1 << 30


def fitted_connections(settings: Settings) -> int:
    """``max_connections``, lowered to what the open files limit leaves room for."""
    limit = raise_open_files_limit()
    wanted = settings.max_connections
    if limit and wanted > limit - _SPARE_FDS:
        fitted = max(1, limit - _SPARE_FDS)
        logging.getLogger("jetmcp").warning(
            "--max-connections %d exceeds the open files limit (%d): using %d",
            wanted,
            limit,
            fitted,
        )
        return fitted
    return wanted


def add_engine_arguments(run: argparse.ArgumentParser, defaults: Settings) -> None:
    """``jetmcp run``'s engine and TLS flags."""
    run.add_argument(
        "--server",
        choices=("native", "granian"),
        default=defaults.server,
        help="the HTTP engine: native (jetmcp's own HTTP/1.1 on uvloop) or granian",
    )
    run.add_argument("--ssl-certfile", default="", help="serve HTTPS with this PEM certificate")
    run.add_argument("--ssl-keyfile", default="", help="the PEM private key of --ssl-certfile")


def add_cap_arguments(
    caps: Any, defaults: Settings, seconds: Callable[[str], float], count: Callable[[str], int]
) -> None:
    """``jetmcp run``'s caps of the native engine alone."""
    caps.add_argument(
        "--idle-timeout-seconds",
        type=seconds,
        default=defaults.idle_timeout_seconds,
        help="how long a keep-alive connection may sit idle between requests (native; "
        "0: the header timeout)",
    )
    caps.add_argument(
        "--max-write-buffer-bytes",
        type=count,
        default=defaults.max_write_buffer_bytes,
        help="unsent reply bytes of a connection above which it is not read (native)",
    )


def granian_tls(settings: Settings) -> dict[str, Any]:
    """Granian's TLS arguments for ``--ssl-certfile``/``--ssl-keyfile`` (none without)."""
    if not settings.ssl_certfile:
        return {}
    tls: dict[str, Any] = {"ssl_cert": Path(settings.ssl_certfile)}
    if settings.ssl_keyfile:
        tls["ssl_key"] = Path(settings.ssl_keyfile)
    return tls


def _app(target: Any) -> Any:
    """The MCP app inside ``target`` (custom routes wrap it)."""
    return getattr(target, "mcp", target)


def run_server(
    sock: socket.socket, settings: Settings, target: Any, kill_after: float = 0.0
) -> int:
    """Serve ``target`` on ``sock`` in this process until SIGTERM/SIGINT has drained it.
    ``kill_after``: seconds after the signal at which a process whose event loop is stuck
    (a synchronous tool that never returns) exits at once, status 1 (0: never)."""
    import uvloop

    from jetmcp.transports.native.server import NativeServer

    loop = uvloop.new_event_loop()
    asyncio.set_event_loop(loop)
    holder: list[NativeServer] = []
    watchdog: list[threading.Timer] = []

    def on_signal(signum: int, frame: Any) -> None:
        if kill_after > 0 and not watchdog:
            watchdog.append(threading.Timer(kill_after, _stuck, (kill_after,)))
            watchdog[0].daemon = True
            watchdog[0].start()
        if holder:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(holder[0].drain)

    # Installed before the app's own hooks, which run it after theirs (the app's chain).
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, on_signal)
    target.__rsgi_init__(loop)
    tls = tls_context(settings)

    async def main() -> None:
        server = NativeServer(target, _app(target), settings)
        holder.append(server)
        await serve_announced(server, sock, tls, settings)

    settle_heap()
    try:
        loop.run_until_complete(main())
    finally:
        if watchdog:
            watchdog[0].cancel()
        target.__rsgi_del__(loop)
        with contextlib.suppress(Exception):
            loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
        asyncio.set_event_loop(None)
    return 0


def settle_heap() -> None:
    """Collect, then freeze what is left (the app, its modules, the engine): Python's cyclic
    GC never traverses those objects again. Without it, each full collection while serving
    walks every object the app loaded (~34,000 for bench/load/jetmcp_server.py, 13 ms on
    this shared machine, every request waiting meanwhile); the young generations stay as
    they are. Per worker, just before it serves."""
    gc.collect()
    gc.freeze()


def _stuck(seconds: float) -> None:
    """The watchdog's end: the loop did not finish draining in ``seconds``. The process
    ends itself at once, exit status 1, where a supervisor would SIGKILL it; the log line
    is the one a supervised worker's kill gets."""
    log.error(
        "worker (pid %d) still serving %g seconds after the stop signal (a stuck "
        "handler?): it had to be killed (SIGKILL); exiting with status 1",
        os.getpid(),
        seconds,
    )
    os._exit(1)


def reuseport_sockets(
    settings: Settings,
) -> tuple[socket.socket, Callable[[], socket.socket]] | None:
    """The port's holder (bound with ``SO_REUSEPORT``, not listening: no connection waits
    on it, and no process of another user can take the port) and a factory of listening
    sockets on that port, one per worker; None where ``SO_REUSEPORT`` is missing."""
    reuseport = getattr(socket, "SO_REUSEPORT", None)
    if reuseport is None:
        return None
    family = socket.AF_INET6 if ":" in settings.host else socket.AF_INET

    def new(port: int) -> socket.socket:
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, reuseport, 1)
            sock.bind((settings.host, port))
        except BaseException:
            sock.close()
            raise
        return sock

    try:
        holder = new(settings.port)
    except OSError as exc:
        if exc.errno in (errno.ENOPROTOOPT, errno.EINVAL):  # e.g. a kernel without it
            return None
        raise
    port = int(holder.getsockname()[1])

    def listen() -> socket.socket:
        sock = new(port)
        sock.listen(settings.backlog)
        sock.setblocking(False)
        return sock

    return holder, listen


def worker_main(sock: socket.socket, kill_after: float = 0.0) -> int:
    """One worker of ``jetmcp run --server native --workers N``: the app built from the
    exported settings, served on the supervisor's ``sock``."""
    from jetmcp.run.serving import app_from_env

    settings = Settings.from_env()
    return run_server(sock, settings, app_from_env(), kill_after)


def serve_native(settings: Settings, kill_after: float = 0.0) -> int:
    """``jetmcp run`` with the native engine (the settings exported): one worker here, or
    several under the supervisor."""
    if settings.workers > 1:
        from jetmcp.run import supervisor  # type: ignore[attr-defined, unused-ignore]

        shared = reuseport_sockets(settings)
        sock, listen = shared if shared is not None else (bind(settings), None)
        return int(
            supervisor.serve_workers(
                sock,
                settings.workers,
                worker_main,
                grace=settings.shutdown_grace_seconds,
                log=log,
                listen=listen,
            )
        )
    return worker_main(bind(settings), kill_after)


__all__ = [
    "bind",
    "fitted_connections",
    "native_wanted",
    "raise_open_files_limit",
    "reuseport_sockets",
    "run_server",
    "serve_native",
    "settle_heap",
    "tls_context",
    "worker_main",
]
