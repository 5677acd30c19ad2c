"""What serving a server takes, for ``jetmcp run`` and for the ``Server.run*`` methods (the
installed :mod:`jetmcp.runtime`): the HTTP app with the observers and the auth its settings
ask for (:func:`make_app`), Granian's worker factory (:func:`app_from_env`), Streamable HTTP
in this event loop, stdio, and the ASGI apps to mount."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from typing import TYPE_CHECKING, Any

from jetmcp.auth.config import resource_server
from jetmcp.settings import Settings
from jetmcp.transports.asgi import McpAsgiApp, SharedLifespan, shared_lifespan
from jetmcp.transports.auth import BearerGuard
from jetmcp.transports.http import McpHttpApp
from jetmcp.transports.routes import with_routes

if TYPE_CHECKING:
    from jetmcp.server.app import Server
    from jetmcp.state.base import SessionStore


def bearer_guard(settings: Settings, server: Server) -> BearerGuard | None:
    """The OAuth resource server in front of ``server``'s HTTP paths, or None when auth is
    off (see :func:`jetmcp.auth.config.resource_server`)."""
    found = resource_server(settings, server)
    if found is None:
        return None
    return BearerGuard(
        found.verifier,
        resource=found.resource,
        authorization_servers=found.authorization_servers,
        required_scopes=found.required_scopes,
        scopes_supported=server.scopes_in_use,
        endpoint_paths=found.endpoint_paths,
        resource_name=server.name,
        cache_seconds=settings.auth_cache_seconds,
        cache_size=settings.auth_cache_size,
        check_resource=found.check_resource,
    )


def make_app(
    server: Server,
    settings: Settings | None = None,
    store: SessionStore | None = None,
    *,
    manage_lifespan: bool = True,
) -> McpHttpApp:
    """The HTTP app for ``server``: with the observers ``settings`` ask for (metrics, spans,
    access log) when any is on, else the plain one, which pays for none of them; behind
    the bearer guard when auth is on."""
    settings = settings or Settings()
    guard = bearer_guard(settings, server)
    if settings.observed:
        from jetmcp.observe.app import ObservedHttpApp

        return ObservedHttpApp(
            server, settings, store, manage_lifespan=manage_lifespan, guard=guard
        )
    return McpHttpApp(server, settings, store, manage_lifespan=manage_lifespan, guard=guard)


def app_from_env() -> Any:
    """Granian's factory target: builds the app in each worker from exported settings (with
    the server's custom routes beside it, when it has any: :mod:`jetmcp.transports.routes`).
    The worker is first tied to the process that forked it: it is killed when that exits.

    This import of the target is the only one of the process (``jetmcp run`` imports none
    before it): a target that does not load ends the worker with its explanation, and
    ``jetmcp run`` with status 2 (:mod:`jetmcp.run.rundir`); the first worker to build its
    app prints the start-up line."""
    import multiprocessing

    from jetmcp.run import console, rundir
    from jetmcp.run.lifeline import die_with_parent
    from jetmcp.run.loader import LoadError, explanation, load_for_http

    parent = multiprocessing.parent_process()
    if parent is not None and parent.pid is not None:
        # A worker never outlives `jetmcp run` (its kill -9 included): no orphan keeps
        # serving the port (jetmcp.run.lifeline).
        die_with_parent(parent.pid)
    settings = Settings.from_env()
    try:
        server = load_for_http(settings.app)
    except LoadError as exc:
        rundir.fail_worker(explanation(exc))
    store: SessionStore | None = None
    if settings.redis_url and not settings.stateless:
        from jetmcp.state.redis import RedisSessionStore

        store = RedisSessionStore(server, settings)
    app = with_routes(make_app(server, settings, store), server.custom_routes)
    if rundir.run_dir() is not None and rundir.claim(rundir.ANNOUNCED):
        print(f"jetmcp: {console.startup_line(server.name, settings)}", file=sys.stderr, flush=True)
    return app


class SessionManager:
    """The SDK's ``server.session_manager`` as far as mounting needs it: ``run()`` holds the
    server's lifespan open (``async with mcp.session_manager.run(): ...`` in the parent
    app's lifespan, as the SDK's mounting recipes do)."""

    def __init__(self, lifespan: SharedLifespan) -> None:
        self._lifespan = lifespan

    def run(self) -> Any:
        return self._lifespan.run()


class ServingRuntime:
    """The :class:`jetmcp.runtime.Runtime` of this package."""

    async def serve_stdio(self, server: Server) -> None:
        from jetmcp.transports.stdio import serve_stdio

        await serve_stdio(server, Settings())

    async def serve_http(self, server: Server, settings: Settings) -> None:
        """Streamable HTTP in this event loop: on the native engine (``settings.server``,
        the default), or Granian's embedded server (``"granian"``, or HTTP/2 asked for)."""
        # Custom routes are served beside the endpoint as under `jetmcp run` (RSGI both).
        target = with_routes(
            make_app(server, settings, manage_lifespan=False), server.custom_routes
        )
        if settings.server == "native" and settings.http == "1":  # HTTP/2 is Granian's
            from jetmcp.transports.native.serve import serve_here

            async with shared_lifespan(server).run():
                await serve_here(target, settings)
            return

        from granian.constants import HTTPModes, Interfaces
        from granian.server.embed import Server as Embedded

        async with shared_lifespan(server).run():
            embedded = Embedded(
                target,
                address=settings.host,
                port=settings.port,
                interface=Interfaces.RSGI,
                http=HTTPModes(settings.http),
                websockets=False,
            )
            # The embedded server installs no signal handlers: SIGINT/SIGTERM stop it, so
            # the lifespan's shutdown runs before the process exits.
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                    loop.add_signal_handler(signum, embedded.stop)
            await embedded.serve()

    def asgi_app(self, server: Server, settings: Settings) -> Any:
        app = McpAsgiApp(make_app(server, settings, manage_lifespan=False))
        if not server.custom_routes:
            return app
        from starlette.applications import Starlette
        from starlette.routing import Mount

        lifespan = app.lifespan

        def starlette_lifespan(_: Any) -> Any:
            return lifespan.run()

        return Starlette(
            routes=[*server.custom_routes, Mount("/", app=app)], lifespan=starlette_lifespan
        )

    def session_manager(self, server: Server) -> SessionManager:
        return SessionManager(shared_lifespan(server))


#: The runtime the root package installs (loaded on first use).
RUNTIME = ServingRuntime()

__all__ = [
    "RUNTIME",
    "ServingRuntime",
    "SessionManager",
    "app_from_env",
    "bearer_guard",
    "make_app",
]
