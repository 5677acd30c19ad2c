"""How a :class:`jetmcp.Server` runs itself, with the entry points of the official SDK and
fastmcp: ``run()``, ``run_stdio_async()``, ``run_streamable_http_async()``, ASGI apps
(``streamable_http_app()``, ``sse_app()``, ``http_app()``), ``custom_route`` and
``session_manager.run()``; and the SDK's constructor keywords.

Constructor keywords of the SDKs fall in three groups (:data:`TRANSPORT_OPTIONS`,
:data:`NO_EFFECT_OPTIONS`, :data:`REFUSED_OPTIONS`): transport settings are used by
``run()`` and the ASGI apps (as 1.x ``FastMCP`` takes them in the constructor); options with
no meaning for jetmcp are accepted and kept in :attr:`Serving.sdk_options`; options whose
silent loss would change what the server does (authentication, middleware) are refused
with a ``TypeError`` that says so, as is any keyword nobody defines.

Serving itself is done above the server: each method here hands the server and its settings
to the installed :mod:`jetmcp.runtime` (:mod:`jetmcp.run.serving`), so this module imports
no transport.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from jetmcp import runtime
from jetmcp.settings import Settings

if TYPE_CHECKING:
    from jetmcp.server.app import Server

#: SDK keywords that set how the server is served over HTTP, and the Settings field each
#: one sets (None: accepted, jetmcp decides per reply or has its own equivalent).
TRANSPORT_OPTIONS: dict[str, str | None] = {
    "host": "host",
    "port": "port",
    "streamable_http_path": "path",
    "path": "path",
    "stateless_http": "stateless",
    "stateless": "stateless",
    "sse_path": "sse_path",
    "message_path": "sse_message_path",
    "max_request_body_size": "max_body_bytes",
    "session_idle_timeout": "session_idle_seconds",
    "max_sessions": "max_sessions",
    # jetmcp's own: the HTTP engine, "native" (the default) or "granian".
    "server": "server",
    "mount_path": None,
    "json_response": None,
    "event_store": None,
    "retry_interval": None,
    "transport_security": None,
    "show_banner": None,
    "uvicorn_config": None,
    "log_level": None,
}
#: SDK keywords accepted for compatibility that change nothing in jetmcp.
NO_EFFECT_OPTIONS = frozenset(
    {
        "description",
        "dependencies",
        "debug",
        "log_level",
        "warn_on_duplicate_tools",
        "warn_on_duplicate_resources",
        "warn_on_duplicate_prompts",
        "on_duplicate",
        "on_duplicate_tools",
        "on_duplicate_resources",
        "on_duplicate_prompts",
        "request_state_security",
        "resource_security",
        "subscriptions",
        "cache_hints",
        "strict_input_validation",
        "tool_serializer",
        "tasks",
        "mask_error_details",
    }
)
#: SDK keywords refused, with the reason (ignoring them would change the server silently).
REFUSED_OPTIONS: dict[str, str] = {
    "auth_server_provider": "jetmcp is an OAuth resource server only: run the authorization "
    "server apart and give jetmcp its issuer (Server(auth=...) or --auth-issuer)",
    "middleware": "SDK middleware does not run on jetmcp's native server; serve the SDK "
    "object itself with `jetmcp run` (its middleware chain is kept)",
    "providers": "fastmcp providers are fastmcp's; serve the fastmcp object with `jetmcp run`",
    "transforms": "fastmcp transforms are fastmcp's; serve the fastmcp object with `jetmcp run`",
    "extensions": "SDK extensions are the SDK's; serve the SDK object with `jetmcp run`",
    "tools": "pass functions to server.add_tool() instead of SDK Tool objects",
    "resources": "pass functions to server.add_resource() instead of SDK Resource objects",
}


def check_options(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` if every keyword is one the SDKs define and jetmcp can honour."""
    for key in options:
        if key in REFUSED_OPTIONS:
            raise TypeError(f"Server(): {key}= is not supported: {REFUSED_OPTIONS[key]}")
        if key not in TRANSPORT_OPTIONS and key not in NO_EFFECT_OPTIONS:
            raise TypeError(f"Server() got an unexpected keyword argument {key!r}")
    return dict(options)


#: The HTTP engines ``run(transport="http")`` serves on (``server=``, else $JETMCP_SERVER).
ENGINES = ("native", "granian")


def _http_settings(options: dict[str, Any], overrides: dict[str, Any]) -> Settings:
    settings = Settings()
    settings.server = os.environ.get("JETMCP_SERVER") or settings.server
    for source in (options, overrides):
        for key, value in source.items():
            if key in REFUSED_OPTIONS:
                raise TypeError(f"{key}= is not supported: {REFUSED_OPTIONS[key]}")
            if key not in TRANSPORT_OPTIONS and key not in NO_EFFECT_OPTIONS:
                raise TypeError(f"unexpected keyword argument {key!r}")
            field = TRANSPORT_OPTIONS.get(key)
            if field is not None and value is not None:
                setattr(settings, field, value)
    if settings.server not in ENGINES:
        raise ValueError(f"unknown HTTP server {settings.server!r}: native or granian")
    return settings


