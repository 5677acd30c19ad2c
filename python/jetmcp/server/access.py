"""Who may see and use a tool, resource, template or prompt.

A component declares the OAuth scopes it needs (``@app.tool(scopes=[...])``); the server
may add a hook (``Server(authorize=fn)``, ``fn(principal, component) -> bool``). A component
a principal may not use is left out of every listing and answered like one that does not
exist (same code, same message), so a client learns nothing of what it cannot reach. A
component with scopes is served to nobody without a principal (auth off, or stdio): it
fails closed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from jetmcp.core.principal import Principal

#: ``authorize(principal, component) -> bool`` (principal None when auth is off).
Authorize = Callable[[Principal | None, Any], bool]


def check_scopes(scopes: Iterable[str] | None) -> frozenset[str]:
    """The scopes a component needs, checked: strings without spaces (RFC 6749 scope
    tokens)."""
    if scopes is None:
        return frozenset()
    if isinstance(scopes, str):
        raise TypeError("scopes must be a list of strings, not one string")
    out = frozenset(scopes)
    for scope in out:
        if not isinstance(scope, str) or not scope or any(c.isspace() for c in scope):
            raise ValueError(f"a scope must be a non-empty string without spaces, not {scope!r}")
    return out


def allowed(component: Any, principal: Principal | None, authorize: Authorize | None) -> bool:
    """Whether ``principal`` may see and use ``component``."""
    needed: frozenset[str] = component.scopes
    if needed and (principal is None or not principal.scopes >= needed):
        return False
    return authorize is None or bool(authorize(principal, component))


__all__ = ["Authorize", "allowed", "check_scopes"]
