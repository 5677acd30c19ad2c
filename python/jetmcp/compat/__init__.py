"""Servers written for other Python MCP frameworks, served by jetmcp as they are.

:func:`adapt` turns the official SDK's ``FastMCP`` (mcp 1.x), ``MCPServer`` (mcp 2.x), its
low-level ``Server`` (either major) and fastmcp's ``FastMCP`` (2.x on mcp 1.x, 3.x/4.x on mcp
2.x) into a :class:`jetmcp.Server`. Tools whose conversion is standard become native jetmcp
tools (published with the SDK's own description and schemas); everything else runs through
the SDK's own objects. Nothing here imports an SDK until an object of it is adapted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from jetmcp.errors import LoadError

if TYPE_CHECKING:
    from jetmcp.server.app import Server

#: What :func:`kind_of` tells apart.
Kind = Literal["jetmcp", "mcp1", "mcp2", "fastmcp1", "fastmcp2"]

#: Classes recognized by (module, qualified name), without importing their packages.
_CLASSES: dict[tuple[str, str], str] = {
    ("mcp.server.fastmcp.server", "FastMCP"): "sdk-high",
    ("mcp.server.mcpserver.server", "MCPServer"): "sdk-high",
    ("mcp.server.lowlevel.server", "Server"): "sdk-low",
    ("fastmcp.server.server", "FastMCP"): "fastmcp",
}


#: The oldest official SDK release jetmcp serves servers of (mcp 1.2 brought ``FastMCP`` and
#: ``mcp.server.lowlevel``; tests/compat/dropin/test_old_sdk.py serves files on 1.2.0 and 1.6.0).
MIN_MCP = (1, 2, 0)


def sdk_too_old() -> str | None:
    """What to say when the installed official SDK (``mcp``) is older than :data:`MIN_MCP`,
    None when it is recent enough or not installed (read from its metadata, not imported)."""
    from importlib import metadata

    try:
        version = metadata.version("mcp")
    except metadata.PackageNotFoundError:
        return None
    parts: list[int] = []
    for piece in version.split(".")[:3]:
        digits = "".join(c for c in piece if c.isdigit())
        parts.append(int(digits) if digits else 0)
    if tuple(parts) >= MIN_MCP:
        return None
    floor = ".".join(str(p) for p in MIN_MCP)
    return (
        f"mcp {version} is older than the oldest SDK jetmcp serves ({floor}): "
        f"pip install 'mcp>={floor}'"
    )


def kind_of(obj: Any) -> Kind | None:
    """Which framework ``obj`` is a server of, or None when it is no server at all.

    ``mcp1``/``mcp2`` cover the SDK's high-level and low-level servers of that major;
    ``fastmcp1``/``fastmcp2`` are fastmcp servers built on mcp 1.x or 2.x."""
    from jetmcp.server.app import Server

    if isinstance(obj, Server):
        return "jetmcp"
    if isinstance(obj, type):
        return None
    for cls in type(obj).__mro__:
        family = _CLASSES.get((cls.__module__, cls.__qualname__))
        if family is None:
            continue
        low = obj if family == "sdk-low" else _lowlevel(obj)
        if low is None:
            return None
        era = "2" if hasattr(low, "_request_handlers") else "1"
        if family == "fastmcp":
            return "fastmcp2" if era == "2" else "fastmcp1"
        return "mcp2" if era == "2" else "mcp1"
    return None


def _lowlevel(obj: Any) -> Any:
    for name in ("_lowlevel_server", "_mcp_server"):
        low = getattr(obj, name, None)
        if low is not None:
            return low
    return None


def _auth_of(obj: Any) -> tuple[Any, Any] | None:
    """The official SDK server's ``(auth settings, token verifier)`` when it is set up as a
    resource server, None when it has no auth; LoadError for auth jetmcp cannot honour: an
    authorization server of its own (``auth_server_provider=``), or fastmcp's providers."""
    settings = getattr(obj, "settings", None)
    sdk_auth = getattr(settings, "auth", None)
    verifier = getattr(obj, "_token_verifier", None)
    if getattr(obj, "_auth_server_provider", None) is not None:
        raise LoadError(
            "this server is its own OAuth authorization server (auth_server_provider=), which "
            "jetmcp does not serve; run the authorization server apart and give jetmcp its "
            "issuer (--auth-issuer), or serve this server with its own SDK"
        )
    if getattr(obj, "auth", None) is not None and sdk_auth is None:
        raise LoadError(
            "fastmcp auth providers (auth=) are fastmcp's own; serve this server with fastmcp, "
            "or drop auth= and give jetmcp the --auth-* flags"
        )
    if sdk_auth is None and verifier is None:
        return None
    return sdk_auth, verifier


def adapt(obj: Any, transport: str | None = None) -> Server:
    """A :class:`jetmcp.Server` that serves ``obj`` (``obj`` itself when it is one).

    ``transport`` (``"stdio"`` or ``"http"``) is what it will be served over, for the
    frameworks whose handshake differs by transport (fastmcp 2.x announces only tool list
    changes on stdio)."""
    from jetmcp.server.app import Server

    if isinstance(obj, Server):
        return obj
    kind = kind_of(obj)
    if kind is None:
        raise LoadError(f"{type(obj).__module__}.{type(obj).__qualname__} is not an MCP server")
    # Serving it without its authentication would open it to anyone: what cannot be
    # honoured is refused (LoadError), the rest carried over.
    auth = _auth_of(obj)
    server: Server
    if kind in ("mcp2", "fastmcp2"):
        from jetmcp.compat.sdk2 import adapt_v2

        server = adapt_v2(obj)
    else:
        from jetmcp.compat.sdk1 import adapt_v1

        server = adapt_v1(obj, transport)
    if auth is not None:
        server.auth, server.token_verifier = auth
    server.custom_routes = custom_routes_of(obj)
    return server


def custom_routes_of(obj: Any) -> list[Any]:
    """The Starlette routes ``obj`` added with ``custom_route`` (fastmcp: those of the
    servers mounted in it too, as its own HTTP app gathers them)."""
    gather = getattr(obj, "_get_additional_http_routes", None)
    if callable(gather):
        return list(gather())
    for name in ("_custom_starlette_routes", "_additional_http_routes"):
        routes = getattr(obj, name, None)
        if isinstance(routes, list):
            return list(routes)
    return []


__all__ = ["MIN_MCP", "Kind", "adapt", "custom_routes_of", "kind_of", "sdk_too_old"]