class Serving:
    """The running and mounting half of :class:`jetmcp.Server` (a base class of it)."""

    #: The SDK keywords the server was made with (see :func:`check_options`).
    sdk_options: dict[str, Any]
    #: Extra HTTP routes (``custom_route``): Starlette routes, served by the ASGI apps.
    custom_routes: list[Any]

    def _me(self) -> Server:
        # Serving is a base of Server only: a cast, not an import of the module that
        # imports this one.
        return cast("Server", self)

    # -- blocking entry points ---------------------------------------------------------------

    def run(self, transport: str = "stdio", mount_path: str | None = None, **kw: Any) -> None:
        """Serve until stopped: ``"stdio"``, or ``"streamable-http"``/``"http"``/``"sse"``
        (one Streamable HTTP endpoint that also serves the 2024-11-05 SSE paths) with the
        SDK's keywords (``host``, ``port``, ``path``/``streamable_http_path``,
        ``stateless_http``...). ``mount_path`` is accepted and has no effect."""
        import uvloop

        if transport == "stdio":
            if kw:
                raise TypeError(f"run(transport='stdio') takes no {', '.join(sorted(kw))}")
            uvloop.run(self.run_stdio_async())
        elif transport in ("streamable-http", "http", "sse"):
            uvloop.run(self.run_streamable_http_async(**kw))
        else:
            raise ValueError(f"Unknown transport: {transport}")

    async def run_stdio_async(self, show_banner: bool = False, **kw: Any) -> None:
        """Serve on this process's stdin and stdout until stdin ends."""
        await runtime.current().serve_stdio(self._me())

    async def run_streamable_http_async(self, **kw: Any) -> None:
        """Serve Streamable HTTP in this process and event loop until interrupted."""
        await runtime.current().serve_http(self._me(), _http_settings(self.sdk_options, kw))

    async def run_sse_async(self, **kw: Any) -> None:
        await self.run_streamable_http_async(**kw)

    async def run_http_async(self, transport: str = "http", **kw: Any) -> None:
        """fastmcp's name for :meth:`run_streamable_http_async`."""
        await self.run_streamable_http_async(**kw)

    async def run_async(self, transport: str | None = None, **kw: Any) -> None:
        """fastmcp's ``run_async``: stdio unless told otherwise."""
        if transport in (None, "stdio"):
            await self.run_stdio_async()
        else:
            await self.run_streamable_http_async(**kw)

    # -- ASGI --------------------------------------------------------------------------------

    def streamable_http_app(self, **kw: Any) -> Any:
        """An ASGI app serving this server at ``/mcp`` (``streamable_http_path=``/``path=``),
        to serve with uvicorn or mount in Starlette/FastAPI (its lifespan opens with the
        app's lifespan events, ``session_manager.run()``, or the first request). With
        ``custom_route`` routes it is a Starlette app holding them and the endpoint."""
        return runtime.current().asgi_app(self._me(), _http_settings(self.sdk_options, kw))

    def sse_app(self, mount_path: str | None = None, **kw: Any) -> Any:
        """The same app: it serves the 2024-11-05 HTTP+SSE paths (``/sse``, ``/messages``)
        next to the Streamable HTTP endpoint."""
        return self.streamable_http_app(**kw)

    def http_app(self, path: str | None = None, transport: str = "http", **kw: Any) -> Any:
        """fastmcp's name for :meth:`streamable_http_app` (``path`` is the endpoint)."""
        if path is not None:
            kw["path"] = path
        if kw.pop("middleware", None) is not None:
            raise TypeError(f"middleware= is not supported: {REFUSED_OPTIONS['middleware']}")
        return self.streamable_http_app(**kw)

    @property
    def session_manager(self) -> Any:
        """The SDK's ``server.session_manager`` as far as mounting needs it: ``run()`` holds
        the server's lifespan open (``async with mcp.session_manager.run(): ...`` in the
        parent app's lifespan, as the SDK's mounting recipes do)."""
        return runtime.current().session_manager(self._me())

    def custom_route(
        self,
        path: str,
        methods: list[str],
        name: str | None = None,
        include_in_schema: bool = True,
    ) -> Callable[[Any], Any]:
        """Add a plain HTTP route next to the MCP endpoint (``async def f(request) ->
        Response``, Starlette's types), served by the ASGI apps, ``run()`` and ``jetmcp
        run``."""

        def decorator(fn: Any) -> Any:
            from starlette.routing import Route

            self.custom_routes.append(
                Route(
                    path,
                    endpoint=fn,
                    methods=methods,
                    name=name,
                    include_in_schema=include_in_schema,
                )
            )
            return fn

        return decorator


__all__ = [
    "NO_EFFECT_OPTIONS",
    "REFUSED_OPTIONS",
    "TRANSPORT_OPTIONS",
    "Serving",
    "check_options",
]
